package command

import (
	"fmt"
	"strings"
)

// SystemCommand is `nomad system`, the parent of cluster maintenance
// subcommands.
type SystemCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *SystemCommand) Synopsis() string { return "Interact with the system API" }

// Help implements cli.Command.
func (c *SystemCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad system <subcommand> [options]

  Cluster maintenance tasks.

  Run a garbage collection now:

      $ nomad system gc

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *SystemCommand) Run(args []string) int { return c.runParent("system", args) }

// SystemGCCommand is `nomad system gc`.
type SystemGCCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *SystemGCCommand) Synopsis() string { return "Run the system garbage collection process" }

// Help implements cli.Command.
func (c *SystemGCCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad system gc [options]

  Collect now, whatever their age, what the servers otherwise collect once
  past server.eval_gc_threshold, job_gc_threshold and node_gc_threshold:
  terminal evaluations and their finished allocations, dead jobs with
  everything of them, and down nodes. An unknown allocation is never
  collected, nor its evaluation, job or node. The command returns when the
  collection is done and prints nothing.

` + generalOptions())
}

// Run implements cli.Command.
func (c *SystemGCCommand) Run(args []string) int {
	flags := c.FlagSet("system gc")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 0 {
		return c.argsError("This command takes no arguments", "system gc")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	if err := client.System().GarbageCollect(); err != nil {
		c.Ui.Error(fmt.Sprintf("Error running system garbage-collection: %v", err))
		return exitError
	}
	return 0
}
