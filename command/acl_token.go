package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// ACLTokenCreateCommand is `nomad acl token create`.
type ACLTokenCreateCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLTokenCreateCommand) Synopsis() string { return "Create a new ACL token" }

// Help implements cli.Command.
func (c *ACLTokenCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl token create [options]

  Make a token and print it with its secret ID. Needs a management token.

Create Options:

  -name=<name>
    A name for the token.

  -type=<client|management>
    A client token may do what its policies allow; a management token
    anything. Default: client.

  -policy=<name>
    A policy the token holds; repeat for more. A client token needs one.

  -global
    Accepted for upstream's scripts; there is one region.

  -ttl=<duration>
    The token stops working this long after it is made (1m to 24h, as
    upstream's defaults); by default it never expires.

` + generalOptions())
}

// Run implements cli.Command.
func (c *ACLTokenCreateCommand) Run(args []string) int {
	flags := c.FlagSet("acl token create")
	var name, typ string
	var global bool
	var ttl time.Duration
	var policies stringSlice
	flags.DurationVar(&ttl, "ttl", 0, "")
	flags.StringVar(&name, "name", "", "")
	flags.StringVar(&typ, "type", "client", "")
	flags.BoolVar(&global, "global", false, "")
	flags.Var(&policies, "policy", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("acl token create", flags.NArg(), 0)
	if !ok {
		return code
	}
	tok, _, err := client.ACLTokens().Create(&api.ACLToken{Name: name, Type: typ, Policies: policies, Global: global, ExpirationTTL: ttl}, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating token: %v", err))
		return exitError
	}
	c.Ui.Output(formatToken(tok))
	return 0
}

// ACLTokenListCommand is `nomad acl token list`.
type ACLTokenListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLTokenListCommand) Synopsis() string { return "List ACL tokens" }

// Help implements cli.Command.
func (c *ACLTokenListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl token list [options]

  List tokens, without their secrets. Needs a management token.

` + generalOptions() + "\n\nOutput Options:\n" + outputFlagsHelp)
}

// Run implements cli.Command.
func (c *ACLTokenListCommand) Run(args []string) int {
	var out outputFlags
	client, code, ok := c.setupRead("acl token list", args, 0, c, &out)
	if !ok {
		return code
	}
	tokens, _, err := client.ACLTokens().List(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing tokens: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, tokens)
	}
	if len(tokens) == 0 {
		c.Ui.Output("No tokens found")
		return 0
	}
	lines := []string{"Name|Type|Global|Accessor ID"}
	for _, t := range tokens {
		lines = append(lines, fmt.Sprintf("%s|%s|%t|%s", t.Name, t.Type, t.Global, t.AccessorID))
	}
	c.Ui.Output(formatList(lines))
	return 0
}

// ACLTokenInfoCommand is `nomad acl token info`.
type ACLTokenInfoCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLTokenInfoCommand) Synopsis() string { return "Fetch information on an existing ACL token" }

// Help implements cli.Command.
func (c *ACLTokenInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl token info [options] <accessor_id>

  Print a token. A management token reads any; another token only itself.

` + generalOptions() + "\n\nOutput Options:\n" + outputFlagsHelp)
}

// Run implements cli.Command.
func (c *ACLTokenInfoCommand) Run(args []string) int {
	flags := c.FlagSet("acl token info")
	var out outputFlags
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("acl token info", flags.NArg(), 1)
	if !ok {
		return code
	}
	tok, _, err := client.ACLTokens().Info(flags.Arg(0), nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error fetching token: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, tok)
	}
	c.Ui.Output(formatToken(tok))
	return 0
}

// ACLTokenSelfCommand is `nomad acl token self`.
type ACLTokenSelfCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLTokenSelfCommand) Synopsis() string { return "Lookup self ACL token" }

// Help implements cli.Command.
func (c *ACLTokenSelfCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl token self [options]

  Print the token given by -token or NOMAD_TOKEN.

` + generalOptions() + "\n\nOutput Options:\n" + outputFlagsHelp)
}

// Run implements cli.Command.
func (c *ACLTokenSelfCommand) Run(args []string) int {
	var out outputFlags
	client, code, ok := c.setupRead("acl token self", args, 0, c, &out)
	if !ok {
		return code
	}
	tok, _, err := client.ACLTokens().Self(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error fetching self token: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, tok)
	}
	c.Ui.Output(formatToken(tok))
	return 0
}

// ACLTokenDeleteCommand is `nomad acl token delete`.
type ACLTokenDeleteCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLTokenDeleteCommand) Synopsis() string { return "Delete an existing ACL token" }

// Help implements cli.Command.
func (c *ACLTokenDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl token delete [options] <accessor_id>

  Delete a token; its secret stops working at once. Needs a management
  token.

` + generalOptions())
}

// Run implements cli.Command.
func (c *ACLTokenDeleteCommand) Run(args []string) int {
	flags := c.FlagSet("acl token delete")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("acl token delete", flags.NArg(), 1)
	if !ok {
		return code
	}
	if _, err := client.ACLTokens().Delete(flags.Arg(0), nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting token: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Token %s successfully deleted", flags.Arg(0)))
	return 0
}
