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

// setRunning reports every pending allocation of the job as running, as
// the clients would.
func setRunning(t schedtest.TB, h *schedtest.Harness, job *structs.Job) {
	t.Helper()
	var updates []*structs.Allocation
	for _, a := range h.JobAllocs(job) {
		if a.ClientStatus == structs.AllocClientStatusPending {
			u := a.Copy()
			u.ClientStatus = structs.AllocClientStatusRunning
			u.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: h.Now}}
			updates = append(updates, u)
		}
	}
	must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), updates))
}

func allocsOn(allocs []*structs.Allocation, nodeID string) []*structs.Allocation {
	var out []*structs.Allocation
	for _, a := range allocs {
		if a.NodeID == nodeID {
			out = append(out, a)
		}
	}
	return out
}

func process(t schedtest.TB, h *schedtest.Harness, job *structs.Job, trigger string) {
	t.Helper()
	e := schedtest.JobEval(job, trigger)
	h.UpsertEval(e)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, e))
	must.Eq(t, structs.EvalStatusComplete, h.LastEval().Status)
}

// disconnectFixture: three nodes, a group of three with a one-hour window,
// one allocation per node, all running; then node 0 disconnects.
func disconnectFixture(t *testing.T, strategy string) (*schedtest.Harness, []*structs.Node, *structs.Job, *structs.Allocation) {
	h := schedtest.NewHarness(t)
	nodes := []*structs.Node{mock.Node(), mock.Node(), mock.Node()}
	h.UpsertNodes(nodes...)
	job := mock.Job()
	job.TaskGroups[0].Count = 3
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour, Reconcile: strategy}
	job = h.UpsertJob(job)
	process(t, h, job, structs.EvalTriggerJobRegister)
	setRunning(t, h, job)

	var orig *structs.Allocation
	for _, n := range nodes {
		if on := allocsOn(h.JobAllocs(job), n.ID); len(on) > 0 {
			orig = on[0]
			h.SetNodeStatus(n.ID, structs.NodeStatusDisconnected)
			break
		}
	}
	must.NotNil(t, orig)
	return h, nodes, job, orig
}

// The disconnect lifecycle of "Disconnecting allocations"
// (docs/concepts/disconnected-clients.md): marked unknown with its
// follow-ups,
// replaced after the reschedule delay without being stopped, stopped as
// lost when its window expires, and the group never exceeds its count of
// standing allocations.
func TestServiceSched_DisconnectLifecycle(t *testing.T) {
	h, _, job, orig := disconnectFixture(t, "")

	process(t, h, job, structs.EvalTriggerNodeUpdate)

	got, err := h.State.AllocByID(nil, orig.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocClientStatusUnknown, got.ClientStatus)
	must.Eq(t, structs.AllocUnknown, got.ClientDescription)
	must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
	must.True(t, got.NeedsToReconnect())
	must.SliceEmpty(t, schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1]))
	var timeout, retry *structs.Evaluation
	for _, e := range h.CreateEvals {
		switch e.TriggeredBy {
		case structs.EvalTriggerMaxDisconnectTimeout:
			timeout = e
		case structs.EvalTriggerRetryFailedAlloc:
			retry = e
		}
	}
	must.NotNil(t, timeout)
	must.NotNil(t, retry)
	must.Eq(t, h.Now.Add(time.Hour), timeout.WaitUntil)
	must.Eq(t, h.Now.Add(30*time.Second), retry.WaitUntil)
	must.Eq(t, timeout.ID, got.FollowupEvalID)

	// The replacement follows the reschedule policy.
	h.Now = retry.WaitUntil
	process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 1, placed)
	must.Eq(t, orig.ID, placed[0].PreviousAllocation)
	must.Eq(t, orig.Name, placed[0].Name)
	must.NotEq(t, orig.NodeID, placed[0].NodeID)
	must.NotNil(t, placed[0].RescheduleTracker)
	got, _ = h.State.AllocByID(nil, orig.ID)
	must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus, must.Sprint("the original is not stopped"))
	must.Eq(t, placed[0].ID, got.NextAllocation)
	must.Eq(t, 3, counted(h.JobAllocs(job)))

	// Another evaluation meanwhile changes nothing.
	plans := len(h.Plans)
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	must.Eq(t, plans, len(h.Plans))

	// The window expires: the original is lost, nothing else is placed.
	setRunning(t, h, job)
	h.Now = timeout.WaitUntil
	process(t, h, job, structs.EvalTriggerMaxDisconnectTimeout)
	got, _ = h.State.AllocByID(nil, orig.ID)
	must.Eq(t, structs.AllocClientStatusLost, got.ClientStatus)
	must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	must.SliceEmpty(t, schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1]))
	must.Eq(t, 3, counted(h.JobAllocs(job)))
}

// Reconnect with keep_original (see docs/concepts/disconnected-clients.md,
// "Resolution strategies"): the original is kept with a new
// AllocState and its replacement is stopped as not needed.
func TestServiceSched_ReconnectKeepOriginal(t *testing.T) {
	h, _, job, orig := disconnectFixture(t, structs.ReconcileOptionKeepOriginal)
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	h.Now = h.Now.Add(31 * time.Second)
	process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
	repl := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])[0]

	// The node returns and its client reports the true status.
	h.Now = h.Now.Add(time.Minute)
	h.SetNodeStatus(orig.NodeID, structs.NodeStatusReady)
	back := orig.Copy()
	back.ClientStatus = structs.AllocClientStatusRunning
	back.AllocStates = nil
	must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{back}))

	process(t, h, job, structs.EvalTriggerReconnect)

	got, _ := h.State.AllocByID(nil, orig.ID)
	must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
	must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
	must.False(t, got.NeedsToReconnect())
	r, _ := h.State.AllocByID(nil, repl.ID)
	must.Eq(t, structs.AllocDesiredStatusStop, r.DesiredStatus)
	must.Eq(t, structs.AllocReconnected, r.DesiredDescription)
	must.Eq(t, 3, counted(h.JobAllocs(job)))
}

// A group without a window keeps the old behaviour: allocations on a
// disconnected node are lost and replaced at once.
func TestServiceSched_DisconnectWithoutWindowIsLost(t *testing.T) {
	h := schedtest.NewHarness(t)
	nodes := []*structs.Node{mock.Node(), mock.Node()}
	h.UpsertNodes(nodes...)
	job := mock.Job()
	job.TaskGroups[0].Count = 4
	job = h.UpsertJob(job)
	process(t, h, job, structs.EvalTriggerJobRegister)
	setRunning(t, h, job)
	onDisc := allocsOn(h.JobAllocs(job), nodes[0].ID)
	must.SliceNotEmpty(t, onDisc)
	h.SetNodeStatus(nodes[0].ID, structs.NodeStatusDisconnected)

	process(t, h, job, structs.EvalTriggerNodeUpdate)

	for _, a := range onDisc {
		got, _ := h.State.AllocByID(nil, a.ID)
		must.Eq(t, structs.AllocClientStatusLost, got.ClientStatus)
	}
	must.Len(t, len(onDisc), schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1]))
	must.Eq(t, 4, counted(h.JobAllocs(job)))
}

// allocStop does what the Alloc.Stop RPC does: mark the allocation for
// migration and create an alloc-stop evaluation, in one write; then runs
// that evaluation.
func allocStop(t *testing.T, h *schedtest.Harness, job *structs.Job, a *structs.Allocation) {
	t.Helper()
	yes := true
	e := schedtest.JobEval(job, structs.EvalTriggerAllocStop)
	must.NoError(t, h.State.UpdateAllocsDesiredTransitions(h.NextIndex(),
		map[string]*structs.DesiredTransition{a.ID: {Migrate: &yes}}, []*structs.Evaluation{e}))
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, e))
}

// alloc stop of an unknown allocation with room elsewhere (see docs/concepts/disconnected-clients.md, "Operator actions"): it is
// desired stop at once, described as an operator's stop (not a job
// update), keeps its unknown client status until its client reports, and
// a replacement linked to it is placed on a ready node.
func TestServiceSched_AllocStopUnknown_WithRoom(t *testing.T) {
	h, _, job, orig := disconnectFixture(t, "")
	process(t, h, job, structs.EvalTriggerNodeUpdate)

	allocStop(t, h, job, orig)

	got, _ := h.State.AllocByID(nil, orig.ID)
	must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	must.Eq(t, structs.AllocStopped, got.DesiredDescription)
	must.Eq(t, structs.AllocClientStatusUnknown, got.ClientStatus)
	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 1, placed)
	must.Eq(t, orig.ID, placed[0].PreviousAllocation)
	must.Eq(t, orig.Name, placed[0].Name)
	must.NotEq(t, orig.NodeID, placed[0].NodeID)
	must.Eq(t, 3, counted(h.JobAllocs(job)))
}

// alloc stop of an unknown allocation with no node to take a replacement:
// still desired stop at once (the seed waited for room), the evaluation
// blocks for the replacement, which is placed once a node joins.
func TestServiceSched_AllocStopUnknown_NoRoom(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := mock.Node()
	h.UpsertNodes(node)
	job := mock.Job()
	job.TaskGroups[0].Count = 1
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour, Replace: new(bool)}
	job = h.UpsertJob(job)
	process(t, h, job, structs.EvalTriggerJobRegister)
	setRunning(t, h, job)
	orig := h.JobAllocs(job)[0]
	h.SetNodeStatus(node.ID, structs.NodeStatusDisconnected)
	process(t, h, job, structs.EvalTriggerNodeUpdate)

	allocStop(t, h, job, orig)

	got, _ := h.State.AllocByID(nil, orig.ID)
	must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	must.Eq(t, structs.AllocStopped, got.DesiredDescription)
	must.SliceEmpty(t, schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1]))
	last := h.LastEval()
	must.MapContainsKey(t, last.FailedTGAllocs, "web")
	must.NotEq(t, "", last.BlockedEval)

	h.UpsertNodes(mock.Node())
	blocked, err := h.State.EvalByID(nil, last.BlockedEval)
	must.NoError(t, err)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, blocked))
	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 1, placed)
	must.Eq(t, 1, counted(h.JobAllocs(job)))
}

// alloc stop of an unknown allocation, then its node goes down (see
// docs/concepts/disconnected-clients.md, "Operator actions"): the servers
// never record a terminal client status for it, since its task may still
// run on the cut-off node; it stays unknown until its client reports. The
// seed marked it lost in the node-down evaluation.
func TestServiceSched_StoppedUnknownStaysUnknownOnDownNode(t *testing.T) {
	h, _, job, orig := disconnectFixture(t, "")
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	allocStop(t, h, job, orig)
	got, _ := h.State.AllocByID(nil, orig.ID)
	must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)

	h.Now = h.Now.Add(time.Minute)
	h.SetNodeStatus(orig.NodeID, structs.NodeStatusDown)
	process(t, h, job, structs.EvalTriggerNodeUpdate)

	got, _ = h.State.AllocByID(nil, orig.ID)
	must.Eq(t, structs.AllocClientStatusUnknown, got.ClientStatus)
	must.Eq(t, structs.AllocStopped, got.DesiredDescription)
	must.Eq(t, 3, counted(h.JobAllocs(job)))
}
