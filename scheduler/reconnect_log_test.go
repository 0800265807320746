package scheduler_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// An operator reads in the server log what a reconnect decided, once, with
// the rule that decided it: the original resumed under the group's
// strategy and its replacement stopped. A later evaluation of the settled
// job logs nothing more.
func TestServiceSched_ReconnectLogged(t *testing.T) {
	h, _, job, orig := disconnectFixture(t, structs.ReconcileOptionKeepOriginal)
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	h.Now = h.Now.Add(31 * time.Second)
	process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
	repl := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])[0]

	h.Now = h.Now.Add(time.Minute)
	h.SetNodeStatus(orig.NodeID, structs.NodeStatusReady)
	back := orig.Copy()
	back.ClientStatus = structs.AllocClientStatusRunning
	must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{back}))

	var out bytes.Buffer
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &out})
	run := func(trigger string) {
		t.Helper()
		e := schedtest.JobEval(job, trigger)
		h.UpsertEval(e)
		snap, err := h.State.Snapshot()
		must.NoError(t, err)
		must.NoError(t, scheduler.NewServiceScheduler(scheduler.Config{State: snap, Planner: h, Now: h.Clock(), Logger: logger}).Process(e))
	}
	run(structs.EvalTriggerReconnect)
	log := out.String()
	must.StrContains(t, log, "allocation resumed after its node reconnected: eval_id=")
	must.StrContains(t, log, "alloc_id="+orig.ID)
	must.StrContains(t, log, "rule=keep_original")
	must.StrContains(t, log, "replacement stopped: its original reconnected and was kept")
	must.StrContains(t, log, "alloc_id="+repl.ID)
	must.Eq(t, 2, strings.Count(log, "[INFO]"), must.Sprint(log))

	run(structs.EvalTriggerJobRegister)
	must.Eq(t, 2, strings.Count(out.String(), "[INFO]"), must.Sprint("nothing more once settled: ", out.String()))
}

// Through the scheduler and the state store, the decision record lands on
// both copies whichever wins: the kept original (updated anyway as
// reconnected) and the stopped replacement under keep_original; the kept
// replacement (updated only for its record) and the stopped original under
// keep_replacement. Nothing else of the kept replacement changes.
func TestServiceSched_ReconnectDecisionStored(t *testing.T) {
	for _, strategy := range []string{structs.ReconcileOptionKeepOriginal, structs.ReconcileOptionKeepReplacement} {
		t.Run(strategy, func(t *testing.T) {
			h, _, job, orig := disconnectFixture(t, strategy)
			process(t, h, job, structs.EvalTriggerNodeUpdate)
			h.Now = h.Now.Add(31 * time.Second)
			process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
			repl := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])[0]
			running := repl.Copy()
			running.ClientStatus = structs.AllocClientStatusRunning
			must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{running}))

			h.Now = h.Now.Add(time.Minute)
			h.SetNodeStatus(orig.NodeID, structs.NodeStatusReady)
			back := orig.Copy()
			back.ClientStatus = structs.AllocClientStatusRunning
			must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{back}))
			process(t, h, job, structs.EvalTriggerReconnect)
			e := h.LastEval()

			kept, stopped := orig.ID, repl.ID
			if strategy == structs.ReconcileOptionKeepReplacement {
				kept, stopped = repl.ID, orig.ID
			}
			k, err := h.State.AllocByID(nil, kept)
			must.NoError(t, err)
			s, err := h.State.AllocByID(nil, stopped)
			must.NoError(t, err)
			must.Eq(t, structs.AllocDesiredStatusRun, k.DesiredStatus)
			must.Eq(t, structs.AllocDesiredStatusStop, s.DesiredStatus)
			must.NotNil(t, k.ReconnectDecision)
			must.Eq(t, k.ReconnectDecision, s.ReconnectDecision)
			must.Eq(t, structs.ReconnectDecision{
				Rule: structs.ReconnectRuleStrategy, Strategy: strategy, KeptAllocID: kept, StoppedAllocID: stopped,
				KeptScore: k.ReconnectDecision.KeptScore, StoppedScore: s.ReconnectDecision.StoppedScore,
				EvalID: e.ID, Time: h.Now.UnixNano(),
			}, *k.ReconnectDecision)
			must.Eq(t, structs.AllocClientStatusRunning, k.ClientStatus)
		})
	}
}

// countingRecorder keeps what the scheduler told it.
type countingRecorder struct {
	reconnects       []string // "outcome/rule"
	placed, replaced int
}

func (r *countingRecorder) Reconnect(outcome, rule string) {
	r.reconnects = append(r.reconnects, outcome+"/"+rule)
}

func (r *countingRecorder) DisconnectReplacements(placed, stopped int) {
	r.placed += placed
	r.replaced += stopped
}

// The disconnect counters an operator graphs follow committed decisions:
// one replacement placed for the unknown allocation, then on reconnect one
// resumed original and one stopped replacement, each under the rule that
// decided; a settled job counts nothing more, and a scheduler without a
// Recorder (a dry run) still runs.
func TestServiceSched_DisconnectCounters(t *testing.T) {
	h, _, job, orig := disconnectFixture(t, structs.ReconcileOptionKeepOriginal)
	rec := &countingRecorder{}
	run := func(trigger string, r scheduler.Recorder) {
		t.Helper()
		e := schedtest.JobEval(job, trigger)
		h.UpsertEval(e)
		snap, err := h.State.Snapshot()
		must.NoError(t, err)
		must.NoError(t, scheduler.NewServiceScheduler(scheduler.Config{State: snap, Planner: h, Now: h.Clock(), Recorder: r}).Process(e))
	}
	run(structs.EvalTriggerNodeUpdate, rec)
	must.Eq(t, 0, rec.placed, must.Sprint("the replacement waits for the reschedule delay"))
	h.Now = h.Now.Add(31 * time.Second)
	run(structs.EvalTriggerRetryFailedAlloc, rec)
	must.Eq(t, 1, rec.placed)

	h.Now = h.Now.Add(time.Minute)
	h.SetNodeStatus(orig.NodeID, structs.NodeStatusReady)
	back := orig.Copy()
	back.ClientStatus = structs.AllocClientStatusRunning
	must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{back}))
	run(structs.EvalTriggerReconnect, rec)
	must.SliceContainsAll(t, []string{"resumed/keep_original", "replacement_stopped/keep_original"}, rec.reconnects)
	must.Eq(t, 1, rec.replaced)

	run(structs.EvalTriggerJobRegister, rec)
	run(structs.EvalTriggerJobRegister, nil)
	must.Len(t, 2, rec.reconnects)
	must.Eq(t, 1, rec.placed)
}
