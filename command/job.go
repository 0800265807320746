package command

import (
	"strings"
)

// JobCommand is `nomad job`, the parent of the job subcommands.
type JobCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobCommand) Synopsis() string { return "Interact with jobs" }

// Help implements cli.Command.
func (c *JobCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job <subcommand> [options] [args]

  Submit, inspect and stop jobs. A job declares what to run (task groups
  of tasks) and where it may run; the servers place it on client nodes.

  Run a job file:

      $ nomad job run example.nomad.hcl

  Show its status:

      $ nomad job status example

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *JobCommand) Run(args []string) int { return c.runParent("job", args) }
