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

// A batch job's finished work is never redone: complete allocations are
// not replaced, failed ones are rescheduled by the batch policy.
func TestBatchSched_CompleteNotReplacedFailedRescheduled(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node(), mock.Node())
	job := mock.BatchJob()
	job.TaskGroups[0].Count = 4
	job = h.UpsertJob(job)
	eval := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
	h.UpsertEval(eval)
	must.NoError(t, h.Process(scheduler.NewBatchScheduler, eval))
	allocs := h.JobAllocs(job)
	must.Len(t, 4, allocs)

	finished := h.Now
	var updates []*structs.Allocation
	for i, a := range allocs {
		u := a.Copy()
		u.ClientStatus = structs.AllocClientStatusComplete
		failed := i == 0
		if failed {
			u.ClientStatus = structs.AllocClientStatusFailed
		}
		u.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateDead, Failed: failed, FinishedAt: finished}}
		updates = append(updates, u)
	}
	must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), updates))

	// Before the 5s delay: a follow-up, nothing placed.
	e := schedtest.JobEval(job, structs.EvalTriggerRetryFailedAlloc)
	h.UpsertEval(e)
	must.NoError(t, h.Process(scheduler.NewBatchScheduler, e))
	must.Len(t, 1, h.CreateEvals)
	follow := h.CreateEvals[0]
	must.Eq(t, finished.Add(5*time.Second), follow.WaitUntil)
	must.SliceEmpty(t, schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1]))

	// The follow-up replaces only the failed one.
	h.Now = follow.WaitUntil
	h.UpsertEval(follow)
	must.NoError(t, h.Process(scheduler.NewBatchScheduler, follow))
	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 1, placed)
	must.Eq(t, allocs[0].ID, placed[0].PreviousAllocation)
	must.Len(t, 1, placed[0].RescheduleTracker.Events)
	must.Eq(t, 5*time.Second, placed[0].RescheduleTracker.Events[0].Delay)
	prev, _ := h.State.AllocByID(nil, allocs[0].ID)
	must.Eq(t, structs.AllocDesiredStatusStop, prev.DesiredStatus)
	must.Eq(t, structs.AllocRescheduled, prev.DesiredDescription)
	must.Eq(t, placed[0].ID, prev.NextAllocation)

	// And once more: nothing left to do.
	plans := len(h.Plans)
	e = schedtest.JobEval(job, structs.EvalTriggerNodeUpdate)
	h.UpsertEval(e)
	must.NoError(t, h.Process(scheduler.NewBatchScheduler, e))
	must.Eq(t, plans, len(h.Plans))
}

// A partially rejected plan is retried from the refreshed state, and the
// retry places only what is still missing.
func TestServiceSched_RetriesRejectedPart(t *testing.T) {
	h := schedtest.NewHarness(t)
	nodes := []*structs.Node{mock.Node(), mock.Node(), mock.Node()}
	h.UpsertNodes(nodes...)
	rejected := nodes[0].ID
	first := true
	h.RejectPlan = func(p *structs.Plan) *structs.Plan {
		if !first {
			return p
		}
		first = false
		keep := *p
		keep.NodeAllocation = map[string][]*structs.Allocation{}
		for n, allocs := range p.NodeAllocation {
			if n != rejected {
				keep.NodeAllocation[n] = allocs
			}
		}
		return &keep
	}
	job, eval := registerJob(t, h, mock.Job())

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	must.Len(t, 2, h.Plans)
	must.Len(t, 10, desiredRun(h.JobAllocs(job)))
	last := h.LastEval()
	must.Eq(t, structs.EvalStatusComplete, last.Status)
	must.Eq(t, 0, last.QueuedAllocations["web"])
}
