package command

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// TLSCommand is `nomad tls`, the parent of the commands that make a CA
// and certificates for mutual TLS between agents.
type TLSCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *TLSCommand) Synopsis() string {
	return "Generate self-signed TLS certificates for Nomad"
}

// Help implements cli.Command.
func (c *TLSCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad tls <subcommand> <subcommand> [options]

  Make a private CA and the certificates that servers, clients and CLI
  users present to each other when the agents run with a tls block.

  Create a CA, then a server certificate signed by it:

      $ nomad tls ca create
      $ nomad tls cert create -server

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *TLSCommand) Run(args []string) int { return c.runParent("tls", args) }

// TLSCACommand is `nomad tls ca`.
type TLSCACommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *TLSCACommand) Synopsis() string { return "Helpers for managing CAs" }

// Help implements cli.Command.
func (c *TLSCACommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad tls ca <subcommand> [options]

  Create the certificate authority that signs every agent's certificate.

      $ nomad tls ca create
`)
}

// Run implements cli.Command.
func (c *TLSCACommand) Run(args []string) int { return c.runParent("tls ca", args) }

// TLSCertCommand is `nomad tls cert`.
type TLSCertCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *TLSCertCommand) Synopsis() string { return "Helpers for managing certificates" }

// Help implements cli.Command.
func (c *TLSCertCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad tls cert <subcommand> [options]

  Create certificates signed by the CA of 'nomad tls ca create'.

      $ nomad tls cert create -server
      $ nomad tls cert create -client
      $ nomad tls cert create -cli
`)
}

// Run implements cli.Command.
func (c *TLSCertCommand) Run(args []string) int { return c.runParent("tls cert", args) }

// writeNewFile writes data to path, refusing to replace a file: a CA key
// overwritten by mistake orphans every certificate it signed.
func writeNewFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; move it away or remove it first", path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
