package command

import (
	"fmt"
	"strings"
)

// JobPeriodicCommand is `nomad job periodic`, the parent of `force`.
type JobPeriodicCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobPeriodicCommand) Synopsis() string { return "Interact with periodic jobs" }

// Help implements cli.Command.
func (c *JobPeriodicCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job periodic <subcommand> [options] [args]

  Act on periodic jobs: jobs with a periodic block, which the servers
  launch as child jobs at each instant of their cron expressions.

  Launch a periodic job now, whatever its schedule:

      $ nomad job periodic force <job>

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *JobPeriodicCommand) Run(args []string) int { return c.runParent("job periodic", args) }

// JobPeriodicForceCommand is `nomad job periodic force`.
type JobPeriodicForceCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobPeriodicForceCommand) Synopsis() string { return "Force the launch of a periodic job" }

// Help implements cli.Command.
func (c *JobPeriodicForceCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job periodic force [options] <job>

  Launch a child of a periodic job now, even if prohibit_overlap would
  hold back a scheduled launch, and follow the child's evaluation. <job>
  is a job ID or a unique prefix of one. The schedule is unchanged.

` + generalOptions() + `

Periodic Force Options:

  -detach
    Print the evaluation ID and exit without following it.

  -verbose
    Show full IDs.
`)
}

// Run implements cli.Command.
func (c *JobPeriodicForceCommand) Run(args []string) int {
	var detach, verbose bool
	flags := c.FlagSet("job periodic force")
	flags.BoolVar(&detach, "detach", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <job>", "job periodic force")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	client, stub, ok := c.resolveJob(client, flags.Arg(0))
	if !ok {
		return exitError
	}
	jobID := stub.ID
	evalID, _, err := client.Jobs().PeriodicForce(jobID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error forcing periodic job %q: %v", jobID, err))
		return exitError
	}
	if detach {
		c.Ui.Output("Force periodic successful")
		c.Ui.Output("Evaluation ID: " + evalID)
		return exitOK
	}
	return newEvalMonitor(c.Ui, client, view{verbose: verbose}).monitor(evalID)
}
