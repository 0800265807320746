package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// OperatorTLSCACommand is `nomad operator tls ca`.
type OperatorTLSCACommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorTLSCACommand) Synopsis() string {
	return "Manages the cluster CA of automatic mutual TLS"
}

// Help implements cli.Command.
func (c *OperatorTLSCACommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator tls ca <subcommand> [options]

  With tls.auto = true the servers hold a cluster CA in raft (its key
  encrypted with the keyring's root key) and issue every agent its RPC
  certificate from it.

  List the CAs (the active one first, then retired ones still trusted):

      $ nomad operator tls ca list

  Make a new active CA; the old one stays trusted until the certificates
  it signed have expired, and agents renew onto the new one:

      $ nomad operator tls ca rotate

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *OperatorTLSCACommand) Run(args []string) int { return c.runParent("operator tls ca", args) }

// formatTLSCAs is the table of CAs.
func formatTLSCAs(cas []*api.TLSCA, verbose bool) string {
	n := shortIDLength
	if verbose {
		n = fullIDLength
	}
	lines := []string{"ID|State|Fingerprint (SHA-256)|Expires|Trusted Until"}
	for _, ca := range cas {
		state, until := "active", "-"
		if !ca.Active {
			state, until = "retired", ca.RetireAfter.UTC().Format(time.RFC3339)
		}
		fp := ca.Fingerprint
		if !verbose && len(fp) > 16 {
			fp = fp[:16]
		}
		lines = append(lines, fmt.Sprintf("%s|%s|%s|%s|%s", limit(ca.ID, n), state, fp, ca.NotAfter.UTC().Format(time.RFC3339), until))
	}
	return formatList(lines)
}

// OperatorTLSCAListCommand is `nomad operator tls ca list`.
type OperatorTLSCAListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorTLSCAListCommand) Synopsis() string { return "Lists the cluster's TLS CAs" }

// Help implements cli.Command.
func (c *OperatorTLSCAListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator tls ca list [options]

  List the cluster CAs of tls.auto: their fingerprints (what
  "nomad node intro create" tokens pin), expiry, and until when a retired
  CA stays trusted. If ACLs are enabled, this needs operator read.

` + generalOptions() + `

List Options:

  -verbose
    Show full IDs and fingerprints.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *OperatorTLSCAListCommand) Run(args []string) int {
	flags := c.FlagSet("operator tls ca list")
	var out outputFlags
	out.register(flags)
	var verbose bool
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("operator tls ca list", flags.NArg(), 0)
	if !ok {
		return code
	}
	cas, _, err := client.Operator().TLSCAs(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("error: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, cas)
	}
	if len(cas) == 0 {
		c.Ui.Output("No TLS CAs (the servers do not run tls.auto)")
		return exitOK
	}
	c.Ui.Output(formatTLSCAs(cas, verbose))
	return exitOK
}

// OperatorTLSCARotateCommand is `nomad operator tls ca rotate`.
type OperatorTLSCARotateCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorTLSCARotateCommand) Synopsis() string { return "Rotates the cluster's TLS CA" }

// Help implements cli.Command.
func (c *OperatorTLSCARotateCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator tls ca rotate [options]

  Make a new active cluster CA. It signs every certificate from now on;
  the previous one stays trusted for one certificate lifetime
  (tls.auto_cert_ttl), by which time every agent has renewed. Retired CAs
  past that are forgotten. If ACLs are enabled, this needs operator write.

` + generalOptions() + `

Rotate Options:

  -verbose
    Show the full ID and fingerprint.
`)
}

// Run implements cli.Command.
func (c *OperatorTLSCARotateCommand) Run(args []string) int {
	flags := c.FlagSet("operator tls ca rotate")
	var verbose bool
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("operator tls ca rotate", flags.NArg(), 0)
	if !ok {
		return code
	}
	ca, _, err := client.Operator().TLSCARotate(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("error: %v", err))
		return exitError
	}
	c.Ui.Output(formatTLSCAs([]*api.TLSCA{ca}, verbose))
	return exitOK
}

// OperatorTLSCommand is `nomad operator tls`.
type OperatorTLSCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorTLSCommand) Synopsis() string { return "Manages automatic mutual TLS" }

// Help implements cli.Command.
func (c *OperatorTLSCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator tls <subcommand> [options]

  Manage the cluster CA of automatic mutual TLS (tls.auto):

      $ nomad operator tls ca list
      $ nomad operator tls ca rotate

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *OperatorTLSCommand) Run(args []string) int { return c.runParent("operator tls", args) }
