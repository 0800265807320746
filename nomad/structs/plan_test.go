package structs_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// AppendStoppedAlloc records a stop of a copy without its job, keyed by the
// allocation's node, and leaves the stored allocation untouched: the
// scheduler works on shared state-store objects.
func TestPlan_AppendStoppedAlloc(t *testing.T) {
	alloc := mock.Alloc()
	alloc.ClientStatus = structs.AllocClientStatusUnknown
	want := alloc.Copy()

	p := &structs.Plan{}
	p.AppendStoppedAlloc(alloc, structs.AllocLost, structs.AllocClientStatusLost, "follow-up")

	must.Eq(t, want, alloc, must.Cmp(cmpopts.EquateEmpty()), must.Sprint("the original allocation is not changed"))
	must.MapLen(t, 1, p.NodeUpdate)
	must.Len(t, 1, p.NodeUpdate[alloc.NodeID])
	stopped := p.NodeUpdate[alloc.NodeID][0]
	must.Eq(t, alloc.ID, stopped.ID)
	must.Nil(t, stopped.Job, must.Sprint("the plan carries the job once, not per allocation"))
	must.Eq(t, structs.AllocDesiredStatusStop, stopped.DesiredStatus)
	must.Eq(t, structs.AllocLost, stopped.DesiredDescription)
	must.Eq(t, structs.AllocClientStatusLost, stopped.ClientStatus)
	must.Eq(t, structs.AllocLost, stopped.ClientDescription, must.Sprint("the description says why the servers decided the status"))
	must.Eq(t, "follow-up", stopped.FollowupEvalID)
}

// Empty client status and follow-up leave the allocation's own values: a
// plain stop must not wipe out what the client last reported.
func TestPlan_AppendStoppedAllocKeepsClientStatus(t *testing.T) {
	alloc := mock.Alloc()
	alloc.ClientStatus = structs.AllocClientStatusRunning
	alloc.FollowupEvalID = "earlier"

	p := &structs.Plan{}
	p.AppendStoppedAlloc(alloc, structs.AllocNotNeeded, "", "")
	stopped := p.NodeUpdate[alloc.NodeID][0]
	must.Eq(t, structs.AllocClientStatusRunning, stopped.ClientStatus)
	must.Eq(t, "earlier", stopped.FollowupEvalID)
	must.Eq(t, structs.AllocDesiredStatusStop, stopped.DesiredStatus)
}

// AppendAlloc files placements and in-place updates under their node, in
// order, as given.
func TestPlan_AppendAlloc(t *testing.T) {
	a1, a2 := mock.Alloc(), mock.Alloc()
	a2.NodeID = a1.NodeID
	other := mock.Alloc()

	p := &structs.Plan{}
	must.True(t, p.IsNoOp())
	p.AppendAlloc(a1)
	p.AppendAlloc(a2)
	p.AppendAlloc(other)
	must.False(t, p.IsNoOp())
	must.Eq(t, []*structs.Allocation{a1, a2}, p.NodeAllocation[a1.NodeID])
	must.Eq(t, []*structs.Allocation{other}, p.NodeAllocation[other.NodeID])
}

// PopUpdate withdraws the stop of that very allocation, wherever it stands
// among its node's updates, the others kept in order, and removes the
// node's entry once empty so the applier sees no work there.
func TestPlan_PopUpdate(t *testing.T) {
	a, b := mock.Alloc(), mock.Alloc()
	b.NodeID = a.NodeID

	p := &structs.Plan{}
	p.AppendStoppedAlloc(a, structs.AllocNotNeeded, "", "")
	p.AppendStoppedAlloc(b, structs.AllocNotNeeded, "", "")

	c := mock.Alloc()
	c.NodeID = a.NodeID
	p.AppendStoppedAlloc(c, structs.AllocNotNeeded, "", "")

	p.PopUpdate(b)
	must.Len(t, 2, p.NodeUpdate[a.NodeID], must.Sprint("b, in the middle, is withdrawn"))
	must.Eq(t, a.ID, p.NodeUpdate[a.NodeID][0].ID)
	must.Eq(t, c.ID, p.NodeUpdate[a.NodeID][1].ID)

	p.PopUpdate(b) // withdrawn already: nothing happens
	must.Len(t, 2, p.NodeUpdate[a.NodeID])

	p.PopUpdate(a)
	p.PopUpdate(c)
	must.MapNotContainsKey(t, p.NodeUpdate, a.NodeID)
	must.True(t, p.IsNoOp())

	p.PopUpdate(mock.Alloc()) // a node with no updates: nothing happens
	must.True(t, p.IsNoOp())
}

// FullCommit compares what the applier committed with the plan, counting
// allocations, so the worker knows to refresh and retry after a partial
// commit (a node rejected because it went disconnected, see
// docs/concepts/disconnected-clients.md, "Plan applier").
func TestPlanResult_FullCommit(t *testing.T) {
	n1a, n1b, n2 := mock.Alloc(), mock.Alloc(), mock.Alloc()
	n1b.NodeID = n1a.NodeID
	stop := mock.Alloc()

	plan := &structs.Plan{}
	plan.AppendAlloc(n1a)
	plan.AppendAlloc(n1b)
	plan.AppendAlloc(n2)
	plan.AppendStoppedAlloc(stop, structs.AllocNotNeeded, "", "")

	full := &structs.PlanResult{NodeAllocation: plan.NodeAllocation, NodeUpdate: plan.NodeUpdate, AllocIndex: 10}
	ok, expected, actual := full.FullCommit(plan)
	must.True(t, ok)
	must.Eq(t, 4, expected)
	must.Eq(t, 4, actual)
	must.False(t, full.IsNoOp())

	partial := &structs.PlanResult{
		NodeAllocation: map[string][]*structs.Allocation{n1a.NodeID: {n1a, n1b}},
		NodeUpdate:     plan.NodeUpdate,
		RefreshIndex:   9,
	}
	ok, expected, actual = partial.FullCommit(plan)
	must.False(t, ok)
	must.Eq(t, 4, expected)
	must.Eq(t, 3, actual)

	none := &structs.PlanResult{RefreshIndex: 9}
	ok, expected, actual = none.FullCommit(plan)
	must.False(t, ok)
	must.Eq(t, 4, expected)
	must.Eq(t, 0, actual)
	must.True(t, none.IsNoOp())
}

// Evaluation statuses: only complete, failed and canceled are terminal;
// pending ones go to the broker and blocked ones wait for capacity.
func TestEvaluation_StatusPredicates(t *testing.T) {
	cases := []struct {
		status                    string
		terminal, enqueue, blocks bool
	}{
		{structs.EvalStatusPending, false, true, false},
		{structs.EvalStatusBlocked, false, false, true},
		{structs.EvalStatusComplete, true, false, false},
		{structs.EvalStatusFailed, true, false, false},
		{structs.EvalStatusCancelled, true, false, false},
	}
	for _, tc := range cases {
		e := &structs.Evaluation{Status: tc.status}
		must.Eq(t, tc.terminal, e.TerminalStatus(), must.Sprint(tc.status))
		must.Eq(t, tc.enqueue, e.ShouldEnqueue(), must.Sprint(tc.status))
		must.Eq(t, tc.blocks, e.ShouldBlock(), must.Sprint(tc.status))
	}
}

// Follow-up evaluations inherit the job and priority, point back at their
// parent, and carry the caller's time (the FSM must not read the clock).
func TestEvaluation_FollowUps(t *testing.T) {
	e := fullEval()
	now := t0.Add(time.Minute)
	check := func(name string, f *structs.Evaluation, trigger, status string) {
		t.Helper()
		must.UUIDv4(t, f.ID, must.Sprint(name))
		must.NotEq(t, e.ID, f.ID)
		must.Eq(t, e.Namespace, f.Namespace)
		must.Eq(t, e.Priority, f.Priority)
		must.Eq(t, e.Type, f.Type)
		must.Eq(t, e.JobID, f.JobID)
		must.Eq(t, e.JobModifyIndex, f.JobModifyIndex)
		must.Eq(t, e.ID, f.PreviousEval)
		must.Eq(t, trigger, f.TriggeredBy, must.Sprint(name))
		must.Eq(t, status, f.Status, must.Sprint(name))
		must.Eq(t, now.UnixNano(), f.CreateTime)
		must.Eq(t, now.UnixNano(), f.ModifyTime)
	}

	rolling := e.NextRollingEval(30*time.Second, now)
	check("rolling", rolling, structs.EvalTriggerRollingUpdate, structs.EvalStatusPending)
	must.Eq(t, 30*time.Second, rolling.Wait)

	class := map[string]bool{"lte": true}
	blocked := e.CreateBlockedEval(class, true, now)
	check("blocked", blocked, structs.EvalTriggerQueuedAllocs, structs.EvalStatusBlocked)
	must.Eq(t, class, blocked.ClassEligibility)
	must.True(t, blocked.EscapedComputedClass)

	failed := e.CreateFailedFollowUpEval(time.Minute, now)
	check("failed", failed, structs.EvalTriggerFailedFollowUp, structs.EvalStatusPending)
	must.Eq(t, time.Minute, failed.Wait)
}

// A job's new evaluation is pending, carries the job's identity, priority
// and modify index (so the scheduler waits for that version), and the
// caller's time.
func TestJob_NewEval(t *testing.T) {
	job := fullJob()
	e := job.NewEval(structs.EvalTriggerJobRegister, t0)
	must.UUIDv4(t, e.ID)
	must.Eq(t, &structs.Evaluation{
		ID: e.ID, Namespace: job.Namespace, Priority: job.Priority, Type: job.Type,
		TriggeredBy: structs.EvalTriggerJobRegister, JobID: job.ID, JobModifyIndex: job.JobModifyIndex,
		Status: structs.EvalStatusPending, CreateTime: t0.UnixNano(), ModifyTime: t0.UnixNano(),
	}, e)
	must.NotEq(t, e.ID, job.NewEval(structs.EvalTriggerJobRegister, t0).ID)
}

// IDs are random RFC 4122 version 4 UUIDs, and the CLI's short form is
// their first eight characters.
func TestGenerateUUIDAndShortID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := structs.GenerateUUID()
		must.UUIDv4(t, id)
		must.MapNotContainsKey(t, seen, id)
		seen[id] = true
	}
	must.Eq(t, "01234567", structs.ShortID("01234567-89ab-4cde-8f01-23456789abcd"))
	must.Eq(t, "short", structs.ShortID("short"))
}

// Requests without a namespace act on the default one.
func TestRequestNamespace(t *testing.T) {
	must.Eq(t, structs.DefaultNamespace, structs.QueryOptions{}.RequestNamespace())
	must.Eq(t, "fleet", structs.QueryOptions{Namespace: "fleet"}.RequestNamespace())
	must.Eq(t, structs.DefaultNamespace, structs.WriteRequest{}.RequestNamespace())
	must.Eq(t, "fleet", structs.WriteRequest{Namespace: "fleet"}.RequestNamespace())
}
