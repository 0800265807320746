package scheduler_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// systemJob returns a system job of one group, with a lost window when
// window is positive.
func systemJob(jobType string, window time.Duration) *structs.Job {
	job := mock.Job()
	job.ID = "mock-" + jobType + "-" + structs.GenerateUUID()
	job.Type = jobType
	tg := job.TaskGroups[0]
	tg.Count = 1
	tg.ReschedulePolicy = nil
	tg.RestartPolicy = structs.NewRestartPolicy(jobType)
	if window > 0 {
		tg.Disconnect = &structs.DisconnectStrategy{LostAfter: window}
	}
	job.Canonicalize()
	return job
}

func processSystem(t *testing.T, h *schedtest.Harness, job *structs.Job, trigger string) *structs.Evaluation {
	t.Helper()
	e := schedtest.JobEval(job, trigger)
	h.UpsertEval(e)
	factory := scheduler.NewSystemScheduler
	if job.Type == structs.JobTypeSysBatch {
		factory = scheduler.NewSysBatchScheduler
	}
	must.NoError(t, h.Process(factory, e))
	must.Eq(t, structs.EvalStatusComplete, h.LastEval().Status)
	return h.LastEval()
}

// liveByNode maps each node to the job's allocations desired run there.
func liveByNode(h *schedtest.Harness, job *structs.Job) map[string][]*structs.Allocation {
	out := map[string][]*structs.Allocation{}
	for _, a := range h.JobAllocs(job) {
		if a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminalStatus() {
			out[a.NodeID] = append(out[a.NodeID], a)
		}
	}
	return out
}

type systemFixture struct {
	h     *schedtest.Harness
	nodes []*structs.Node
	job   *structs.Job
}

// newSystemFixture: three ready nodes running one allocation each.
func newSystemFixture(t *testing.T, jobType string, window time.Duration) systemFixture {
	h := schedtest.NewHarness(t)
	nodes := []*structs.Node{mock.Node(), mock.Node(), mock.Node()}
	h.UpsertNodes(nodes...)
	job := h.UpsertJob(systemJob(jobType, window))
	processSystem(t, h, job, structs.EvalTriggerJobRegister)
	setRunning(t, h, job)
	return systemFixture{h: h, nodes: nodes, job: job}
}

func TestSystemSched_OnePerReadyNode(t *testing.T) {
	h := schedtest.NewHarness(t)
	ready := []*structs.Node{mock.Node(), mock.Node(), mock.Node()}
	down, ineligible, otherDC, draining := mock.Node(), mock.Node(), mock.Node(), mock.Node()
	down.Status = structs.NodeStatusDown
	ineligible.SchedulingEligibility = structs.NodeSchedulingIneligible
	otherDC.Datacenter = "dc2"
	draining.Drain = true
	h.UpsertNodes(append(ready, down, ineligible, otherDC, draining)...)
	job := h.UpsertJob(systemJob(structs.JobTypeSystem, 0))

	processSystem(t, h, job, structs.EvalTriggerJobRegister)

	live := liveByNode(h, job)
	must.MapLen(t, 3, live)
	for _, n := range ready {
		must.Len(t, 1, live[n.ID], must.Sprintf("node %s", n.ID))
		must.Eq(t, job.ID+".web[0]", live[n.ID][0].Name)
	}

	// Processing again changes nothing.
	plans := len(h.Plans)
	processSystem(t, h, job, structs.EvalTriggerJobRegister)
	must.Eq(t, plans, len(h.Plans), must.Sprint("a settled system job needs no plan"))
}

func TestSystemSched_NewNodeGetsOne(t *testing.T) {
	f := newSystemFixture(t, structs.JobTypeSystem, 0)
	late := mock.Node()
	f.h.UpsertNodes(late)

	processSystem(t, f.h, f.job, structs.EvalTriggerNodeUpdate)

	plan := f.h.Plans[len(f.h.Plans)-1]
	placed := schedtest.PlacedAllocs(plan)
	must.Len(t, 1, placed)
	must.Eq(t, late.ID, placed[0].NodeID)
	must.SliceEmpty(t, schedtest.StoppedAllocs(plan))
	must.MapLen(t, 4, liveByNode(f.h, f.job))
}

func TestSystemSched_Constraints(t *testing.T) {
	h := schedtest.NewHarness(t)
	edge, core := mock.Node(), mock.Node()
	edge.Meta = map[string]string{"role": "edge"}
	core.Meta = map[string]string{"role": "core"}
	h.UpsertNodes(edge, core)
	job := systemJob(structs.JobTypeSystem, 0)
	job.Constraints = []*structs.Constraint{{LTarget: "${meta.role}", RTarget: "edge", Operand: "="}}
	job = h.UpsertJob(job)

	ev := processSystem(t, h, job, structs.EvalTriggerJobRegister)

	live := liveByNode(h, job)
	must.MapLen(t, 1, live)
	must.Len(t, 1, live[edge.ID])
	must.MapEmpty(t, ev.FailedTGAllocs, must.Sprint("a node the constraints rule out is not a failure"))
	must.Eq(t, 0, ev.QueuedAllocations["web"])
}

// A node whose resources are used up is a failed placement, reported on
// the evaluation.
func TestSystemSched_ExhaustedNodeReported(t *testing.T) {
	h := schedtest.NewHarness(t)
	small := mock.Node()
	small.NodeResources.Memory.MemoryMB = 300
	h.UpsertNodes(small, mock.Node())
	job := h.UpsertJob(systemJob(structs.JobTypeSystem, 0))

	ev := processSystem(t, h, job, structs.EvalTriggerJobRegister)

	must.MapLen(t, 1, liveByNode(h, job))
	must.NotNil(t, ev.FailedTGAllocs["web"])
	must.Eq(t, 1, ev.FailedTGAllocs["web"].NodesExhausted)
}

// The disconnect rules of docs/concepts/disconnected-clients.md, for an
// allocation that belongs to its node.
func TestSystemSched_NodeLoss(t *testing.T) {
	cases := []struct {
		name       string
		window     time.Duration
		status     string
		wantClient string
		wantEval   bool
	}{
		{"down without window: lost", 0, structs.NodeStatusDown, structs.AllocClientStatusLost, false},
		{"down with window: lost", time.Hour, structs.NodeStatusDown, structs.AllocClientStatusLost, false},
		{"disconnected without window: lost", 0, structs.NodeStatusDisconnected, structs.AllocClientStatusLost, false},
		{"disconnected with window: unknown", time.Hour, structs.NodeStatusDisconnected, structs.AllocClientStatusUnknown, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSystemFixture(t, structs.JobTypeSystem, tc.window)
			orig := liveByNode(f.h, f.job)[f.nodes[0].ID][0]
			f.h.SetNodeStatus(f.nodes[0].ID, tc.status)

			processSystem(t, f.h, f.job, structs.EvalTriggerNodeUpdate)

			got, err := f.h.State.AllocByID(nil, orig.ID)
			must.NoError(t, err)
			must.Eq(t, tc.wantClient, got.ClientStatus)
			plan := f.h.Plans[len(f.h.Plans)-1]
			must.SliceEmpty(t, schedtest.PlacedAllocs(plan), must.Sprint("a system allocation is never replaced on another node"))
			if tc.wantEval {
				must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
				must.Eq(t, structs.AllocUnknown, got.ClientDescription)
				must.Len(t, 1, plan.FollowUpEvals)
				must.Eq(t, structs.EvalTriggerMaxDisconnectTimeout, plan.FollowUpEvals[0].TriggeredBy)
				must.Eq(t, f.h.Now.Add(tc.window), plan.FollowUpEvals[0].WaitUntil)
				must.Eq(t, plan.FollowUpEvals[0].ID, got.FollowupEvalID)
			} else {
				must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
				must.Eq(t, structs.AllocLost, got.DesiredDescription)
			}
			for _, a := range schedtest.StoppedAllocs(plan) {
				must.Eq(t, f.nodes[0].ID, a.NodeID, must.Sprint("the other nodes are untouched"))
			}
		})
	}
}

// disconnectSystem disconnects node 0 of a system job with a one-hour
// window and marks its allocation unknown.
func disconnectSystem(t *testing.T, jobType string) (systemFixture, *structs.Allocation) {
	f := newSystemFixture(t, jobType, time.Hour)
	orig := liveByNode(f.h, f.job)[f.nodes[0].ID][0]
	f.h.SetNodeStatus(f.nodes[0].ID, structs.NodeStatusDisconnected)
	processSystem(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	got, err := f.h.State.AllocByID(nil, orig.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocClientStatusUnknown, got.ClientStatus)
	return f, got
}

func TestSystemSched_UnknownNotReplacedWhileDisconnected(t *testing.T) {
	f, orig := disconnectSystem(t, structs.JobTypeSystem)
	f.h.Now = f.h.Now.Add(30 * time.Minute)

	processSystem(t, f.h, f.job, structs.EvalTriggerNodeUpdate)

	live := liveByNode(f.h, f.job)
	must.MapLen(t, 3, live)
	must.Eq(t, orig.ID, live[f.nodes[0].ID][0].ID)
	for _, a := range f.h.JobAllocs(f.job) {
		must.Eq(t, a.NodeID, a.NodeID)
		must.Eq(t, "", a.PreviousAllocation, must.Sprint("no replacement anywhere"))
	}
}

func TestSystemSched_ReconnectKeepsWithoutRestart(t *testing.T) {
	f, orig := disconnectSystem(t, structs.JobTypeSystem)
	started := orig.TaskStates["web"].StartedAt
	f.h.Now = f.h.Now.Add(10 * time.Minute)
	f.h.SetNodeStatus(f.nodes[0].ID, structs.NodeStatusInit)
	back := orig.Copy()
	back.ClientStatus = structs.AllocClientStatusRunning
	must.NoError(t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), []*structs.Allocation{back}))

	processSystem(t, f.h, f.job, structs.EvalTriggerReconnect)

	got, err := f.h.State.AllocByID(nil, orig.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
	must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
	must.False(t, got.NeedsToReconnect(), must.Sprint("the kept allocation is no longer reconnecting"))
	must.Eq(t, started, got.TaskStates["web"].StartedAt)
	plan := f.h.Plans[len(f.h.Plans)-1]
	must.SliceEmpty(t, schedtest.PlacedAllocs(plan))
	must.SliceEmpty(t, schedtest.StoppedAllocs(plan))

	// Settled: the node ready, nothing more to do.
	f.h.SetNodeStatus(f.nodes[0].ID, structs.NodeStatusReady)
	plans := len(f.h.Plans)
	processSystem(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	must.Eq(t, plans, len(f.h.Plans))
}

func TestSystemSched_WindowExpiryLostThenPlacedOnReturn(t *testing.T) {
	f, orig := disconnectSystem(t, structs.JobTypeSystem)
	f.h.Now = f.h.Now.Add(time.Hour)

	processSystem(t, f.h, f.job, structs.EvalTriggerMaxDisconnectTimeout)

	got, err := f.h.State.AllocByID(nil, orig.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocClientStatusLost, got.ClientStatus)
	must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	must.SliceEmpty(t, schedtest.PlacedAllocs(f.h.Plans[len(f.h.Plans)-1]))

	// The node comes back (down meanwhile, then ready): it gets a new one.
	f.h.SetNodeStatus(f.nodes[0].ID, structs.NodeStatusReady)
	processSystem(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	live := liveByNode(f.h, f.job)[f.nodes[0].ID]
	must.Len(t, 1, live)
	must.NotEq(t, orig.ID, live[0].ID)
	must.Eq(t, orig.ID, live[0].PreviousAllocation)
}

// A system allocation whose tasks failed on their node is run there
// again; the failed one is stopped.
func TestSystemSched_FailedRunAgainOnItsNode(t *testing.T) {
	f := newSystemFixture(t, structs.JobTypeSystem, 0)
	orig := liveByNode(f.h, f.job)[f.nodes[1].ID][0]
	failed := orig.Copy()
	failed.ClientStatus = structs.AllocClientStatusFailed
	must.NoError(t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), []*structs.Allocation{failed}))

	processSystem(t, f.h, f.job, structs.EvalTriggerRetryFailedAlloc)

	live := liveByNode(f.h, f.job)[f.nodes[1].ID]
	must.Len(t, 1, live)
	must.Eq(t, orig.ID, live[0].PreviousAllocation)
	got, err := f.h.State.AllocByID(nil, orig.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
}

func TestSysBatchSched_CompleteNotRerun(t *testing.T) {
	f := newSystemFixture(t, structs.JobTypeSysBatch, 0)
	var done []*structs.Allocation
	for _, a := range f.h.JobAllocs(f.job) {
		u := a.Copy()
		u.ClientStatus = structs.AllocClientStatusComplete
		done = append(done, u)
	}
	must.NoError(t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), done))

	plans := len(f.h.Plans)
	processSystem(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	must.Eq(t, plans, len(f.h.Plans), must.Sprint("finished nodes do not run the job again"))

	// A new node runs it once.
	late := mock.Node()
	f.h.UpsertNodes(late)
	processSystem(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	placed := schedtest.PlacedAllocs(f.h.Plans[len(f.h.Plans)-1])
	must.Len(t, 1, placed)
	must.Eq(t, late.ID, placed[0].NodeID)

	// A new job version runs again everywhere.
	next := f.job.Copy()
	next.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "1s"}
	next = f.h.UpsertJob(next)
	processSystem(t, f.h, next, structs.EvalTriggerJobRegister)
	must.Len(t, 4, schedtest.PlacedAllocs(f.h.Plans[len(f.h.Plans)-1]))
}

func TestSystemSched_JobUpdate(t *testing.T) {
	cases := []struct {
		name        string
		change      func(*structs.Job)
		destructive bool
	}{
		{"in place", func(j *structs.Job) { j.Meta = map[string]string{"owner": "ops"} }, false},
		{"destructive", func(j *structs.Job) { j.TaskGroups[0].Tasks[0].Env = map[string]string{"FOO": "baz"} }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newSystemFixture(t, structs.JobTypeSystem, 0)
			before := liveByNode(f.h, f.job)
			next := f.job.Copy()
			tc.change(next)
			next = f.h.UpsertJob(next)

			processSystem(t, f.h, next, structs.EvalTriggerJobRegister)

			plan := f.h.Plans[len(f.h.Plans)-1]
			after := liveByNode(f.h, next)
			must.MapLen(t, 3, after)
			for _, n := range f.nodes {
				must.Len(t, 1, after[n.ID])
				a := after[n.ID][0]
				must.Eq(t, next.Version, a.Job.Version)
				if tc.destructive {
					must.NotEq(t, before[n.ID][0].ID, a.ID)
					must.Eq(t, before[n.ID][0].ID, a.PreviousAllocation)
				} else {
					must.Eq(t, before[n.ID][0].ID, a.ID)
				}
			}
			if tc.destructive {
				must.Len(t, 3, schedtest.StoppedAllocs(plan))
			} else {
				must.SliceEmpty(t, schedtest.StoppedAllocs(plan))
			}
		})
	}
}

// A job update while a node is disconnected: the unknown allocation takes
// in-place changes; a destructive change waits for its node, where the
// older original then loses.
func TestSystemSched_DestructiveUpdateWhileDisconnected(t *testing.T) {
	f, orig := disconnectSystem(t, structs.JobTypeSystem)
	next := f.job.Copy()
	next.TaskGroups[0].Tasks[0].Env = map[string]string{"FOO": "baz"}
	next = f.h.UpsertJob(next)
	processSystem(t, f.h, next, structs.EvalTriggerJobRegister)
	got, err := f.h.State.AllocByID(nil, orig.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
	must.Eq(t, structs.AllocClientStatusUnknown, got.ClientStatus)

	f.h.SetNodeStatus(f.nodes[0].ID, structs.NodeStatusReady)
	back := got.Copy()
	back.ClientStatus = structs.AllocClientStatusRunning
	must.NoError(t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), []*structs.Allocation{back}))
	processSystem(t, f.h, next, structs.EvalTriggerReconnect)

	got, err = f.h.State.AllocByID(nil, orig.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	live := liveByNode(f.h, next)[f.nodes[0].ID]
	must.Len(t, 1, live)
	must.Eq(t, next.Version, live[0].Job.Version)
}

func TestSystemSched_JobStop(t *testing.T) {
	f, unknown := disconnectSystem(t, structs.JobTypeSystem)
	downAlloc := liveByNode(f.h, f.job)[f.nodes[1].ID][0]
	f.h.SetNodeStatus(f.nodes[1].ID, structs.NodeStatusDown)
	stopped := f.job.Copy()
	stopped.Stop = true
	stopped = f.h.UpsertJob(stopped)

	processSystem(t, f.h, stopped, structs.EvalTriggerJobDeregister)

	for _, a := range f.h.JobAllocs(f.job) {
		must.Eq(t, structs.AllocDesiredStatusStop, a.DesiredStatus, must.Sprintf("alloc %s, unknown ones included", a.ID))
		switch a.ID {
		case unknown.ID:
			must.Eq(t, structs.AllocClientStatusUnknown, a.ClientStatus, must.Sprint("its client stops it on return"))
		case downAlloc.ID:
			must.Eq(t, structs.AllocClientStatusLost, a.ClientStatus)
		}
	}
}

// A node the job no longer targets loses its allocation; one only made
// ineligible keeps it (as upstream: eligibility governs new placements,
// a drain moves what runs).
func TestSystemSched_NodeLeavesTarget(t *testing.T) {
	f := newSystemFixture(t, structs.JobTypeSystem, 0)
	live := liveByNode(f.h, f.job)
	moved := f.nodes[0].Copy()
	moved.Datacenter = "dc2"
	ineligible := f.nodes[1].Copy()
	ineligible.SchedulingEligibility = structs.NodeSchedulingIneligible
	f.h.UpsertNodes(moved, ineligible)

	processSystem(t, f.h, f.job, structs.EvalTriggerNodeUpdate)

	stopped := schedtest.StoppedAllocs(f.h.Plans[len(f.h.Plans)-1])
	must.Len(t, 1, stopped)
	must.Eq(t, live[moved.ID][0].ID, stopped[0].ID)
	must.Eq(t, structs.AllocNotNeeded, stopped[0].DesiredDescription)
	must.Len(t, 1, liveByNode(f.h, f.job)[ineligible.ID])
}

// A group of count 0 runs nowhere: it is how a system job's groups are
// switched over one at a time.
func TestSystemSched_CountZeroRunsNowhere(t *testing.T) {
	f := newSystemFixture(t, structs.JobTypeSystem, 0)
	off := f.job.Copy()
	off.TaskGroups[0].Count = 0
	off = f.h.UpsertJob(off)

	processSystem(t, f.h, off, structs.EvalTriggerJobRegister)

	must.MapEmpty(t, liveByNode(f.h, off))
	must.SliceEmpty(t, schedtest.PlacedAllocs(f.h.Plans[len(f.h.Plans)-1]))
}

// A purged system job's allocations are stopped from the evaluation
// alone (job-deregister): the job is gone from the state.
func TestSystemSched_PurgedJobStopped(t *testing.T) {
	f := newSystemFixture(t, structs.JobTypeSystem, 0)
	must.NoError(t, f.h.State.DeleteJob(f.h.NextIndex(), f.job.Namespace, f.job.ID))

	processSystem(t, f.h, f.job, structs.EvalTriggerJobDeregister)

	allocs := f.h.JobAllocs(f.job)
	must.Len(t, 3, allocs)
	for _, a := range allocs {
		must.Eq(t, structs.AllocDesiredStatusStop, a.DesiredStatus)
		must.Eq(t, structs.AllocJobStopped, a.DesiredDescription)
	}
}

// A system allocation's reconnect is counted like a service one's: kept
// on its node ("resumed" by the rule "one per node"), or stopped when the
// job moved on while it was away ("older job version").
func TestSystemSched_ReconnectCounted(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		bump       bool
	}{
		{"kept", "resumed/one per node", false},
		{"older version", "reconnected_stopped/older job version", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, orig := disconnectSystem(t, structs.JobTypeSystem)
			if tc.bump {
				job := f.job.Copy()
				job.Meta = map[string]string{"v": "2"}
				f.job = f.h.UpsertJob(job)
			}
			f.h.SetNodeStatus(f.nodes[0].ID, structs.NodeStatusInit)
			back := orig.Copy()
			back.ClientStatus = structs.AllocClientStatusRunning
			must.NoError(t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), []*structs.Allocation{back}))

			rec := &countingRecorder{}
			e := schedtest.JobEval(f.job, structs.EvalTriggerReconnect)
			f.h.UpsertEval(e)
			snap, err := f.h.State.Snapshot()
			must.NoError(t, err)
			must.NoError(t, scheduler.NewSystemScheduler(scheduler.Config{State: snap, Planner: f.h, Now: f.h.Clock(), Recorder: rec}).Process(e))
			must.Eq(t, []string{tc.want}, rec.reconnects)
		})
	}
}
