package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// JobRestartCommand is `nomad job restart`: the job's allocations
// restarted in place, or stopped and replaced (-reschedule), in batches,
// each batch running again before the next starts.
type JobRestartCommand struct {
	Meta

	// interactive reports whether prompts can be answered (stdin is a
	// terminal); now stamps the output. Tests set both.
	interactive func() bool
	now         func() time.Time
}

// Synopsis implements cli.Command.
func (c *JobRestartCommand) Synopsis() string { return "Restart or reschedule allocations for a job" }

// Help implements cli.Command.
func (c *JobRestartCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job restart [options] <job>

  Restart the allocations of a job in place, on the nodes that run them, or
  with -reschedule stop them so the scheduler places replacements, possibly
  on other nodes. Allocations are handled in batches; the command waits for
  a batch's allocations to run again before it starts the next one.

  An allocation whose node is disconnected (client status "unknown") is
  skipped and named: its client cannot be reached, and the servers decide
  what becomes of it when the node returns or its disconnect window ends.

  When ACLs are enabled, this command requires a token with the
  'alloc-lifecycle' and 'read-job' capabilities for the job's namespace.

` + generalOptions() + `

Restart Options:

  -batch-size=<n|n%>
    How many allocations to restart at once, or a percentage of those to
    restart, rounded up. Defaults to 1.

  -batch-wait=<duration|'ask'>
    Time to wait between batches, or 'ask' to wait for an answer (a
    duration answered applies to the remaining batches). Defaults to 0.

  -group=<name>
    Only allocations of this group. May be repeated.

  -task=<name>
    Only this task of each allocation (the allocations whose group has it).
    May be repeated. Without it every running task restarts. Not with
    -reschedule.

  -reschedule
    Stop each allocation and wait for its replacement to run instead of
    restarting it in place. Not for sysbatch jobs.

  -no-shutdown-delay
    With -reschedule, skip the group's and tasks' shutdown_delay.

  -on-error=<'ask'|'fail'>
    What to do when a batch has an error: ask whether to go on, or exit.
    Defaults to 'ask' ('fail' when the terminal cannot answer and -yes is
    not set is an error, as upstream).

  -yes
    Answer yes to prompts: go on after errors and do not wait between
    batches, unless -on-error or -batch-wait say otherwise.

  -verbose
    Show full IDs and the allocations skipped.

  -all-tasks is refused: this client cannot run a task again once it has
  finished (a prestart task, say); every running task restarts without it.
`)
}

// restartOptions are the parsed flags.
type restartOptions struct {
	groups, tasks  []string
	reschedule     bool
	noDelay        bool
	yes, verbose   bool
	batchSize      int
	batchPercent   bool
	batchWait      time.Duration
	batchWaitAsk   bool
	onErrorAsk     bool
	onErrorDefault bool
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func (c *JobRestartCommand) stamp() string {
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	return now().UTC().Format(time.RFC3339)
}

func (c *JobRestartCommand) canAsk() bool {
	if c.interactive != nil {
		return c.interactive()
	}
	st, err := os.Stdin.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Run implements cli.Command.
func (c *JobRestartCommand) Run(args []string) int {
	var o restartOptions
	var groups, tasks listFlag
	var batchSize, batchWait, onError string
	var allTasks bool
	flags := c.FlagSet("job restart")
	flags.Var(&groups, "group", "")
	flags.Var(&tasks, "task", "")
	flags.BoolVar(&allTasks, "all-tasks", false, "")
	flags.BoolVar(&o.reschedule, "reschedule", false, "")
	flags.BoolVar(&o.noDelay, "no-shutdown-delay", false, "")
	flags.BoolVar(&o.yes, "yes", false, "")
	flags.BoolVar(&o.verbose, "verbose", false, "")
	flags.StringVar(&batchSize, "batch-size", "1", "")
	flags.StringVar(&batchWait, "batch-wait", "0s", "")
	flags.StringVar(&onError, "on-error", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	o.groups, o.tasks = groups, tasks
	if msg := c.parseRestartOptions(flags, &o, allTasks, batchSize, batchWait, onError); msg != "" {
		return c.argsError(msg, "job restart")
	}
	client, jobID, code := c.jobArg(flags.Args(), "job restart")
	if jobID == "" {
		return code
	}
	job, _, err := client.Jobs().Info(jobID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading job %q: %v", jobID, err))
		return exitError
	}
	if err := checkRestartTargets(job, &o); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	stubs, _, err := client.Jobs().Allocations(jobID, false, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving allocations: %v", err))
		return exitError
	}
	v := view{verbose: o.verbose}
	targets := c.restartTargets(job, stubs, &o, v)
	if len(targets) == 0 {
		c.Ui.Output("No allocations to restart")
		return exitOK
	}
	return c.runBatches(client, targets, &o, v)
}

// parseRestartOptions checks the flags, returning what is wrong.
func (c *JobRestartCommand) parseRestartOptions(flags *flag.FlagSet, o *restartOptions, allTasks bool, batchSize, batchWait, onError string) string {
	switch {
	case allTasks:
		return "The -all-tasks option is not supported by this version: a task that has finished cannot be started again in place; without it every running task restarts"
	case o.reschedule && len(o.tasks) > 0:
		return "The -reschedule option cannot be used with -task"
	case o.noDelay && !o.reschedule:
		return "The -no-shutdown-delay option applies to -reschedule only: a restart in place has no shutdown delay"
	}
	if pct, ok := strings.CutSuffix(batchSize, "%"); ok {
		n, err := strconv.Atoi(pct)
		if err != nil || n < 1 || n > 100 {
			return fmt.Sprintf("Invalid -batch-size value %q: percentage value must be between 1%% and 100%%", batchSize)
		}
		o.batchSize, o.batchPercent = n, true
	} else {
		n, err := strconv.Atoi(batchSize)
		if err != nil {
			return fmt.Sprintf("Invalid -batch-size value %q: must be a whole number or a percentage such as 25%%", batchSize)
		}
		if n < 1 {
			return fmt.Sprintf("Invalid -batch-size value %q: number value must be greater than zero", batchSize)
		}
		o.batchSize = n
	}
	if batchWait == "ask" {
		if !c.canAsk() {
			return `Invalid -batch-wait value "ask": "ask" cannot be used when terminal is not interactive`
		}
		o.batchWaitAsk = true
	} else {
		d, err := time.ParseDuration(batchWait)
		if err != nil || d < 0 {
			return fmt.Sprintf("Invalid -batch-wait value %q: must be a duration such as 30s, or 'ask'", batchWait)
		}
		o.batchWait = d
	}
	switch onError {
	case "":
		o.onErrorDefault = true
		if !o.yes {
			if !c.canAsk() {
				return `Invalid -on-error value "ask": "ask" cannot be used when terminal is not interactive`
			}
			o.onErrorAsk = true
		}
	case "ask":
		if !c.canAsk() {
			return `Invalid -on-error value "ask": "ask" cannot be used when terminal is not interactive`
		}
		o.onErrorAsk = true
	case "fail":
	default:
		return fmt.Sprintf(`Invalid -on-error value %q: must be "ask" or "fail"`, onError)
	}
	return ""
}

// checkRestartTargets refuses a group or task the job does not have, and
// -reschedule of a sysbatch job.
func checkRestartTargets(job *api.Job, o *restartOptions) error {
	if o.reschedule && deref(job.Type) == "sysbatch" {
		return userErrorf("Only jobs of type 'batch', 'service', and 'system' can be rescheduled")
	}
	have := map[string][]string{}
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			have[deref(tg.Name)] = append(have[deref(tg.Name)], t.Name)
		}
	}
	for _, g := range o.groups {
		if _, ok := have[g]; !ok {
			return userErrorf("Group %q not found in job %q", g, deref(job.ID))
		}
	}
	for _, task := range o.tasks {
		found := false
		for g, ts := range have {
			if (len(o.groups) == 0 || slices.Contains(o.groups, g)) && slices.Contains(ts, task) {
				found = true
			}
		}
		if !found {
			return userErrorf("Task %q not found in job %q (in the groups named)", task, deref(job.ID))
		}
	}
	return nil
}

// restartTarget is one allocation to restart and the tasks to restart in
// it (nil: every running task).
type restartTarget struct {
	stub  *api.AllocationListStub
	tasks []string
}

// restartTargets picks the allocations that run (or, rescheduling, are
// not terminal), in the order the servers list them, and names those it
// skips.
func (c *JobRestartCommand) restartTargets(job *api.Job, stubs []*api.AllocationListStub, o *restartOptions, v view) []restartTarget {
	groupTasks := map[string][]string{}
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			groupTasks[deref(tg.Name)] = append(groupTasks[deref(tg.Name)], t.Name)
		}
	}
	var out []restartTarget
	for _, a := range stubs {
		if len(o.groups) > 0 && !slices.Contains(o.groups, a.TaskGroup) {
			continue
		}
		if a.ClientStatus == api.AllocClientStatusUnknown && a.DesiredStatus == api.AllocDesiredStatusRun {
			c.Ui.Output(fmt.Sprintf("    %s: Skipping allocation %q: its node is disconnected (client status \"unknown\")",
				c.stamp(), v.id(a.ID)))
			continue
		}
		eligible := a.DesiredStatus == api.AllocDesiredStatusRun && a.ClientStatus == api.AllocClientStatusRunning
		if o.reschedule {
			eligible = a.DesiredStatus == api.AllocDesiredStatusRun &&
				(a.ClientStatus == api.AllocClientStatusRunning || a.ClientStatus == api.AllocClientStatusPending)
		}
		if !eligible {
			if o.verbose {
				c.Ui.Output(fmt.Sprintf("    %s: Skipping allocation %q because desired status is %q and client status is %q",
					c.stamp(), a.ID, a.DesiredStatus, a.ClientStatus))
			}
			continue
		}
		t := restartTarget{stub: a}
		if len(o.tasks) > 0 {
			for _, task := range o.tasks {
				if slices.Contains(groupTasks[a.TaskGroup], task) {
					t.tasks = append(t.tasks, task)
				}
			}
			if len(t.tasks) == 0 {
				continue
			}
		}
		out = append(out, t)
	}
	return out
}

// ordinal is 1st, 2nd, 3rd, 4th, ... 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

func (c *JobRestartCommand) runBatches(client *api.Client, targets []restartTarget, o *restartOptions, v view) int {
	size := o.batchSize
	if o.batchPercent {
		size = int(math.Ceil(float64(len(targets)) * float64(o.batchSize) / 100))
	}
	size = max(1, min(size, len(targets)))
	c.Ui.Output(fmt.Sprintf("==> %s: Restarting %d allocations", c.stamp(), len(targets)))
	failed := false
	for i, batch := 0, 0; i < len(targets); i, batch = i+size, batch+1 {
		if i > 0 {
			if !c.betweenBatches(o) {
				c.Ui.Output(fmt.Sprintf("==> %s: Job restart canceled", c.stamp()))
				return exitError
			}
		}
		part := targets[i:min(i+size, len(targets))]
		if size > 1 {
			c.Ui.Output(fmt.Sprintf("==> %s: Restarting %s batch of %d allocations", c.stamp(), ordinal(batch+1), len(part)))
		}
		if errs := c.runBatch(client, part, o, v); len(errs) > 0 {
			failed = true
			for _, err := range errs {
				c.Ui.Error(fmt.Sprintf("    %s: %v", c.stamp(), err))
			}
			if !c.afterError(o) {
				c.Ui.Error(fmt.Sprintf("==> %s: Job restart failed", c.stamp()))
				return exitError
			}
		}
	}
	if failed {
		c.Ui.Output(fmt.Sprintf("==> %s: Job restart finished with errors", c.stamp()))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("==> %s: Job restart finished\n\nJob restarted successfully!", c.stamp()))
	return exitOK
}

// runBatch restarts (or reschedules) the batch's allocations at once and
// waits for each to run again.
func (c *JobRestartCommand) runBatch(client *api.Client, part []restartTarget, o *restartOptions, v view) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, t := range part {
		if o.reschedule {
			c.Ui.Output(fmt.Sprintf("    %s: Rescheduling allocation %q for group %q", c.stamp(), v.id(t.stub.ID), t.stub.TaskGroup))
		} else if len(t.tasks) == 0 {
			c.Ui.Output(fmt.Sprintf("    %s: Restarting running tasks in allocation %q for group %q", c.stamp(), v.id(t.stub.ID), t.stub.TaskGroup))
		} else {
			for _, task := range t.tasks {
				c.Ui.Output(fmt.Sprintf("    %s: Restarting task %q in allocation %q for group %q", c.stamp(), task, v.id(t.stub.ID), t.stub.TaskGroup))
			}
		}
		wg.Go(func() {
			var err error
			if o.reschedule {
				err = c.reschedule(client, t, o, v)
			} else {
				err = c.restartInPlace(client, t, v)
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errs
}

// restartInPlace restarts the target's tasks and waits until each has
// started again: its restart count has grown and it runs.
func (c *JobRestartCommand) restartInPlace(client *api.Client, t restartTarget, v view) error {
	target, ok := c.targetByID(client, t.stub.ID)
	if !ok {
		return userErrorf("Allocation %q could not be read", v.id(t.stub.ID))
	}
	before := map[string]uint64{}
	for name, st := range target.alloc.TaskStates {
		if (len(t.tasks) == 0 && st.State == api.TaskStateRunning) || slices.Contains(t.tasks, name) {
			before[name] = st.Restarts
		}
	}
	tasks := t.tasks
	if len(tasks) == 0 {
		tasks = []string{""}
	}
	for _, task := range tasks {
		resp, err := target.do(context.Background(), http.MethodPut, target.path("/v1/client/allocation/%s/restart", nil),
			map[string]any{"TaskName": task})
		if err != nil {
			return userErrorf("Failed to restart allocation %q: %v", v.id(t.stub.ID), err)
		}
		resp.Body.Close()
	}
	err := followAlloc(client, t.stub.ID, func(a *api.Allocation) (bool, error) {
		if err := stillLive(a); err != nil {
			return true, err
		}
		for name, n := range before {
			st := a.TaskStates[name]
			if st == nil || st.Restarts <= n || st.State != api.TaskStateRunning {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return userErrorf("Allocation %q: %v", v.id(t.stub.ID), err)
	}
	return nil
}

func (c *JobRestartCommand) reschedule(client *api.Client, t restartTarget, o *restartOptions, v view) error {
	q := &api.QueryOptions{}
	if o.noDelay {
		q.Params = map[string]string{"no_shutdown_delay": "true"}
	}
	if _, err := client.Allocations().Stop(&api.Allocation{ID: t.stub.ID}, q); err != nil {
		return userErrorf("Failed to stop allocation %q: %v", v.id(t.stub.ID), err)
	}
	next, err := waitReplacement(client, t.stub.ID)
	if err != nil {
		return userErrorf("Allocation %q: %v", v.id(t.stub.ID), err)
	}
	c.Ui.Output(fmt.Sprintf("    %s: Allocation %q replaced by %q, waiting for %q to start running",
		c.stamp(), v.id(t.stub.ID), v.id(next), v.id(next)))
	status, err := waitAllocRunning(client, next)
	if err != nil {
		return userErrorf("Allocation %q: %v", v.id(next), err)
	}
	c.Ui.Output(fmt.Sprintf("    %s: Allocation %q is %q", c.stamp(), v.id(next), status))
	return nil
}

// followAlloc reads the allocation with blocking queries until done
// says it is settled.
func followAlloc(client *api.Client, id string, done func(*api.Allocation) (bool, error)) error {
	var index uint64
	for {
		a, qm, err := client.Allocations().Info(id, &api.QueryOptions{WaitIndex: index, WaitTime: 30 * time.Second})
		if err != nil {
			return err
		}
		if ok, err := done(a); ok || err != nil {
			return err
		}
		index = qm.LastIndex
	}
}

// stillLive fails for an allocation that ended, or whose node was cut
// off, before it ran again.
func stillLive(a *api.Allocation) error {
	switch {
	case a.ClientStatus == api.AllocClientStatusUnknown:
		return errors.New(`its node was disconnected (client status "unknown") before it ran again`)
	case a.ClientTerminalStatus() || a.ServerTerminalStatus():
		return fmt.Errorf("it is %q (desired %q) instead of running", a.ClientStatus, a.DesiredStatus)
	}
	return nil
}

// waitAllocRunning waits until the allocation runs, failing if it ends
// or its node is cut off first.
func waitAllocRunning(client *api.Client, id string) (string, error) {
	var status string
	err := followAlloc(client, id, func(a *api.Allocation) (bool, error) {
		status = a.ClientStatus
		if a.ClientStatus == api.AllocClientStatusRunning {
			return true, nil
		}
		if err := stillLive(a); err != nil {
			return true, err
		}
		return false, nil
	})
	return status, err
}

// waitReplacement waits until the stopped allocation names its
// replacement.
func waitReplacement(client *api.Client, id string) (string, error) {
	var next string
	err := followAlloc(client, id, func(a *api.Allocation) (bool, error) {
		next = a.NextAllocation
		return next != "", nil
	})
	return next, err
}

// betweenBatches waits -batch-wait, or asks; false cancels.
func (c *JobRestartCommand) betweenBatches(o *restartOptions) bool {
	if o.batchWaitAsk {
		for {
			answer, err := c.Ui.Ask("==> Proceed with the next batch? [Y/n/<duration>]")
			if err != nil {
				return false
			}
			switch a := strings.ToLower(strings.TrimSpace(answer)); a {
			case "", "y", "yes":
				return true
			case "n", "no":
				return false
			default:
				d, err := time.ParseDuration(a)
				if err != nil || d < 0 {
					c.Ui.Error(fmt.Sprintf("Invalid answer %q: y, n or a duration such as 30s", answer))
					continue
				}
				o.batchWait, o.batchWaitAsk = d, false
			}
			break
		}
	}
	if o.batchWait > 0 {
		c.Ui.Output(fmt.Sprintf("==> %s: Waiting %s before restarting the next batch", c.stamp(), o.batchWait))
		time.Sleep(o.batchWait)
	}
	return true
}

// afterError decides whether the remaining batches run after an error.
func (c *JobRestartCommand) afterError(o *restartOptions) bool {
	if !o.onErrorAsk {
		// -yes without -on-error goes on; -on-error=fail stops.
		return o.yes && o.onErrorDefault
	}
	answer, err := c.Ui.Ask("==> Proceed with the remaining batches? [y/N]")
	if err != nil {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}
