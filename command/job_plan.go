package command

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// JobPlanCommand is `nomad job plan`.
type JobPlanCommand struct {
	Meta
}

// Exit codes of `job plan`, upstream's: scripts branch on them.
const (
	planNoChanges = 0
	planChanges   = 1
	planError     = 255
)

// Synopsis implements cli.Command.
func (c *JobPlanCommand) Synopsis() string {
	return "Dry-run a job update to determine its effects"
}

// Help implements cli.Command.
func (c *JobPlanCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job plan [options] <path>

  Ask the servers what submitting the job file at <path> ("-" reads
  standard input) would do, without doing it: the scheduler runs in
  dry-run mode over the cluster's current state. The output shows the
  change from the registered job and what the scheduler would do to each
  group (create, destroy, in-place update, ignore...), or why it could not
  place everything.

  The job modify index it prints can be passed to 'nomad job run
  -check-index' so the job is only submitted if nobody changed it since.

  Exit codes: 0 when no allocations would be created or destroyed, 1 when
  some would, 255 on error.

` + generalOptions() + `

Plan Options:

  -diff
    Show the difference between the submitted and the registered job.
    Defaults to true.

  -policy-override
    Accepted for compatibility; there are no Sentinel policies.

  -verbose
    Show unchanged fields next to the changed ones.

` + jobFileOptions() + `
`)
}

// Run implements cli.Command.
func (c *JobPlanCommand) Run(args []string) int {
	var diff, verbose, policyOverride bool
	flags := c.FlagSet("job plan")
	flags.BoolVar(&diff, "diff", true, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	flags.BoolVar(&policyOverride, "policy-override", false, "")
	var files jobFileFlags
	files.register(flags)
	if !c.parseFlags(flags, args, c) {
		return planError
	}
	if flags.NArg() != 1 {
		c.argsError("This command takes one argument: <path>", "job plan")
		return planError
	}
	path := flags.Arg(0)
	job, err := files.read(path)
	if err != nil {
		c.Ui.Error("Error " + err.Error())
		return planError
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return planError
	}
	resp, _, err := client.Jobs().Plan(job, diff, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error during plan: %v", err))
		return planError
	}
	if diff && resp.Diff != nil {
		c.Ui.Output(formatJobDiff(resp.Diff, verbose) + "\n")
	}
	c.Ui.Output("Scheduler dry-run:")
	c.Ui.Output(formatDryRun(resp))
	if next := resp.NextPeriodicLaunch; !next.IsZero() {
		c.Ui.Output(fmt.Sprintf("- If submitted now, next periodic launch would be at %s (%s).",
			formatTime(next), prettyTimeDiff(next, time.Now())))
	}
	c.Ui.Output("")
	if s := formatPlanDisconnect(resp.DisconnectPolicies); s != "" {
		c.Ui.Output(s + "\n")
	}
	if resp.Warnings != "" {
		c.Ui.Warn(fmt.Sprintf("Job Warnings:\n%s\n", resp.Warnings))
	}
	if s := formatPlanPreemptions(resp); s != "" {
		c.Ui.Output(s)
	}
	c.Ui.Output(formatCheckIndex(resp.JobModifyIndex, path))
	return planExitCode(resp)
}

// preemptionsListed is how many evictions job plan lists one by one, as
// upstream; more are counted per job.
const preemptionsListed = 10

// formatPlanPreemptions lists the allocations the plan would evict, in
// upstream's layout: each with its job and group, or, past
// preemptionsListed, a count per job.
func formatPlanPreemptions(resp *api.JobPlanResponse) string {
	if resp.Annotations == nil || len(resp.Annotations.PreemptedAllocs) == 0 {
		return ""
	}
	stubs := resp.Annotations.PreemptedAllocs
	var rows []string
	if len(stubs) < preemptionsListed {
		rows = append(rows, "Alloc ID|Job ID|Task Group")
		for _, a := range stubs {
			rows = append(rows, fmt.Sprintf("%s|%s|%s", a.ID, a.JobID, a.TaskGroup))
		}
	} else {
		type jobKey struct{ ns, id, typ string }
		counts := map[jobKey]int{}
		var order []jobKey
		for _, a := range stubs {
			k := jobKey{a.Namespace, a.JobID, a.JobType}
			if counts[k] == 0 {
				order = append(order, k)
			}
			counts[k]++
		}
		rows = append(rows, "Job ID|Namespace|Job Type|Preemptions")
		for _, k := range order {
			rows = append(rows, fmt.Sprintf("%s|%s|%s|%d", k.id, k.ns, k.typ, counts[k]))
		}
	}
	return "Preemptions:\n\n" + formatList(rows)
}

// formatPlanDisconnect says which disconnect policy each group's
// allocations would run under and where it came from, so an operator sees
// a node pool's policy before the job runs.
func formatPlanDisconnect(policies map[string][]string) string {
	if len(policies) == 0 {
		return ""
	}
	lines := []string{"Disconnect policy:"}
	for _, g := range slices.Sorted(maps.Keys(policies)) {
		for _, p := range policies[g] {
			lines = append(lines, fmt.Sprintf("  group %q: %s", g, p))
		}
	}
	return strings.Join(lines, "\n")
}

// formatDryRun says whether everything would be placed, and why not.
func formatDryRun(resp *api.JobPlanResponse) string {
	if len(resp.FailedTGAllocs) == 0 {
		return "- All tasks successfully allocated."
	}
	return "- WARNING: Failed to place all allocations.\n" +
		formatPlacementFailures(resp.FailedTGAllocs, "  ", "    ")
}

func formatCheckIndex(index uint64, path string) string {
	return fmt.Sprintf(`Job Modify Index: %d
To submit the job with version verification run:

nomad job run -check-index %d %s

When running the job with the check-index flag, the job will only be run if the
job modify index given matches the server-side version. If the index has
changed, another user has modified the job and the plan's results are
potentially invalid.`, index, index, path)
}

// planExitCode is 1 when the plan creates or destroys allocations.
func planExitCode(resp *api.JobPlanResponse) int {
	if resp.Annotations == nil {
		return planNoChanges
	}
	for _, u := range resp.Annotations.DesiredTGUpdates {
		if u.Place+u.Stop+u.Migrate+u.DestructiveUpdate+u.Canary > 0 {
			return planChanges
		}
	}
	return planNoChanges
}
