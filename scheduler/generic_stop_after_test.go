package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// stopAfterFixture: two nodes, a group of one whose client stops it after a
// minute without the servers, kill_timeout 10s, running; then its node goes
// down and the node-update evaluation runs. It returns the original and the
// follow-up evaluation that run created.
func stopAfterFixture(t *testing.T) (*schedtest.Harness, *structs.Job, *structs.Allocation, *structs.Evaluation) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node(), mock.Node())
	job := mock.Job()
	stop := time.Minute
	job.TaskGroups[0].Count = 1
	job.TaskGroups[0].StopAfterClientDisconnect = &stop
	job.TaskGroups[0].Tasks[0].KillTimeout = 10 * time.Second
	job = h.UpsertJob(job)
	process(t, h, job, structs.EvalTriggerJobRegister)
	setRunning(t, h, job)
	orig := h.JobAllocs(job)[0]

	h.Now = h.Now.Add(time.Minute)
	h.SetNodeStatus(orig.NodeID, structs.NodeStatusDown)
	process(t, h, job, structs.EvalTriggerNodeUpdate)

	got, err := h.State.AllocByID(nil, orig.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocClientStatusLost, got.ClientStatus)
	must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	must.SliceEmpty(t, schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1]), must.Sprint("the original may still run"))
	must.Len(t, 1, h.CreateEvals)
	followup := h.CreateEvals[0]
	must.Eq(t, structs.EvalTriggerRetryFailedAlloc, followup.TriggeredBy)
	must.Eq(t, h.Now.Add(time.Minute+10*time.Second), followup.WaitUntil)
	must.Eq(t, followup.ID, got.FollowupEvalID)
	return h, job, got, followup
}

// "stop_on_client_after" (docs/concepts/disconnected-clients.md) through the
// scheduler and a real state store: an allocation of a
// group with stop_after_client_disconnect is lost when its node goes down,
// and its replacement is placed only at lost + stop + kill_timeout, by the
// follow-up evaluation, as the original's successor under its name. The
// evaluations that run meanwhile place nothing: the client may still be
// running the original.
func TestServiceSched_StopAfterClientDisconnectDelaysReplacement(t *testing.T) {
	h, job, orig, followup := stopAfterFixture(t)
	lost := h.Now

	h.Now = followup.WaitUntil.Add(-2 * time.Second)
	plans := len(h.Plans)
	process(t, h, job, structs.EvalTriggerJobRegister)
	must.Eq(t, plans, len(h.Plans), must.Sprint("nothing to do before the client has surely stopped it"))
	must.Len(t, 2, h.CreateEvals)
	spare := h.CreateEvals[1]
	must.Eq(t, followup.WaitUntil, spare.WaitUntil, must.Sprint("in case the first was canceled for this one"))
	must.Eq(t, 1, len(h.JobAllocs(job)))

	h.Now = followup.WaitUntil
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, followup))
	must.Eq(t, structs.EvalStatusComplete, h.LastEval().Status)
	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 1, placed)
	repl := placed[0]
	must.Eq(t, orig.ID, repl.PreviousAllocation)
	must.Eq(t, orig.Name, repl.Name)
	must.NotEq(t, orig.NodeID, repl.NodeID)
	must.False(t, time.Unix(0, repl.CreateTime).Before(lost.Add(time.Minute+10*time.Second)))
	got, err := h.State.AllocByID(nil, orig.ID)
	must.NoError(t, err)
	must.Eq(t, repl.ID, got.NextAllocation)
	must.Eq(t, structs.AllocClientStatusLost, got.ClientStatus)

	setRunning(t, h, job)
	plans = len(h.Plans)
	h.Now = h.Now.Add(time.Hour)
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	must.Eq(t, plans, len(h.Plans), must.Sprint("replaced once"))
	must.Eq(t, 2, len(h.JobAllocs(job)))
}

// The broker may cancel the follow-up in favour of a newer evaluation of
// the job; the time, not the evaluation, decides: the first evaluation at
// lost + stop + kill_timeout places the replacement.
func TestServiceSched_StopAfterClientDisconnectFollowupSuperseded(t *testing.T) {
	h, job, orig, followup := stopAfterFixture(t)

	h.Now = followup.WaitUntil
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 1, placed)
	must.Eq(t, orig.ID, placed[0].PreviousAllocation)
}

// Through any sequence of evaluations at any times after a node with
// allocations of a stop_on_client_after group goes down: no replacement is
// ever placed before lost + stop_on_client_after + the largest kill_timeout
// (the client may still run the original until then), the group never
// stands for more than count, and once that time has passed the next
// evaluation brings it back to count. Both halves matter on an edge fleet:
// two copies of a singleton, or a workload lost for good.
func TestProperty_StopAfterClientDisconnectNeverEarlyNeverLost(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := schedtest.NewHarness(rt)
		nodes := []*structs.Node{mock.Node(), mock.Node(), mock.Node()}
		h.UpsertNodes(nodes...)
		job := mock.Job()
		tg := job.TaskGroups[0]
		tg.Count = rapid.IntRange(1, 6).Draw(rt, "count")
		tg.Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
		stop := time.Duration(rapid.IntRange(1, 600).Draw(rt, "stop-seconds")) * time.Second
		tg.Disconnect = &structs.DisconnectStrategy{StopOnClientAfter: &stop}
		var kill time.Duration
		for i := range rapid.IntRange(1, 3).Draw(rt, "tasks") {
			task := tg.Tasks[0].Copy()
			task.Name = fmt.Sprintf("t%d", i)
			task.KillTimeout = time.Duration(rapid.IntRange(0, 60).Draw(rt, "kill-seconds")) * time.Second
			kill = max(kill, task.KillTimeout)
			if task.KillTimeout == 0 {
				kill = max(kill, structs.DefaultKillTimeout)
			}
			tg.Tasks = append(tg.Tasks, task)
		}
		tg.Tasks = tg.Tasks[1:]
		job = h.UpsertJob(job)
		process(rt, h, job, structs.EvalTriggerJobRegister)
		setRunning(rt, h, job)

		h.Now = h.Now.Add(time.Hour)
		lost := h.Now
		h.SetNodeStatus(nodes[0].ID, structs.NodeStatusDown)
		due := lost.Add(stop + kill)

		evals := rapid.IntRange(1, 6).Draw(rt, "evals")
		for i := range evals {
			if i > 0 {
				h.Now = h.Now.Add(time.Duration(rapid.Int64Range(0, int64(stop+kill)).Draw(rt, "advance")))
			}
			trigger := structs.EvalTriggerNodeUpdate
			var e *structs.Evaluation
			if i > 0 && len(h.CreateEvals) > 0 && rapid.Bool().Draw(rt, "run-a-follow-up") {
				// A follow-up runs no earlier than its WaitUntil.
				e = rapid.SampledFrom(h.CreateEvals).Draw(rt, "follow-up")
				if h.Now.Before(e.WaitUntil) {
					h.Now = e.WaitUntil
				}
			} else {
				e = schedtest.JobEval(job, trigger)
				h.UpsertEval(e)
			}
			must.NoError(rt, h.Process(scheduler.NewServiceScheduler, e))

			allocs := h.JobAllocs(job)
			for _, a := range allocs {
				if a.CreateTime >= lost.UnixNano() {
					must.False(rt, time.Unix(0, a.CreateTime).Before(due),
						must.Sprintf("placed at %s, due %s", time.Unix(0, a.CreateTime), due))
				}
			}
			must.LessEq(rt, tg.Count, counted(allocs))
			setRunning(rt, h, job)
		}

		if h.Now.Before(due) {
			h.Now = due
		}
		process(rt, h, job, structs.EvalTriggerNodeUpdate)
		must.Eq(rt, tg.Count, counted(h.JobAllocs(job)))
	})
}
