package command

import (
	"fmt"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// JobStopCommand is `nomad job stop`.
type JobStopCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobStopCommand) Synopsis() string { return "Stop a running job" }

// Help implements cli.Command.
func (c *JobStopCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job stop [options] <job>

  Stop a job: the servers stop all of its allocations. The job stays
  registered, marked stopped, until it is garbage collected (once dead for
  server.job_gc_threshold, or by 'nomad system gc') or at once with -purge.
  <job> is a job ID or a unique prefix of one; stopping a job named by a
  prefix asks for confirmation unless -yes is given.

  The stop is scheduled by an evaluation, which is followed until it
  finishes, as with 'nomad job run'.

` + generalOptions() + `

Stop Options:

  -detach
    Print the evaluation ID and exit without following it.

  -purge
    Remove the job from the servers at once instead of leaving it stopped.

  -no-shutdown-delay
    Ask the clients to skip the groups' and tasks' shutdown_delay and send
    the kill signal at once. Run again on a job stopped already, it cuts
    short the delays its clients are still waiting out.

  -yes
    Do not ask for confirmation.

  -verbose
    Show full IDs.

  -eval-priority=<1-100>
    The priority of the evaluation the stop creates, instead of the
    job's own priority.
`)
}

// Run implements cli.Command.
func (c *JobStopCommand) Run(args []string) int {
	var detach, purge, yes, verbose, noDelay bool
	var evalPriority int
	flags := c.FlagSet("job stop")
	flags.IntVar(&evalPriority, "eval-priority", 0, "")
	flags.BoolVar(&detach, "detach", false, "")
	flags.BoolVar(&purge, "purge", false, "")
	flags.BoolVar(&noDelay, "no-shutdown-delay", false, "")
	flags.BoolVar(&yes, "yes", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, jobID, code := c.jobArg(flags.Args(), "job stop")
	if jobID == "" {
		return code
	}
	if jobID != flags.Arg(0) && !yes && !c.confirm(jobID) {
		c.Ui.Output("Cancelling job stop")
		return exitOK
	}

	evalID, _, err := client.Jobs().DeregisterOpts(jobID, &api.DeregisterOptions{Purge: purge, EvalPriority: evalPriority, NoShutdownDelay: noDelay}, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error deregistering job: %v", err))
		return exitError
	}
	if evalID == "" {
		return exitOK
	}
	if detach {
		c.Ui.Output(evalID)
		return exitOK
	}
	return newEvalMonitor(c.Ui, client, view{verbose: verbose}).monitor(evalID)
}

// confirm asks before stopping a job that was named by a prefix only.
func (c *JobStopCommand) confirm(jobID string) bool {
	answer, err := c.Ui.Ask(fmt.Sprintf("Are you sure you want to stop job %q? [y/N]", jobID))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to read confirmation: %v", err))
		return false
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}
