package command

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// ACLCommand is `nomad acl`, the parent of the ACL subcommands.
type ACLCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLCommand) Synopsis() string { return "Interact with ACL policies and tokens" }

// Help implements cli.Command.
func (c *ACLCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl <subcommand> [options]

  Manage the access control system: bootstrap it, write policies and make
  tokens that hold them. The agents need acl { enabled = true }.

  Make the first management token (once per cluster):

      $ nomad acl bootstrap

  Write a policy and a token holding it:

      $ nomad acl policy apply -description "read jobs" readonly readonly.hcl
      $ nomad acl token create -name ci -policy readonly

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *ACLCommand) Run(args []string) int { return c.runParent("acl", args) }

// ACLPolicyCommand is `nomad acl policy`.
type ACLPolicyCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLPolicyCommand) Synopsis() string { return "Interact with ACL policies" }

// Help implements cli.Command.
func (c *ACLPolicyCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl policy <subcommand> [options]

  Write, list, read and delete ACL policies: apply, list, info, delete.
`)
}

// Run implements cli.Command.
func (c *ACLPolicyCommand) Run(args []string) int { return c.runParent("acl policy", args) }

// ACLTokenCommand is `nomad acl token`.
type ACLTokenCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLTokenCommand) Synopsis() string { return "Interact with ACL tokens" }

// Help implements cli.Command.
func (c *ACLTokenCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl token <subcommand> [options]

  Make, list, read and delete ACL tokens: create, list, info, self, delete.
`)
}

// Run implements cli.Command.
func (c *ACLTokenCommand) Run(args []string) int { return c.runParent("acl token", args) }

// ACLBootstrapCommand is `nomad acl bootstrap`.
type ACLBootstrapCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLBootstrapCommand) Synopsis() string { return "Bootstrap the ACL system for initial token" }

// Help implements cli.Command.
func (c *ACLBootstrapCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl bootstrap [options] [<path>]

  Make the first management token and print it. It works once per
  cluster; keep the secret ID safe, as it may do anything. With <path>,
  the token's secret ID is the UUID in that file ("-" reads standard
  input), chosen by the operator, as upstream's.

` + generalOptions())
}

// Run implements cli.Command.
func (c *ACLBootstrapCommand) Run(args []string) int {
	flags := c.FlagSet("acl bootstrap")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() > 1 {
		return c.argsError("This command takes at most one argument: <path>", "acl bootstrap")
	}
	var secret string
	if path := flags.Arg(0); path != "" {
		var raw []byte
		var err error
		if path == "-" {
			raw, err = io.ReadAll(os.Stdin)
		} else {
			raw, err = os.ReadFile(path)
		}
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error reading the bootstrap secret: %v", err))
			return exitError
		}
		secret = strings.TrimSpace(string(raw))
	}
	client, code, ok := c.clientFor("acl bootstrap", 0, 0)
	if !ok {
		return code
	}
	tok, _, err := client.ACLTokens().BootstrapOpts(secret, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error bootstrapping: %v", err))
		return exitError
	}
	c.Ui.Output(formatToken(tok))
	return 0
}

func (m *Meta) clientFor(name string, got, want int) (*api.Client, int, bool) {
	if got != want {
		if want == 0 {
			return nil, m.argsError("This command takes no arguments", name), false
		}
		return nil, m.argsError(fmt.Sprintf("This command takes %d argument(s)", want), name), false
	}
	client, err := m.Client()
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return nil, exitError, false
	}
	return client, 0, true
}

// expiry is a token's expiration time as upstream's CLI shows it.
func expiry(at *time.Time) string {
	if at == nil {
		return "<never>"
	}
	return at.String()
}

// formatToken renders a token in upstream's layout.
func formatToken(t *api.ACLToken) string {
	policies := "n/a"
	if len(t.Policies) > 0 {
		policies = fmt.Sprint(t.Policies)
	}
	return formatKV([]string{
		"Accessor ID|" + t.AccessorID,
		"Secret ID|" + t.SecretID,
		"Name|" + t.Name,
		"Type|" + t.Type,
		fmt.Sprintf("Global|%t", t.Global),
		"Create Time|" + t.CreateTime.String(),
		"Expiry Time|" + expiry(t.ExpirationTime),
		fmt.Sprintf("Create Index|%d", t.CreateIndex),
		fmt.Sprintf("Modify Index|%d", t.ModifyIndex),
		"Policies|" + policies,
	})
}
