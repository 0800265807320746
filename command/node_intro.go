package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// NodeIntroCommand is `nomad node intro`, the parent of create.
type NodeIntroCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodeIntroCommand) Synopsis() string { return "Manage node introduction tokens" }

// Help implements cli.Command.
func (c *NodeIntroCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node intro <subcommand> [options]

  Manage the tokens a new client node presents at its first registration.
  Servers with server.client_introduction.enforcement = "strict" refuse a
  new node without one; with "warn" (the default) they register it and log
  a warning.

      $ nomad node intro create -node-name=edge-17 -node-pool=edge -ttl=15m
`)
}

// Run implements cli.Command.
func (c *NodeIntroCommand) Run(args []string) int { return c.runParent("node intro", args) }

// NodeIntroCreateCommand is `nomad node intro create`.
type NodeIntroCreateCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodeIntroCreateCommand) Synopsis() string { return "Generate a new node introduction token" }

// Help implements cli.Command.
func (c *NodeIntroCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node intro create [options]

  Generate a client introduction token, signed by the servers' keyring. A
  new client presents it once, at its first registration
  (-client-intro-token, NOMAD_CLIENT_INTRO_TOKEN, or the file
  <data_dir>/client/intro_token.jwt), and proves itself with its own node
  secret from then on. Scope it to one node name where you can. Needs a
  token with node:write when ACLs are enabled.

Options:

  -node-name
    The only node name the token introduces. Empty: any name.

  -node-pool
    The node pool the node must join. Defaults to "default".

  -ttl
    How long the token is valid (e.g. 15m). Defaults to the servers'
    client_introduction.default_identity_ttl (5m); at most
    max_identity_ttl (30m).

  -json
    Output the response as JSON.
`)
}

// Run implements cli.Command.
func (c *NodeIntroCreateCommand) Run(args []string) int {
	var name, pool string
	var ttl time.Duration
	var asJSON bool
	flags := c.FlagSet("node intro create")
	flags.StringVar(&name, "node-name", "", "")
	flags.StringVar(&pool, "node-pool", "", "")
	flags.DurationVar(&ttl, "ttl", 0, "")
	flags.BoolVar(&asJSON, "json", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 0 {
		return c.argsError("This command takes no arguments", "node intro create")
	}
	if ttl < 0 {
		return c.argsError(fmt.Sprintf("-ttl %s must be positive", ttl), "node intro create")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	req := &api.ACLIdentityClientIntroductionTokenRequest{NodeName: name, NodePool: pool}
	if ttl > 0 {
		req.TTL = ttl.String()
	}
	resp, _, err := client.ACLIdentity().CreateClientIntroductionToken(req, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error generating client introduction token: %v", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(resp)
	}
	c.Ui.Output("Successfully generated client introduction token:\n\n" + resp.JWT)
	return exitOK
}
