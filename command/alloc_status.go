package command

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// AllocCommand is `nomad alloc`, the parent of the allocation subcommands.
type AllocCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *AllocCommand) Synopsis() string { return "Interact with allocations" }

// Help implements cli.Command.
func (c *AllocCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad alloc <subcommand> [options] [args]

  Inspect allocations: the placements of a job's task groups on nodes.

      $ nomad alloc status <alloc id>

  Reach its tasks on their node, through the servers:

      $ nomad alloc logs -f <alloc id> [task]
      $ nomad alloc exec -t <alloc id> /bin/sh

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *AllocCommand) Run(args []string) int { return c.runParent("alloc", args) }

// AllocStatusCommand is `nomad alloc status`.
type AllocStatusCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *AllocStatusCommand) Synopsis() string {
	return "Display allocation status information and metadata"
}

// Help implements cli.Command.
func (c *AllocStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad alloc status [options] <allocation>

  Show an allocation: where it runs, what the servers want of it (desired
  status) and what its client last reported (client status), the state
  and recent events of each task, and what it was rescheduled from or
  replaced by. <allocation> is an ID or a unique prefix of at least two
  characters.

  An allocation whose client status is "unknown" is on a node the servers
  cannot reach; it may still be running and reports again when the node
  reconnects. When the node came back, the "Reconnect Decision" section
  says which rule kept which copy of the instance and which it stopped.

` + generalOptions() + `

Status Options:

  -short
    Show the allocation's basic information and one line a task: its
    state and its most recent event.

  -verbose
    Show full IDs, absolute times and the placement metrics: why nodes
    were filtered out and the score each candidate node got.

  -stats
    Ask the allocation's client what each running task uses now: the Task
    Resources line shows CPU (MHz) and memory (RSS) used against what the
    task reserved, followed by the memory and CPU figures the task's
    driver measured.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *AllocStatusCommand) Run(args []string) int {
	var short, verbose, showStats bool
	var out outputFlags
	flags := c.FlagSet("alloc status")
	out.register(flags)
	flags.BoolVar(&short, "short", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	flags.BoolVar(&showStats, "stats", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, stub, code := c.allocArg(flags.Args(), "alloc status", view{verbose: verbose, now: time.Now()})
	if stub == nil {
		return code
	}
	alloc, _, err := client.Allocations().Info(stub.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying allocation: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, alloc)
	}

	v := view{verbose: verbose, now: time.Now()}
	c.Ui.Output(formatKV(allocHeader(alloc, c.serverFacts(client, alloc), v)))
	if short {
		c.Ui.Output("\nTasks\n" + formatTaskSummary(alloc))
		return exitOK
	}
	var usage *api.AllocResourceUsage
	if showStats {
		if usage, err = client.Allocations().Stats(alloc, nil); err != nil {
			c.Ui.Warn(fmt.Sprintf("Couldn't retrieve stats: %v", err))
		}
	}
	for _, name := range sortedTaskNames(alloc) {
		sv := statsView{shown: showStats}
		if usage != nil {
			sv.usage = usage.Tasks[name]
		}
		c.Ui.Output("")
		c.Ui.Output(formatTaskStats(alloc, name, sv))
	}
	if s := formatReconnectDecision(alloc, v); s != "" {
		c.Ui.Output("\n" + s)
	}
	if verbose && alloc.Metrics != nil {
		c.Ui.Output("\nPlacement Metrics")
		if s := formatAllocMetrics(alloc.Metrics, "  "); s != "" {
			c.Ui.Output(s)
		}
		if s := formatScores(alloc.Metrics, fullIDLength); s != "" {
			c.Ui.Output(s)
		}
	}
	return exitOK
}

// allocFacts is what the servers know beyond the allocation itself that
// its status explains: its node, and its pending follow-up evaluation. Either
// is nil when it could not be read; the header then leaves its lines out.
type allocFacts struct {
	node     *api.Node
	followup *api.Evaluation
}

// serverFacts reads the allocation's node (only when the allocation is
// unknown: that is when its node's status explains it) and its follow-up
// evaluation.
func (c *AllocStatusCommand) serverFacts(client *api.Client, a *api.Allocation) allocFacts {
	var f allocFacts
	if a.ClientStatus == api.AllocClientStatusUnknown && a.NodeID != "" {
		if n, _, err := client.Nodes().Info(a.NodeID, nil); err == nil {
			f.node = n
		}
	}
	if a.FollowupEvalID != "" {
		if e, _, err := client.Evaluations().Info(a.FollowupEvalID, nil); err == nil {
			f.followup = e
		}
	}
	return f
}

func allocHeader(a *api.Allocation, f allocFacts, v view) []string {
	var version uint64
	if a.Job != nil && a.Job.Version != nil {
		version = *a.Job.Version
	}
	lines := []string{
		"ID|" + v.id(a.ID),
		"Eval ID|" + v.id(a.EvalID),
		"Name|" + a.Name,
		"Node ID|" + v.id(a.NodeID),
		"Node Name|" + a.NodeName,
		"Job ID|" + a.JobID,
		fmt.Sprintf("Job Version|%d", version),
		"Client Status|" + a.ClientStatus,
		"Client Description|" + a.ClientDescription,
	}
	lines = append(lines, unknownLines(a, f.node, v)...)
	if p := a.DisconnectPolicy; p != nil && p.Summary != "" {
		lines = append(lines, "Disconnect Policy|"+p.Summary)
	}
	lines = append(lines,
		"Desired Status|"+a.DesiredStatus,
		"Desired Description|"+a.DesiredDescription,
		"Created|"+v.age(a.CreateTime),
		"Modified|"+v.age(a.ModifyTime),
	)
	if a.PreviousAllocation != "" {
		lines = append(lines, "Rescheduled Alloc ID|"+v.id(a.PreviousAllocation))
	}
	if a.NextAllocation != "" {
		lines = append(lines, "Replacement Alloc ID|"+v.id(a.NextAllocation))
	}
	if t := a.RescheduleTracker; t != nil && len(t.Events) > 0 {
		lines = append(lines, "Reschedule Attempts|"+rescheduleAttempts(a, len(t.Events)))
	}
	if s := rescheduleEligibility(a, f.followup, v); s != "" {
		lines = append(lines, "Reschedule Eligibility|"+s)
	}
	if v.verbose && a.PreemptedByAllocation != "" {
		lines = append(lines, "Preempted By Allocation|"+v.id(a.PreemptedByAllocation))
	}
	if v.verbose && len(a.PreemptedAllocations) > 0 {
		ids := make([]string, len(a.PreemptedAllocations))
		for i, id := range a.PreemptedAllocations {
			ids[i] = v.id(id)
		}
		lines = append(lines, "Preempted Allocations|"+strings.Join(ids, ", "))
	}
	return append(lines, deploymentLines(a, v)...)
}

// unknownLines explain an unknown allocation: since when its node has been
// out of contact (what the task states below date from), since when the
// servers hold it unknown, and when it becomes lost unless its node
// reconnects.
func unknownLines(a *api.Allocation, node *api.Node, v view) []string {
	if a.ClientStatus != api.AllocClientStatusUnknown {
		return nil
	}
	var lines []string
	if node != nil {
		s := node.Status
		if node.StatusUpdatedAt != 0 {
			if v.verbose {
				s += " since"
			}
			s += " " + v.at(time.Unix(node.StatusUpdatedAt, 0))
		}
		if node.Status == api.NodeStatusInit {
			s += " (reconnecting: its client is reporting its allocations)"
		}
		lines = append(lines, "Node Status|"+s)
	}
	if since, ok := a.UnknownSince(); ok {
		lines = append(lines, "Unknown Since|"+v.at(since))
	}
	if at, ok := a.LostAt(); ok && !a.ServerTerminalStatus() {
		lines = append(lines, "Lost After|"+v.at(at)+", unless its node reconnects")
	}
	return lines
}

// rescheduleEligibility is when the servers will place a replacement, as
// upstream shows it from the follow-up evaluation. An unknown allocation's
// follow-up is the end of its disconnect window, which is not when it is
// replaced: that time comes from the group's rules (NextReplacement), and
// an allocation that has its replacement already shows none.
func rescheduleEligibility(a *api.Allocation, followup *api.Evaluation, v view) string {
	if a.ClientStatus == api.AllocClientStatusUnknown {
		r, ok := a.NextReplacement()
		switch {
		case !ok:
			return ""
		case r.WhenLost:
			return v.at(r.At) + " (when lost)"
		case !r.At.After(v.now):
			return "now (waiting for a node that can take the replacement)"
		}
		return v.at(r.At)
	}
	// A canceled follow-up (the allocation reconnected) no longer applies.
	if followup == nil || followup.WaitUntil.IsZero() || followup.Status != api.EvalStatusPending ||
		!followup.WaitUntil.After(v.now) {
		return ""
	}
	return v.at(followup.WaitUntil)
}

// rescheduleAttempts renders "used/allowed" within the group's policy,
// or just the count when reschedules are unlimited.
func rescheduleAttempts(a *api.Allocation, used int) string {
	if a.Job != nil {
		if g := a.Job.LookupTaskGroup(a.TaskGroup); g != nil && g.ReschedulePolicy != nil {
			p := g.ReschedulePolicy
			if (p.Unlimited == nil || !*p.Unlimited) && p.Attempts != nil {
				return fmt.Sprintf("%d/%d", used, *p.Attempts)
			}
		}
	}
	return fmt.Sprint(used)
}

// formatTaskSummary is the short view's task table: each task's state and
// its most recent event, for a glance at many allocations in a row.
func formatTaskSummary(a *api.Allocation) string {
	lines := []string{"Name|State|Last Event|Time|Lifecycle"}
	lcs := taskLifecycles(a)
	for _, name := range sortedTaskNames(a) {
		st := a.TaskStates[name]
		var event, at string
		if n := len(st.Events); n > 0 {
			event, at = st.Events[n-1].Type, formatUnixNanoTime(st.Events[n-1].Time)
		}
		lines = append(lines, fmt.Sprintf("%s|%s|%s|%s|%s", name, st.State, event, at, lifecycleName(lcs[name])))
	}
	return formatList(lines)
}

// formatTask renders one task: its state, resources, lifecycle times and
// recent events, newest first.
func formatTask(a *api.Allocation, name string) string {
	return formatTaskStats(a, name, statsView{})
}

// statsView is what `alloc status -stats` adds to a task: its usage, nil
// when the client could not tell.
type statsView struct {
	shown bool
	usage *api.TaskResourceUsage
}

// formatTaskStats is formatTask with the task's usage.
func formatTaskStats(a *api.Allocation, name string, sv statsView) string {
	st := a.TaskStates[name]
	var b strings.Builder
	lc := ""
	if l := taskLifecycles(a)[name]; !l.Empty() {
		lc = " (" + lifecycleName(l) + ")"
	}
	fmt.Fprintf(&b, "Task %q%s is %q", name, lc, st.State)
	if a.ClientStatus == api.AllocClientStatusUnknown {
		// The servers have not heard from the client since its node
		// disconnected: this is its last report, not the task's state now.
		b.WriteString(" (last reported by its client before its node disconnected)")
	}
	b.WriteString("\n")

	b.WriteString("Task Resources:\n")
	lines := []string{"CPU|Memory|Disk"}
	var cpu, mem, disk int64
	if r := a.AllocatedResources; r != nil {
		if tr := r.Tasks[name]; tr != nil {
			cpu, mem = tr.Cpu.CpuShares, tr.Memory.MemoryMB
		}
		disk = r.Shared.DiskMB
	}
	used := usedResources(sv.usage)
	if used == nil {
		lines = append(lines, fmt.Sprintf("%d MHz|%s|%s", cpu, formatMB(mem), formatMB(disk)))
	} else {
		lines = append(lines, fmt.Sprintf("%d/%d MHz|%s/%s|%s", int64(math.Floor(used.CpuStats.TotalTicks)), cpu,
			formatBytes(used.MemoryStats.RSS), formatMB(mem), formatMB(disk)))
	}
	b.WriteString(formatList(lines))
	if sv.shown {
		b.WriteString(formatUsage(used))
	}

	na := func(t time.Time) string {
		if t.IsZero() {
			return "N/A"
		}
		return formatTime(t)
	}
	b.WriteString("\n\nTask Events:\n")
	b.WriteString(formatKV([]string{
		"Started At|" + na(st.StartedAt),
		"Finished At|" + na(st.FinishedAt),
		fmt.Sprintf("Total Restarts|%d", st.Restarts),
		"Last Restart|" + na(st.LastRestart),
	}))

	b.WriteString("\n\nRecent Events:\n")
	events := []string{"Time|Type|Description"}
	for i := len(st.Events) - 1; i >= 0; i-- {
		e := st.Events[i]
		events = append(events, fmt.Sprintf("%s|%s|%s", formatUnixNanoTime(e.Time), e.Type, eventDescription(e)))
	}
	b.WriteString(formatList(events))
	return b.String()
}

// eventDescription is the event's display message, or one built from its
// fields for events recorded without one.
func eventDescription(e *api.TaskEvent) string {
	if e.DisplayMessage != "" {
		return e.DisplayMessage
	}
	switch e.Type {
	case api.TaskReceived:
		return "Task received by client"
	case api.TaskStarted:
		return "Task started by client"
	case api.TaskTerminated:
		parts := []string{fmt.Sprintf("Exit Code: %d", e.ExitCode)}
		if e.Signal != 0 {
			parts = append(parts, fmt.Sprintf("Signal: %d", e.Signal))
		}
		if e.Message != "" {
			parts = append(parts, fmt.Sprintf("Exit Message: %q", e.Message))
		}
		return strings.Join(parts, ", ")
	case api.TaskKilling:
		if e.KillTimeout > 0 {
			return fmt.Sprintf("Sent interrupt. Waiting %v before force killing", e.KillTimeout)
		}
	case api.TaskKilled:
		if e.KillError != "" {
			return e.KillError
		}
		return "Task successfully killed"
	case api.TaskRestarting:
		msg := fmt.Sprintf("Task restarting in %v", time.Duration(e.StartDelay))
		if e.RestartReason != "" {
			msg = e.RestartReason + " - " + msg
		}
		return msg
	case api.TaskNotRestarting:
		if e.RestartReason != "" {
			return e.RestartReason
		}
		return "Task exceeded restart policy"
	case api.TaskDriverFailure:
		if e.DriverError != "" {
			return e.DriverError
		}
	case api.TaskSetupFailure:
		if e.SetupError != "" {
			return e.SetupError
		}
	case api.TaskSiblingFailed:
		if e.FailedSibling != "" {
			return fmt.Sprintf("Task's sibling %q failed", e.FailedSibling)
		}
	case api.TaskDriverMessage:
		if e.DriverMessage != "" {
			return e.DriverMessage
		}
	case api.TaskClientReconnected:
		return "Client reconnected"
	}
	return e.Message
}
