package command

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// JobStatusCommand is `nomad job status`.
type JobStatusCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobStatusCommand) Synopsis() string { return "Display status information about a job" }

// Help implements cli.Command.
func (c *JobStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job status [options] [job]

  Without an argument, list every job. With a job ID (or a unique prefix of
  one), show the job, the allocation counts of each task group (Unknown
  counts allocations on disconnected nodes, which may still be running),
  why placements failed if they did, and the job's allocations.

` + generalOptions() + `

Status Options:

  -all-allocs
    Show the allocations of earlier instances of the job too: those of a
    job that was stopped, purged and registered again under its ID.

  -evals
    Show the job's evaluations.

  -short
    Show only the job's basic information.

  -verbose
    Show full IDs and absolute times.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *JobStatusCommand) Run(args []string) int {
	var short bool
	var d jobDetails
	var out outputFlags
	flags := c.FlagSet("job status")
	out.register(flags)
	flags.BoolVar(&short, "short", false, "")
	flags.BoolVar(&d.verbose, "verbose", false, "")
	flags.BoolVar(&d.allAllocs, "all-allocs", false, "")
	flags.BoolVar(&d.evals, "evals", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() > 1 {
		return c.argsError("This command takes either no arguments or one: <job>", "job status")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	if flags.NArg() == 0 {
		return c.list(client, out)
	}

	client, stub, ok := c.resolveJob(client, flags.Arg(0))
	if !ok {
		return exitError
	}
	job, _, err := client.Jobs().Info(stub.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying job: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, job)
	}
	c.Ui.Output(formatKV(append(jobHeader(job), parentHeader(job, time.Now())...)))
	if short {
		return exitOK
	}
	if job.IsPeriodic() || job.IsParameterized() {
		return c.parentDetails(client, job)
	}
	return c.details(client, job, d)
}

func (c *JobStatusCommand) list(client *api.Client, out outputFlags) int {
	jobs, _, err := client.Jobs().List(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying jobs: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, jobs)
	}
	if len(jobs) == 0 {
		c.Ui.Output("No running jobs")
		return exitOK
	}
	c.Ui.Output(formatJobList(jobs, c.allNamespaces()))
	return exitOK
}

// formatJobList renders the job table with upstream's columns, and the
// Namespace column after the ID when the list spans namespaces
// (-namespace=*), where an ID alone no longer names one job.
func formatJobList(jobs []*api.JobListStub, allNamespaces bool) string {
	lines := []string{"ID|Type|Priority|Status|Submit Date"}
	if allNamespaces {
		lines[0] = "ID|Namespace|Type|Priority|Status|Submit Date"
	}
	for _, j := range jobs {
		id := j.ID
		if allNamespaces {
			id += "|" + j.Namespace
		}
		lines = append(lines, fmt.Sprintf("%s|%s|%d|%s|%s",
			id, jobTypeString(j), j.Priority, jobStatus(j.Status, stopState(j.Stop)), formatUnixNanoTime(j.SubmitTime)))
	}
	return formatList(lines)
}

// jobTypeString marks templates in the list as upstream does:
// "batch/periodic", "batch/parameterized".
func jobTypeString(j *api.JobListStub) string {
	switch {
	case j.Periodic:
		return j.Type + "/periodic"
	case j.ParameterizedJob:
		return j.Type + "/parameterized"
	}
	return j.Type
}

// stopState says whether the user stopped a job.
type stopState bool

// jobStatus marks a stopped job, whose status alone ("dead" or, while its
// allocations stop, "running") does not say that the user stopped it.
func jobStatus(status string, stop stopState) string {
	if stop {
		return status + " (stopped)"
	}
	return status
}

func jobHeader(job *api.Job) []string {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	var priority int
	if job.Priority != nil {
		priority = *job.Priority
	}
	var submit string
	if job.SubmitTime != nil {
		submit = formatUnixNanoTime(*job.SubmitTime)
	}
	stop := stopState(job.Stop != nil && *job.Stop)
	return []string{
		"ID|" + str(job.ID),
		"Name|" + str(job.Name),
		"Submit Date|" + submit,
		"Type|" + str(job.Type),
		fmt.Sprintf("Priority|%d", priority),
		"Datacenters|" + strings.Join(job.Datacenters, ","),
		"Namespace|" + str(job.Namespace),
		"Node Pool|" + str(job.NodePool),
		"Status|" + jobStatus(str(job.Status), stop),
	}
}

// jobDetails says what job status shows below the job's basics.
type jobDetails struct {
	verbose   bool
	allAllocs bool
	evals     bool
}

// details prints the summary, placement failures and allocations.
func (c *JobStatusCommand) details(client *api.Client, job *api.Job, d jobDetails) int {
	verbose := d.verbose
	id := *job.ID
	summary, _, err := client.Jobs().Summary(id, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying job summary: %v", err))
		return exitError
	}
	c.Ui.Output("\nSummary")
	c.Ui.Output(formatSummary(summary))

	evals, _, err := client.Jobs().Evaluations(id, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying job evaluations: %v", err))
		return exitError
	}
	if d.evals {
		c.Ui.Output("\nEvaluations")
		c.Ui.Output(formatEvalList(evals, view{verbose: verbose}))
	}
	if failed := latestPlacementFailure(evals); failed != nil {
		c.Ui.Output("\nPlacement Failure")
		c.Ui.Output(formatPlacementFailures(failed.FailedTGAllocs, "", "  "))
	}

	if dep, _, err := client.Jobs().LatestDeployment(id, nil); err == nil && dep != nil {
		c.Ui.Output("\nLatest Deployment")
		c.Ui.Output(formatLatestDeployment(dep, view{verbose: verbose}))
	}

	allocs, _, err := client.Jobs().Allocations(id, d.allAllocs, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying job allocations: %v", err))
		return exitError
	}
	rows := make([]allocRow, 0, len(allocs))
	for _, a := range allocs {
		rows = append(rows, rowFromStub(a))
	}
	c.Ui.Output("\nAllocations")
	c.Ui.Output(formatAllocRows(rows, view{verbose: verbose, now: time.Now()}))
	return exitOK
}

func formatSummary(s *api.JobSummary) string {
	lines := []string{"Task Group|Queued|Starting|Running|Failed|Complete|Lost|Unknown"}
	for _, g := range slices.Sorted(maps.Keys(s.Summary)) {
		t := s.Summary[g]
		lines = append(lines, fmt.Sprintf("%s|%d|%d|%d|%d|%d|%d|%d",
			g, t.Queued, t.Starting, t.Running, t.Failed, t.Complete, t.Lost, t.Unknown))
	}
	return formatList(lines)
}

// latestPlacementFailure returns the evaluation whose failed placements
// are still outstanding: the one that created the job's pending blocked
// evaluation or, when nothing waits, the newest evaluation if it failed to
// place. Older failures are history and are not shown. evals are newest
// first.
func latestPlacementFailure(evals []*api.Evaluation) *api.Evaluation {
	for _, blocked := range evals {
		if blocked.Status != api.EvalStatusBlocked {
			continue
		}
		for _, e := range evals {
			if e.BlockedEval == blocked.ID && len(e.FailedTGAllocs) > 0 {
				return e
			}
		}
	}
	for _, e := range evals {
		if e.Status == api.EvalStatusBlocked {
			continue
		}
		if len(e.FailedTGAllocs) > 0 {
			return e
		}
		return nil
	}
	return nil
}
