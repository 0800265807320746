package scheduler_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// A batch allocation lost with its node and replaced, whose client comes
// back and reports the kill of its task as complete (recorded over lost, as
// upstream records it), did not do the job's work: its replacement keeps
// running. Counting it done would stop the replacement as not needed and
// the work would never finish.
func TestBatchSched_LostThenCompleteKeepsReplacement(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node(), mock.Node())
	job := mock.BatchJob()
	job.TaskGroups[0].Count = 1
	job = h.UpsertJob(job)
	eval := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
	h.UpsertEval(eval)
	must.NoError(t, h.Process(scheduler.NewBatchScheduler, eval))
	orig := h.JobAllocs(job)[0]
	must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{{ID: orig.ID, ClientStatus: structs.AllocClientStatusRunning}}))

	h.SetNodeStatus(orig.NodeID, structs.NodeStatusDown)
	down := schedtest.JobEval(job, structs.EvalTriggerNodeUpdate)
	h.UpsertEval(down)
	must.NoError(t, h.Process(scheduler.NewBatchScheduler, down))
	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 1, placed)
	repl := placed[0]

	h.SetNodeStatus(orig.NodeID, structs.NodeStatusReady)
	must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{{ID: orig.ID,
		ClientStatus: structs.AllocClientStatusComplete,
		TaskStates:   map[string]*structs.TaskState{"web": {State: structs.TaskStateDead}}}}))
	back := schedtest.JobEval(job, structs.EvalTriggerNodeUpdate)
	h.UpsertEval(back)
	must.NoError(t, h.Process(scheduler.NewBatchScheduler, back))

	got, err := h.State.AllocByID(nil, repl.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus, must.Sprint(got.DesiredDescription))
	o, err := h.State.AllocByID(nil, orig.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocClientStatusComplete, o.ClientStatus)
}
