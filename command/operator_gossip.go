package command

import (
	"crypto/rand"
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"strings"
)

// OperatorGossipCommand is `nomad operator gossip`.
type OperatorGossipCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorGossipCommand) Synopsis() string { return "Provides access to the Gossip subsystem" }

// Help implements cli.Command.
func (c *OperatorGossipCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator gossip <subcommand> [options]

  Tools for the servers' gossip encryption (server.encrypt).

      $ nomad operator gossip keyring generate
`)
}

// Run implements cli.Command.
func (c *OperatorGossipCommand) Run(args []string) int { return c.runParent("operator gossip", args) }

// OperatorGossipKeyringCommand is `nomad operator gossip keyring`.
type OperatorGossipKeyringCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorGossipKeyringCommand) Synopsis() string {
	return "Manages gossip layer encryption keys"
}

// Help implements cli.Command.
func (c *OperatorGossipKeyringCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator gossip keyring <subcommand> [options]

  Gossip encryption keys. This version has one key per cluster, set with
  server.encrypt or -encrypt on every server; generate makes one.

      $ nomad operator gossip keyring generate
`)
}

// Run implements cli.Command.
func (c *OperatorGossipKeyringCommand) Run(args []string) int {
	return c.runParent("operator gossip keyring", args)
}

// OperatorGossipKeyringGenerateCommand is `nomad operator gossip keyring
// generate`.
type OperatorGossipKeyringGenerateCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorGossipKeyringGenerateCommand) Synopsis() string {
	return "Generates a new encryption key"
}

// Help implements cli.Command.
func (c *OperatorGossipKeyringGenerateCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator gossip keyring generate

  Print a new random 32-byte gossip key, base64 encoded, for server.encrypt
  (or -encrypt). Every server of the cluster needs the same key.
`)
}

// Run implements cli.Command.
func (c *OperatorGossipKeyringGenerateCommand) Run(args []string) int {
	f := flag.NewFlagSet("operator gossip keyring generate", flag.ContinueOnError)
	f.SetOutput(io.Discard)
	if !c.parseFlags(f, args, c) {
		return exitError
	}
	if f.NArg() > 0 {
		return c.argsError("This command takes no arguments", "operator gossip keyring generate")
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading random data: %v", err))
		return exitError
	}
	c.Ui.Output(base64.StdEncoding.EncodeToString(key))
	return exitOK
}
