package structs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var (
	desiredStatuses = []string{structs.AllocDesiredStatusRun, structs.AllocDesiredStatusStop, structs.AllocDesiredStatusEvict}
	clientStatuses  = []string{
		structs.AllocClientStatusPending, structs.AllocClientStatusRunning, structs.AllocClientStatusComplete,
		structs.AllocClientStatusFailed, structs.AllocClientStatusLost, structs.AllocClientStatusUnknown,
	}
)

// Every combination of desired and client status has the terminal
// semantics of "Vocabulary" (docs/concepts/disconnected-clients.md): stop and
// evict are server-terminal; complete,
// failed and lost are client-terminal; unknown is neither, so an
// allocation on a disconnected node keeps counting toward its group.
func TestAllocation_TerminalStatusTable(t *testing.T) {
	cases := []struct {
		desired, client              string
		server, clientTerm, terminal bool
	}{
		{"run", "pending", false, false, false},
		{"run", "running", false, false, false},
		{"run", "complete", false, true, true},
		{"run", "failed", false, true, true},
		{"run", "lost", false, true, true},
		{"run", "unknown", false, false, false},
		{"stop", "pending", true, false, true},
		{"stop", "running", true, false, true},
		{"stop", "complete", true, true, true},
		{"stop", "failed", true, true, true},
		{"stop", "lost", true, true, true},
		{"stop", "unknown", true, false, true},
		{"evict", "pending", true, false, true},
		{"evict", "running", true, false, true},
		{"evict", "complete", true, true, true},
		{"evict", "failed", true, true, true},
		{"evict", "lost", true, true, true},
		{"evict", "unknown", true, false, true},
	}
	must.Len(t, len(desiredStatuses)*len(clientStatuses), cases, must.Sprint("the table covers every combination"))
	for _, tc := range cases {
		t.Run(tc.desired+"/"+tc.client, func(t *testing.T) {
			a := &structs.Allocation{DesiredStatus: tc.desired, ClientStatus: tc.client}
			must.Eq(t, tc.server, a.ServerTerminalStatus(), must.Sprint("ServerTerminalStatus"))
			must.Eq(t, tc.clientTerm, a.ClientTerminalStatus(), must.Sprint("ClientTerminalStatus"))
			must.Eq(t, tc.clientTerm, structs.ClientTerminal(tc.client), must.Sprint("ClientTerminal"))
			must.Eq(t, tc.terminal, a.TerminalStatus(), must.Sprint("TerminalStatus"))
		})
	}
	must.False(t, structs.ClientTerminal(""), must.Sprint("an unset status is not terminal"))
	must.False(t, structs.ClientTerminal("LOST"), must.Sprint("statuses are exact, lower-case values"))
}

// genAlloc draws an allocation with any statuses (including values that are
// not statuses at all) and any status history and task states.
func genAlloc(t *rapid.T) *structs.Allocation {
	status := rapid.OneOf(rapid.SampledFrom(clientStatuses), rapid.String())
	a := &structs.Allocation{
		ID:            rapid.StringMatching(`[a-f0-9]{8}`).Draw(t, "id"),
		DesiredStatus: rapid.OneOf(rapid.SampledFrom(desiredStatuses), rapid.String()).Draw(t, "desired"),
		ClientStatus:  status.Draw(t, "client"),
		TaskStates:    map[string]*structs.TaskState{},
	}
	for i := range rapid.IntRange(0, 5).Draw(t, "states") {
		a.AppendState(structs.AllocStateFieldClientStatus, status.Draw(t, "state"), t0.Add(time.Duration(i)*time.Minute))
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "tasks") {
		a.TaskStates[fmt.Sprint("t", i)] = &structs.TaskState{
			State:  rapid.SampledFrom([]string{structs.TaskStatePending, structs.TaskStateRunning, structs.TaskStateDead}).Draw(t, "task state"),
			Failed: rapid.Bool().Draw(t, "failed"),
		}
	}
	if rapid.Bool().Draw(t, "has job") {
		j := mock.Job()
		j.TaskGroups[0].MaxClientDisconnect = ptr(rapid.SampledFrom([]time.Duration{0, time.Minute, time.Hour}).Draw(t, "window"))
		a.Job, a.TaskGroup = j, j.TaskGroups[0].Name
	}
	return a
}

// Property (see docs/concepts/disconnected-clients.md, "Vocabulary",
// "Mixed versions and upgrades"): unknown is never client-terminal, and an
// allocation the server wants running whose client status is unknown is
// never terminal, whatever else it carries. Code that treats unknown as
// terminal would replace, uncount or garbage-collect a workload that may
// still be running on a disconnected edge node.
func TestAllocation_UnknownIsNeverTerminal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := genAlloc(t)
		must.Eq(t, a.ServerTerminalStatus() || a.ClientTerminalStatus(), a.TerminalStatus())
		if a.ClientStatus != structs.AllocClientStatusUnknown {
			return
		}
		must.False(t, structs.ClientTerminal(a.ClientStatus))
		must.False(t, a.ClientTerminalStatus())
		if a.DesiredStatus == structs.AllocDesiredStatusRun {
			must.False(t, a.TerminalStatus())
		}
	})
}

// allocWithWindow returns an allocation of a job whose group has the given
// legacy max_client_disconnect (nil: not set) and disconnect block.
func allocWithWindow(legacy *time.Duration, block *structs.DisconnectStrategy) *structs.Allocation {
	a := mock.Alloc()
	tg := a.Job.LookupTaskGroup(a.TaskGroup)
	tg.MaxClientDisconnect = legacy
	tg.Disconnect = block
	return a
}

func clientState(value string, at time.Time) *structs.AllocState {
	return &structs.AllocState{Field: structs.AllocStateFieldClientStatus, Value: value, Time: at}
}

// An allocation needs to reconnect exactly when the newest entry of its
// status history is unknown (see docs/concepts/disconnected-clients.md,
// "Vocabulary"): a later entry with any other status
// means the client has reported since, and the allocation must not be
// treated as reconnecting again.
func TestAllocation_NeedsToReconnect(t *testing.T) {
	unknown, running := structs.AllocClientStatusUnknown, structs.AllocClientStatusRunning
	cases := []struct {
		name   string
		states []*structs.AllocState
		want   bool
	}{
		{"no history", nil, false},
		{"marked unknown", []*structs.AllocState{clientState(unknown, t0)}, true},
		{"reported running after unknown", []*structs.AllocState{clientState(unknown, t0), clientState(running, t0.Add(time.Minute))}, false},
		{"reported failed after unknown", []*structs.AllocState{clientState(unknown, t0), clientState(structs.AllocClientStatusFailed, t0.Add(time.Minute))}, false},
		{"unknown again after a reconnect", []*structs.AllocState{clientState(unknown, t0), clientState(running, t0.Add(time.Minute)), clientState(unknown, t0.Add(time.Hour))}, true},
		{"unknown twice", []*structs.AllocState{clientState(unknown, t0), clientState(unknown, t0.Add(time.Minute))}, true},
		{"entries for other fields do not end the wait", []*structs.AllocState{
			clientState(unknown, t0), {Field: structs.AllocStateFieldClientStatus + 1, Value: running, Time: t0.Add(time.Minute)},
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := allocWithWindow(ptr(time.Hour), nil)
			a.ClientStatus = unknown
			a.AllocStates = tc.states
			must.Eq(t, tc.want, a.NeedsToReconnect())
		})
	}
}

// AppendState adds to the history rather than replacing it: the history
// is what explains, after the fact, when an allocation went unknown and back.
func TestAllocation_AppendStateKeepsHistory(t *testing.T) {
	a := &structs.Allocation{}
	a.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, t0)
	a.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusRunning, t0.Add(time.Minute))
	must.Eq(t, []*structs.AllocState{
		clientState(structs.AllocClientStatusUnknown, t0),
		clientState(structs.AllocClientStatusRunning, t0.Add(time.Minute)),
	}, a.AllocStates)
	must.False(t, a.NeedsToReconnect())
}

// The lost window comes from the legacy max_client_disconnect or the
// disconnect block's lost_after (same meaning, see
// docs/concepts/disconnected-clients.md, "Configuration and validation") of
// the allocation's
// own job version; zero or no window means the feature is off.
func TestAllocation_DisconnectTimeout(t *testing.T) {
	cases := []struct {
		name   string
		legacy *time.Duration
		block  *structs.DisconnectStrategy
		want   time.Duration
		ok     bool
	}{
		{"legacy field", ptr(time.Hour), nil, time.Hour, true},
		{"block field", nil, &structs.DisconnectStrategy{LostAfter: 30 * time.Minute}, 30 * time.Minute, true},
		{"block field wins over legacy", ptr(time.Hour), &structs.DisconnectStrategy{LostAfter: 30 * time.Minute}, 30 * time.Minute, true},
		{"block without lost_after falls back to legacy", ptr(time.Hour), &structs.DisconnectStrategy{Replace: ptr(false)}, time.Hour, true},
		{"no window", nil, nil, 0, false},
		{"legacy zero window is off", ptr(time.Duration(0)), nil, 0, false},
		{"block zero window is off", nil, &structs.DisconnectStrategy{LostAfter: 0}, 0, false},
		{"negative window is off", ptr(-time.Hour), nil, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := allocWithWindow(tc.legacy, tc.block)
			a.ClientStatus = structs.AllocClientStatusUnknown
			a.AllocStates = []*structs.AllocState{clientState(structs.AllocClientStatusUnknown, t0)}
			got, ok := a.DisconnectTimeout()
			must.Eq(t, tc.ok, ok)
			if tc.ok {
				must.Eq(t, t0.Add(tc.want), got)
			}
			must.Eq(t, tc.ok, a.SupportsDisconnect())
		})
	}
}

// The window runs from the most recent unknown transition, not the first:
// an allocation that reconnected and was lost again gets a fresh window.
func TestAllocation_DisconnectTimeoutFromLastUnknown(t *testing.T) {
	a := allocWithWindow(ptr(time.Hour), nil)
	a.ClientStatus = structs.AllocClientStatusUnknown
	later := t0.Add(5 * time.Hour)
	a.AllocStates = []*structs.AllocState{
		clientState(structs.AllocClientStatusUnknown, t0),
		clientState(structs.AllocClientStatusRunning, t0.Add(time.Minute)),
		clientState(structs.AllocClientStatusUnknown, later),
	}
	got, ok := a.DisconnectTimeout()
	must.True(t, ok)
	must.Eq(t, later.Add(time.Hour), got)

	a.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusRunning, later.Add(time.Minute))
	_, ok = a.DisconnectTimeout()
	must.False(t, ok, must.Sprint("a reported allocation has no pending expiry"))
}

// Expiry happens exactly at last-unknown + window and not a nanosecond
// before (see docs/concepts/disconnected-clients.md, "Vocabulary"): the
// heartbeat timer and the scheduler must agree on the
// instant, or a node flips to down while the scheduler still waits.
func TestAllocation_ExpiredAtBoundary(t *testing.T) {
	a := allocWithWindow(ptr(time.Hour), nil)
	a.ClientStatus = structs.AllocClientStatusUnknown
	a.AllocStates = []*structs.AllocState{clientState(structs.AllocClientStatusUnknown, t0)}
	end := t0.Add(time.Hour)

	must.False(t, a.Expired(t0))
	must.False(t, a.Expired(end.Add(-time.Nanosecond)))
	must.True(t, a.Expired(end))
	must.True(t, a.Expired(end.Add(time.Nanosecond)))
}

// Only unknown allocations with a window expire: a running one, one that
// reconnected, and one whose group has no (or a zero) window never do.
func TestAllocation_ExpiredOnlyWhenUnknownWithWindow(t *testing.T) {
	far := t0.Add(1000 * time.Hour)

	running := allocWithWindow(ptr(time.Hour), nil)
	running.ClientStatus = structs.AllocClientStatusRunning
	running.AllocStates = []*structs.AllocState{clientState(structs.AllocClientStatusUnknown, t0)}
	must.False(t, running.Expired(far), must.Sprint("client status is not unknown"))

	reconnected := allocWithWindow(ptr(time.Hour), nil)
	reconnected.ClientStatus = structs.AllocClientStatusUnknown
	reconnected.AllocStates = []*structs.AllocState{
		clientState(structs.AllocClientStatusUnknown, t0), clientState(structs.AllocClientStatusRunning, t0.Add(time.Minute)),
	}
	must.False(t, reconnected.Expired(far), must.Sprint("history says it reported after going unknown"))

	for _, legacy := range []*time.Duration{nil, ptr(time.Duration(0))} {
		noWindow := allocWithWindow(legacy, nil)
		noWindow.ClientStatus = structs.AllocClientStatusUnknown
		noWindow.AllocStates = []*structs.AllocState{clientState(structs.AllocClientStatusUnknown, t0)}
		must.False(t, noWindow.Expired(far), must.Sprint("no window: stays unknown until the node returns"))
	}

	noJob := &structs.Allocation{ClientStatus: structs.AllocClientStatusUnknown,
		AllocStates: []*structs.AllocState{clientState(structs.AllocClientStatusUnknown, t0)}}
	must.False(t, noJob.Expired(far), must.Sprint("an allocation without its job has no window"))
	must.False(t, noJob.SupportsDisconnect())
}

// Index reads the instance number back from the name the scheduler gave
// the allocation; a malformed name is instance 0 rather than a panic.
func TestAllocation_Index(t *testing.T) {
	cases := map[string]uint{
		structs.AllocName("web", "app", 0):  0,
		structs.AllocName("web", "app", 7):  7,
		structs.AllocName("web", "app", 42): 42,
		"a[1].b[3]":                         3,
		"job.group[x]":                      0,
		"job.group[3":                       0,
		"job.group]3[":                      0,
		"job.group":                         0,
		"job.group[-1]":                     0,
		"":                                  0,
	}
	for name, want := range cases {
		must.Eq(t, want, (&structs.Allocation{Name: name}).Index(), must.Sprintf("name %q", name))
	}
	must.Eq(t, "web.app[3]", structs.AllocName("web", "app", 3))
}

// The list form carries the fields the CLI and UI show, including the job
// type and version from the allocation's own job.
func TestAllocation_Stub(t *testing.T) {
	a := fullAlloc()
	s := a.Stub()
	must.Eq(t, &structs.AllocListStub{
		ID: a.ID, EvalID: a.EvalID, Name: a.Name, Namespace: a.Namespace, NodeID: a.NodeID, NodeName: a.NodeName,
		JobID: a.JobID, JobType: a.Job.Type, JobVersion: a.Job.Version, TaskGroup: a.TaskGroup,
		DesiredStatus: a.DesiredStatus, DesiredDescription: a.DesiredDescription,
		ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription, TaskStates: a.TaskStates,
		FollowupEvalID: a.FollowupEvalID, NextAllocation: a.NextAllocation, RescheduleTracker: a.RescheduleTracker,
		DeploymentStatus: a.DeploymentStatus,
		CreateIndex:      a.CreateIndex, ModifyIndex: a.ModifyIndex, CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
	}, s)

	a.Job = nil
	must.Eq(t, "", a.Stub().JobType, must.Sprint("a stub of an allocation without its job has no job type"))
}

// An allocation's comparable resources sum its tasks plus the shared disk;
// one without allocated resources takes nothing from its node.
func TestAllocation_ComparableResources(t *testing.T) {
	a := fullAlloc()
	a.AllocatedResources.Tasks["sidecar"] = &structs.AllocatedTaskResources{
		Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64},
	}
	must.Eq(t, &structs.ComparableResources{CPUShares: 600, MemoryMB: 320, DiskMB: 150}, a.ComparableResources())
	must.Eq(t, &structs.ComparableResources{}, (&structs.Allocation{}).ComparableResources())
}

// NewAllocatedResources gives each task what it asked for and the group
// its ephemeral disk, which is what the plan applier later fits on a node.
func TestNewAllocatedResources(t *testing.T) {
	tg := &structs.TaskGroup{
		EphemeralDisk: &structs.EphemeralDisk{SizeMB: 150},
		Tasks: []*structs.Task{
			{Name: "a", Resources: &structs.Resources{CPU: 100, MemoryMB: 64, MemoryMaxMB: 128}},
			{Name: "b"},
		},
	}
	must.Eq(t, &structs.AllocatedResources{
		Tasks: map[string]*structs.AllocatedTaskResources{
			"a": {Cpu: structs.AllocatedCpuResources{CpuShares: 100}, Memory: structs.AllocatedMemoryResources{MemoryMB: 64, MemoryMaxMB: 128}},
			"b": {},
		},
		Shared: structs.AllocatedSharedResources{DiskMB: 150},
	}, structs.NewAllocatedResources(tg))
}

// The recorded placement score is what the best_score reconcile strategy
// compares (see docs/concepts/disconnected-clients.md,
// "Resolution strategies"); a node with no recorded score has none.
func TestAllocMetric_NodeScore(t *testing.T) {
	m := fullAllocMetric()
	score, ok := m.NodeScore("node-a")
	must.True(t, ok)
	must.Eq(t, 0.7, score)
	_, ok = m.NodeScore("node-b")
	must.False(t, ok)
	_, ok = (*structs.AllocMetric)(nil).NodeScore("node-a")
	must.False(t, ok)
}

// Small predicates the client and reconciler branch on.
func TestAllocation_SmallPredicates(t *testing.T) {
	must.True(t, (&structs.TaskState{State: structs.TaskStateDead}).Successful())
	must.False(t, (&structs.TaskState{State: structs.TaskStateDead, Failed: true}).Successful())
	must.False(t, (&structs.TaskState{State: structs.TaskStateRunning}).Successful())

	must.False(t, structs.DesiredTransition{}.ShouldMigrate())
	must.False(t, structs.DesiredTransition{Migrate: ptr(false)}.ShouldMigrate())
	must.True(t, structs.DesiredTransition{Migrate: ptr(true)}.ShouldMigrate())
	must.False(t, structs.DesiredTransition{}.ShouldReschedule())
	must.True(t, structs.DesiredTransition{Reschedule: ptr(true)}.ShouldReschedule())

	ev := structs.NewTaskEvent(structs.TaskClientReconnected, t0)
	must.Eq(t, &structs.TaskEvent{Type: structs.TaskClientReconnected, Time: t0.UnixNano()}, ev)

	a := mock.Alloc()
	must.Eq(t, structs.NamespacedID{ID: a.ID, Namespace: a.Namespace}, a.NamespacedID())
	must.Eq(t, structs.NamespacedID{ID: a.JobID, Namespace: a.Namespace}, a.JobNamespacedID())
	must.Eq(t, a.Job.TaskGroups[0], a.LookupTaskGroup())
}

// A client reports what its tasks do; whether a node is unreachable
// (unknown) or gone for good (lost) is for the servers to say.
func TestClientSettable(t *testing.T) {
	for status, want := range map[string]bool{
		structs.AllocClientStatusPending: true, structs.AllocClientStatusRunning: true,
		structs.AllocClientStatusComplete: true, structs.AllocClientStatusFailed: true,
		structs.AllocClientStatusUnknown: false, structs.AllocClientStatusLost: false,
		"": false, "bogus": false,
	} {
		must.Eq(t, want, structs.ClientSettable(status), must.Sprintf("status %q", status))
	}
}

// The status history is bounded, oldest dropped first, and what the
// newest entry says still decides: an allocation that has flapped for a
// week still knows it is unknown and since when.
func TestAllocation_AppendStateBounded(t *testing.T) {
	a := &structs.Allocation{}
	for i := range 100 {
		status := structs.AllocClientStatusRunning
		if i%2 == 1 {
			status = structs.AllocClientStatusUnknown
		}
		a.AppendState(structs.AllocStateFieldClientStatus, status, t0.Add(time.Duration(i)*time.Minute))
	}
	must.Len(t, structs.MaxRetainedAllocStates, a.AllocStates)
	since, ok := a.UnknownSince()
	must.True(t, ok)
	must.Eq(t, t0.Add(99*time.Minute), since)
}
