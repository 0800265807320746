package command

import (
	"fmt"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// OperatorRootCommand is `nomad operator root`.
type OperatorRootCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorRootCommand) Synopsis() string { return "Provides access to root encryption keys" }

// Help implements cli.Command.
func (c *OperatorRootCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator root <subcommand> [options]

  Manage the root keys the servers encrypt variables with:

      $ nomad operator root keyring list
      $ nomad operator root keyring rotate
      $ nomad operator root keyring remove <key_id>

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *OperatorRootCommand) Run(args []string) int { return c.runParent("operator root", args) }

// OperatorRootKeyringCommand is `nomad operator root keyring`.
type OperatorRootKeyringCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorRootKeyringCommand) Synopsis() string { return "Manages root encryption keys" }

// Help implements cli.Command.
func (c *OperatorRootKeyringCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator root keyring <subcommand> [options]

  The servers encrypt variables with the active root key; older keys stay
  to decrypt what they encrypted. Keys live in each server's keystore
  (<data_dir>/server/keystore), and only their metadata in raft.

  List the keys:

      $ nomad operator root keyring list

  Make a new active key (with -full, re-encrypt every variable with it):

      $ nomad operator root keyring rotate

  Remove a key that is no longer active nor used by any variable:

      $ nomad operator root keyring remove <key_id>

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *OperatorRootKeyringCommand) Run(args []string) int {
	return c.runParent("operator root keyring", args)
}

// formatRootKeys is upstream's table of root keys.
func formatRootKeys(keys []*api.RootKeyMeta, verbose bool) string {
	n := shortIDLength
	if verbose {
		n = fullIDLength
	}
	lines := []string{"Key|State|Create Time"}
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("%s|%s|%s", limit(k.KeyID, n), k.State, formatUnixNanoTime(k.CreateTime)))
	}
	return formatList(lines)
}

// OperatorRootKeyringListCommand is `nomad operator root keyring list`.
type OperatorRootKeyringListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorRootKeyringListCommand) Synopsis() string { return "Lists the root encryption keys" }

// Help implements cli.Command.
func (c *OperatorRootKeyringListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator root keyring list [options]

  List the root keys and their state. If ACLs are enabled, this needs
  operator read.

` + generalOptions() + `

Keyring Options:

  -verbose
    Show full key IDs.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *OperatorRootKeyringListCommand) Run(args []string) int {
	flags := c.FlagSet("operator root keyring list")
	var out outputFlags
	out.register(flags)
	var verbose bool
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("operator root keyring list", flags.NArg(), 0)
	if !ok {
		return code
	}
	keys, _, err := client.Keyring().List(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("error: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, keys)
	}
	c.Ui.Output(formatRootKeys(keys, verbose))
	return exitOK
}

// OperatorRootKeyringRotateCommand is `nomad operator root keyring rotate`.
type OperatorRootKeyringRotateCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorRootKeyringRotateCommand) Synopsis() string {
	return "Rotates the root encryption key"
}

// Help implements cli.Command.
func (c *OperatorRootKeyringRotateCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator root keyring rotate [options]

  Make a new root key the active one. New writes are encrypted with it;
  the previous keys stay to decrypt what they encrypted. If ACLs are
  enabled, this needs operator write.

` + generalOptions() + `

Keyring Options:

  -full
    Also re-encrypt every variable with the new key. The command returns
    at once; the leader re-encrypts in the background, the old keys being
    "rekeying" until it is done and "deprecated" after.

  -verbose
    Show the full key ID.
`)
}

// Run implements cli.Command.
func (c *OperatorRootKeyringRotateCommand) Run(args []string) int {
	flags := c.FlagSet("operator root keyring rotate")
	var full, verbose bool
	flags.BoolVar(&full, "full", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("operator root keyring rotate", flags.NArg(), 0)
	if !ok {
		return code
	}
	key, _, err := client.Keyring().Rotate(&api.KeyringRotateOptions{Full: full}, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("error: %v", err))
		return exitError
	}
	c.Ui.Output(formatRootKeys([]*api.RootKeyMeta{key}, verbose))
	return exitOK
}

// OperatorRootKeyringRemoveCommand is `nomad operator root keyring remove`.
type OperatorRootKeyringRemoveCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorRootKeyringRemoveCommand) Synopsis() string {
	return "Removes a root encryption key"
}

// Help implements cli.Command.
func (c *OperatorRootKeyringRemoveCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator root keyring remove [options] <key_id>

  Remove a root key: its metadata from raft, and its material from every
  server's keystore. The active key is refused (rotate first), and so is a
  key variables are still encrypted with (rotate -full re-encrypts them).
  If ACLs are enabled, this needs operator write.

` + generalOptions() + `
`)
}

// Run implements cli.Command.
func (c *OperatorRootKeyringRemoveCommand) Run(args []string) int {
	flags := c.FlagSet("operator root keyring remove")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("operator root keyring remove", flags.NArg(), 1)
	if !ok {
		return code
	}
	id := flags.Arg(0)
	if _, err := client.Keyring().Delete(id, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("error: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Removed encryption key %s", id))
	return exitOK
}
