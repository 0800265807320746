package command

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// JobRunCommand is `nomad job run`.
type JobRunCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobRunCommand) Synopsis() string { return "Run a new job or update an existing job" }

// Help implements cli.Command.
func (c *JobRunCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job run [options] <path>

  Parse the job file at <path> ("-" reads standard input), submit it, and
  follow the evaluation the servers create for it until it finishes,
  reporting the allocations it places; then, for a service job whose groups
  have an update block, follow its deployment until it succeeds or fails
  (a table per group, redrawn in place on a terminal, printed as plain
  lines otherwise).

  Exit codes: 0 when everything was placed (and the deployment, if any,
  succeeded), 2 when the job was accepted but some allocations could not be
  placed (the reasons are printed; the servers keep trying as capacity
  appears), 1 on any other error, a failed or cancelled deployment
  included.

` + generalOptions() + `

Run Options:

  -check-index <N>
    Submit the job only if its job modify index on the servers is N (0
    for a job not registered yet), as printed by 'nomad job plan': a job
    changed by someone else since the plan is refused.

  -detach
    Print the evaluation ID and exit without following it or the
    deployment.

  -preserve-counts
    Keep the count of every group the job already has on the servers
    (one scaled by 'nomad job scale' or an autoscaler stays as it is);
    groups new to the job take the count in the file.

  -output
    Print the job as the JSON body of a register request ({"Job": ...})
    and exit without submitting it, for curl or the HTTP API.

  -verbose
    Show full IDs.

  -eval-priority=<1-100>
    The priority of the evaluation the run creates, instead of the job's
    own priority: an urgent change is scheduled ahead of others.

` + jobFileOptions() + `
`)
}

// Run implements cli.Command.
func (c *JobRunCommand) Run(args []string) int {
	var detach, verbose, output, preserveCounts bool
	var checkIndex string
	var evalPriority int
	flags := c.FlagSet("job run")
	flags.BoolVar(&output, "output", false, "")
	flags.BoolVar(&preserveCounts, "preserve-counts", false, "")
	flags.IntVar(&evalPriority, "eval-priority", 0, "")
	flags.BoolVar(&detach, "detach", false, "")
	flags.StringVar(&checkIndex, "check-index", "", "")
	flags.BoolVar(&verbose, "verbose", false, "")
	var files jobFileFlags
	files.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <path>", "job run")
	}
	job, err := files.read(flags.Arg(0))
	if err != nil {
		c.Ui.Error("Error " + err.Error())
		return exitError
	}
	if output {
		return c.outputJSON(struct{ Job *api.Job }{job})
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	opts, err := checkIndexOpts(checkIndex)
	if err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	if opts == nil {
		opts = &api.RegisterOptions{}
	}
	opts.EvalPriority = evalPriority
	opts.PreserveCounts = preserveCounts
	resp, _, err := client.Jobs().RegisterOpts(job, opts, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error submitting job: %v", err))
		return exitError
	}
	if resp.Warnings != "" {
		c.Ui.Warn(fmt.Sprintf("Job Warnings:\n%s\n", resp.Warnings))
	}
	if resp.EvalID == "" {
		// A periodic or parameterized job: nothing runs until a launch.
		c.Ui.Output("Job registration successful")
		if job.Periodic != nil && job.ParameterizedJob == nil {
			now := time.Now()
			if next, err := job.Periodic.Next(now); err == nil && !next.IsZero() {
				c.Ui.Output(fmt.Sprintf("Approximate next launch time: %s (%s)", formatTime(next), prettyTimeDiff(next, now)))
			}
		}
		return exitOK
	}
	if detach {
		c.Ui.Output("Job registration successful")
		c.Ui.Output("Evaluation ID: " + resp.EvalID)
		return exitOK
	}
	v := view{verbose: verbose}
	if code := newEvalMonitor(c.Ui, client, v).monitor(resp.EvalID); code != exitOK {
		return code
	}
	return newDeploymentMonitor(c.Ui, client, v).followJob(*job.ID, resp.JobModifyIndex)
}

// checkIndexOpts turns -check-index into register options; an empty flag
// enforces nothing.
func checkIndexOpts(flag string) (*api.RegisterOptions, error) {
	if flag == "" {
		return nil, nil
	}
	index, err := strconv.ParseUint(flag, 10, 64)
	if err != nil {
		return nil, userErrorf("Error parsing check-index value %q: must be a non-negative integer", flag)
	}
	return &api.RegisterOptions{EnforceIndex: true, ModifyIndex: index}, nil
}
