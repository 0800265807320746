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

// rollingSystem: five ready nodes running one allocation each of a system
// job whose update block says max_parallel = 2, stagger = 30s; then the job
// gets a destructive change.
func rollingSystem(t *testing.T, update *structs.UpdateStrategy) (*schedtest.Harness, *structs.Job) {
	t.Helper()
	h := schedtest.NewHarness(t)
	for range 5 {
		h.UpsertNodes(mock.Node())
	}
	job := systemJob(structs.JobTypeSystem, 0)
	job.Update = update
	job.TaskGroups[0].Update = nil
	job.Canonicalize()
	job = h.UpsertJob(job)
	processSystem(t, h, job, structs.EvalTriggerJobRegister)
	setRunning(t, h, job)
	must.MapLen(t, 5, liveByNode(h, job))

	next := job.Copy()
	next.TaskGroups[0].Tasks[0].Env = map[string]string{"REV": "2"}
	return h, h.UpsertJob(next)
}

// byVersion counts the allocations desired run per job version.
func byVersion(h *schedtest.Harness, job *structs.Job) map[uint64]int {
	out := map[uint64]int{}
	for _, on := range liveByNode(h, job) {
		for _, a := range on {
			out[a.Job.Version]++
		}
	}
	return out
}

// A system job's update block rolls a destructive update out max_parallel
// nodes at a time, as upstream does: each evaluation replaces at most two
// allocations and leaves a rolling-update evaluation, stagger later and
// named as its NextEval, for the next two; the last batch leaves none. The
// seed replaced all five at once, whatever the block said.
func TestSystemSched_RollingUpdateMaxParallel(t *testing.T) {
	h, job := rollingSystem(t, &structs.UpdateStrategy{MaxParallel: 2, Stagger: 30 * time.Second})
	e := processSystem(t, h, job, structs.EvalTriggerJobRegister)
	for _, want := range []int{2, 4, 5} {
		must.Eq(t, want, byVersion(h, job)[job.Version], must.Sprint(describeAllocs(h.JobAllocs(job))))
		must.Eq(t, 5, byVersion(h, job)[job.Version]+byVersion(h, job)[job.Version-1])
		if want == 5 {
			must.Eq(t, "", e.NextEval, must.Sprint("the last batch leaves no follow-up"))
			break
		}
		setRunning(t, h, job)
		next, err := h.State.EvalByID(nil, e.NextEval)
		must.NoError(t, err)
		must.NotNil(t, next, must.Sprint("a rolling-update evaluation for the next batch"))
		must.Eq(t, structs.EvalTriggerRollingUpdate, next.TriggeredBy)
		must.Eq(t, 30*time.Second, next.Wait)
		must.Eq(t, e.ID, next.PreviousEval)

		h.Now = h.Now.Add(next.Wait)
		must.NoError(t, h.Process(scheduler.NewSystemScheduler, next))
		e = h.LastEval()
		must.Eq(t, structs.EvalStatusComplete, e.Status)
	}
}

// In-place changes, and a system job without an update block, go out to
// every node in one evaluation: max_parallel limits destructive updates
// only, as upstream.
func TestSystemSched_RollingUpdateLimitsOnlyDestructive(t *testing.T) {
	t.Run("no update block", func(t *testing.T) {
		h, job := rollingSystem(t, nil)
		e := processSystem(t, h, job, structs.EvalTriggerJobRegister)
		must.Eq(t, 5, byVersion(h, job)[job.Version])
		must.Eq(t, "", e.NextEval)
	})
	t.Run("in place", func(t *testing.T) {
		h, job := rollingSystem(t, &structs.UpdateStrategy{MaxParallel: 1, Stagger: time.Minute})
		inplace := job.Copy()
		inplace.TaskGroups[0].Tasks = h.JobAllocs(job)[0].Job.Copy().TaskGroups[0].Tasks // the tasks as they run
		inplace.TaskGroups[0].Meta = map[string]string{"rev": "3"}
		inplace = h.UpsertJob(inplace)
		e := processSystem(t, h, inplace, structs.EvalTriggerJobRegister)
		must.Eq(t, 5, byVersion(h, inplace)[inplace.Version], must.Sprint(describeAllocs(h.JobAllocs(inplace))))
		must.Eq(t, "", e.NextEval)
		must.SliceEmpty(t, schedtest.StoppedAllocs(h.Plans[len(h.Plans)-1]))
	})
}
