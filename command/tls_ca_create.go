package command

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/helper/tlsutil"
)

// Upstream's file names for the CA.
const (
	defaultCAFile    = "nomad-agent-ca.pem"
	defaultCAKeyFile = "nomad-agent-ca-key.pem"
)

// TLSCACreateCommand is `nomad tls ca create`.
type TLSCACreateCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *TLSCACreateCommand) Synopsis() string { return "Create a certificate authority for Nomad" }

// Help implements cli.Command.
func (c *TLSCACreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad tls ca create [options]

  Create a self-signed certificate authority in the working directory:
  nomad-agent-ca.pem (give it to every agent and CLI user as ca_file or
  -ca-cert) and nomad-agent-ca-key.pem (keep it secret: whoever holds it
  can make server certificates). Existing files are never overwritten.

Options:

  -common-name=<name>
    The CA's common name. Default: "Nomad Agent CA <serial>".

  -days=<days>
    How many days the CA is valid for. Default: 1825 (five years).
`)
}

// Run implements cli.Command.
func (c *TLSCACreateCommand) Run(args []string) int {
	f := flag.NewFlagSet("tls ca create", flag.ContinueOnError)
	f.SetOutput(io.Discard)
	var name string
	var days int
	f.StringVar(&name, "common-name", "", "")
	f.IntVar(&days, "days", 1825, "")
	if !c.parseFlags(f, args, c) {
		return exitError
	}
	if f.NArg() > 0 {
		return c.argsError("This command takes no arguments", "tls ca create")
	}
	if days <= 0 {
		c.Ui.Error("-days must be a positive number of days")
		return exitError
	}
	cert, key, err := tlsutil.GenerateCA(tlsutil.CAInput{CommonName: name, Validity: time.Duration(days) * 24 * time.Hour})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the CA: %v", err))
		return exitError
	}
	for _, p := range []string{defaultCAFile, defaultCAKeyFile} {
		if _, err := os.Stat(p); err == nil {
			c.Ui.Error(fmt.Sprintf("Error: %s already exists; move it away or remove it first", p))
			return exitError
		}
	}
	if err := writeNewFile(defaultCAFile, cert, 0o644); err != nil {
		c.Ui.Error(fmt.Sprintf("Error: %v", err))
		return exitError
	}
	c.Ui.Output("==> CA certificate saved to: " + defaultCAFile)
	if err := writeNewFile(defaultCAKeyFile, key, 0o600); err != nil {
		c.Ui.Error(fmt.Sprintf("Error: %v", err))
		return exitError
	}
	c.Ui.Output("==> CA certificate key saved to: " + defaultCAKeyFile)
	return exitOK
}
