package scheduler_test

import (
	"sort"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// bigGroupJob is a job whose one group asks for count allocations of which
// ten fill a mock.Node (3,900 usable MHz).
func bigGroupJob(count int) *structs.Job {
	job := mock.Job()
	job.TaskGroups[0].Count = count
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 390, MemoryMB: 64}
	return job
}

func placedIndexes(allocs []*structs.Allocation) []uint {
	out := make([]uint, 0, len(allocs))
	for _, a := range allocs {
		out = append(out, a.Index())
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func indexRange(from, to uint) []uint {
	out := make([]uint, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// A group far larger than the cluster places what fits under the lowest
// names, and its evaluation still reports every allocation it could not
// place: one metric for the first failure, the rest coalesced, all of them
// queued. Operators read these figures in `job status` and the blocked
// evaluation waits on them, so placing lazily must not change them.
func TestServiceSched_CountBeyondCapacityReportsAllFailures(t *testing.T) {
	h := schedtest.NewHarness(t)
	for range 10 {
		h.UpsertNodes(mock.Node())
	}
	job, eval := registerJob(t, h, bigGroupJob(structs.MaxGroupCount))

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	must.Len(t, 1, h.Plans)
	must.Eq(t, indexRange(0, 100), placedIndexes(schedtest.PlacedAllocs(h.Plans[0])))
	last := h.LastEval()
	must.Eq(t, structs.EvalStatusComplete, last.Status)
	m := last.FailedTGAllocs["web"]
	must.NotNil(t, m)
	must.Eq(t, 10, m.NodesEvaluated)
	must.Eq(t, 10, m.NodesExhausted)
	must.Eq(t, structs.MaxGroupCount-101, m.CoalescedFailures)
	must.Eq(t, structs.MaxGroupCount-100, last.QueuedAllocations["web"])
	must.Len(t, 1, h.CreateEvals)
	blocked := h.CreateEvals[0]
	must.Eq(t, structs.EvalStatusBlocked, blocked.Status)
	must.Eq(t, blocked.ID, last.BlockedEval)

	// The blocked evaluation re-run on the full cluster reblocks with the
	// same figures and places nothing.
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, blocked))
	must.Len(t, 1, h.Plans)
	must.Len(t, 1, h.ReblockEvals)
	re := h.ReblockEvals[0]
	must.Eq(t, structs.MaxGroupCount-101, re.FailedTGAllocs["web"].CoalescedFailures)
	must.Eq(t, structs.MaxGroupCount-100, re.QueuedAllocations["web"])

	// A new node takes ten more, under the next free names.
	h.UpsertNodes(mock.Node())
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, blocked))
	must.Len(t, 2, h.Plans)
	must.Eq(t, indexRange(100, 110), placedIndexes(schedtest.PlacedAllocs(h.Plans[1])))
	must.Len(t, 110, desiredRun(h.JobAllocs(job)))
	re = h.ReblockEvals[len(h.ReblockEvals)-1]
	must.Eq(t, structs.MaxGroupCount-111, re.FailedTGAllocs["web"].CoalescedFailures)
	must.Eq(t, structs.MaxGroupCount-110, re.QueuedAllocations["web"])
}

// When a group fails on a replacement (a request of its own, carrying the
// allocation it replaces), its missing instances are coalesced behind it,
// and the gap left by the lost allocation is what a new node fills first.
func TestServiceSched_CountBeyondCapacityAfterLost(t *testing.T) {
	h := schedtest.NewHarness(t)
	nodes := []*structs.Node{mock.Node(), mock.Node()}
	h.UpsertNodes(nodes...)
	job, eval := registerJob(t, h, bigGroupJob(50))
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	must.Len(t, 20, desiredRun(h.JobAllocs(job)))

	h.SetNodeStatus(nodes[0].ID, structs.NodeStatusDown)
	e := schedtest.JobEval(job, structs.EvalTriggerNodeUpdate)
	h.UpsertEval(e)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, e))

	last := h.LastEval()
	m := last.FailedTGAllocs["web"]
	must.NotNil(t, m)
	// Ten lost replacements and thirty missing: one failure, 39 coalesced.
	must.Eq(t, 39, m.CoalescedFailures)
	must.Eq(t, 40, last.QueuedAllocations["web"])

	var lost []uint
	for _, a := range h.JobAllocs(job) {
		if a.ClientStatus == structs.AllocClientStatusLost {
			lost = append(lost, a.Index())
		}
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	must.Len(t, 10, lost)

	h.UpsertNodes(mock.Node())
	blocked := h.CreateEvals[len(h.CreateEvals)-1]
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, blocked))
	replaced := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Eq(t, lost, placedIndexes(replaced), must.Sprint("the lost names come back first"))
	re := h.ReblockEvals[len(h.ReblockEvals)-1]
	must.Eq(t, 29, re.FailedTGAllocs["web"].CoalescedFailures)
	must.Eq(t, 30, re.QueuedAllocations["web"])
}
