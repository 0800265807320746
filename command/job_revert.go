package command

import (
	"fmt"
	"strconv"
	"strings"
)

// JobRevertCommand is `nomad job revert`.
type JobRevertCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobRevertCommand) Synopsis() string { return "Revert to a prior version of the job" }

// Help implements cli.Command.
func (c *JobRevertCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job revert [options] <job> <version>

  Register a prior version of a job again, as a new version, and follow
  the evaluation that schedules it. <job> is a job ID or a unique prefix of
  one; 'nomad job history' lists the versions.

` + generalOptions() + `

Revert Options:

  -detach
    Print the evaluation ID and exit without following it.

  -verbose
    Show full IDs.
`)
}

// Run implements cli.Command.
func (c *JobRevertCommand) Run(args []string) int {
	var detach, verbose bool
	var consulToken, vaultToken string
	flags := c.FlagSet("job revert")
	flags.BoolVar(&detach, "detach", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	// Upstream's token flags; nothing here talks to Consul or Vault.
	flags.StringVar(&consulToken, "consul-token", "", "")
	flags.StringVar(&vaultToken, "vault-token", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 2 {
		return c.argsError("This command takes two arguments: <job> <version>", "job revert")
	}
	version, err := strconv.ParseUint(flags.Arg(1), 10, 64)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error parsing version %q: must be a non-negative integer", flags.Arg(1)))
		return exitError
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	client, job, ok := c.resolveJob(client, flags.Arg(0))
	if !ok {
		return exitError
	}
	jobID := job.ID
	resp, _, err := client.Jobs().Revert(jobID, version, nil, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reverting job: %v", err))
		return exitError
	}
	if resp.EvalID == "" || detach {
		c.Ui.Output("Evaluation ID: " + resp.EvalID)
		return exitOK
	}
	return newEvalMonitor(c.Ui, client, view{verbose: verbose}).monitor(resp.EvalID)
}
