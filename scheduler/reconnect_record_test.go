package scheduler

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// scored gives a the normalised node score best_score compares.
func scored(a *structs.Allocation, score float64) {
	a.Metrics = &structs.AllocMetric{ScoreMetaData: []*structs.NodeScoreMeta{{NodeID: a.NodeID, NormScore: score}}}
}

// records returns the reconnect decision record each allocation of res
// carries in the plan: stopped ones in their stop request, kept ones in
// their update.
func records(res ReconcileResults) map[string]*structs.ReconnectDecision {
	out := map[string]*structs.ReconnectDecision{}
	for _, g := range res.Groups {
		for _, st := range g.Stop {
			if st.alloc.ReconnectDecision != nil {
				out[st.alloc.ID] = st.alloc.ReconnectDecision
			}
		}
		for id, a := range g.Updates.union(g.Recorded) {
			if a.ReconnectDecision != nil {
				out[id] = a.ReconnectDecision
			}
		}
	}
	return out
}

// Every rule that resolves a returning allocation leaves the same record
// on the copy it keeps and the copy it stops: the rule, the group's
// strategy, both IDs, both placement scores, the evaluation and its time.
// It is how an operator answers "why is this copy running and not that
// one?" from `nomad alloc status` on either.
func TestReconcile_ReconnectDecisionRecords(t *testing.T) {
	cases := []struct {
		name      string
		strategy  string
		setup     func(in *ReconcilerInput, o, r *structs.Allocation)
		rule      string
		keptIsOld bool
		noKept    bool
	}{
		{name: "keep_original keeps the original", strategy: structs.ReconcileOptionKeepOriginal,
			rule: structs.ReconnectRuleStrategy, keptIsOld: true},
		{name: "keep_replacement keeps the replacement", strategy: structs.ReconcileOptionKeepReplacement,
			rule: structs.ReconnectRuleStrategy},
		{name: "best_score keeps the better placed", strategy: structs.ReconcileOptionBestScore,
			setup: func(_ *ReconcilerInput, o, r *structs.Allocation) { scored(o, 0.4); scored(r, 0.9) },
			rule:  structs.ReconnectRuleStrategy},
		{name: "a newer job version wins", strategy: structs.ReconcileOptionKeepOriginal,
			setup: func(in *ReconcilerInput, _, r *structs.Allocation) {
				newer := in.Job.Copy()
				newer.Version++
				newer.JobModifyIndex++
				r.Job, in.Job = newer, newer
			},
			rule: structs.ReconnectRuleJobVersion},
		{name: "a failed original is stopped", strategy: structs.ReconcileOptionKeepOriginal,
			setup: func(_ *ReconcilerInput, o, _ *structs.Allocation) { failedAt(o, testNow) },
			rule:  structs.ReconnectRuleFailedOriginal},
		{name: "a failed original with no replacement records no kept copy", strategy: structs.ReconcileOptionKeepOriginal,
			setup: func(in *ReconcilerInput, o, _ *structs.Allocation) {
				failedAt(o, testNow.Add(-time.Hour)) // its reschedule delay has passed
				o.NextAllocation = ""
				in.Allocs = in.Allocs[:1]
			},
			rule: structs.ReconnectRuleFailedOriginal, noKept: true},
		{name: "a service that finished while away is stopped", strategy: structs.ReconcileOptionKeepOriginal,
			setup: func(_ *ReconcilerInput, o, _ *structs.Allocation) { o.ClientStatus = structs.AllocClientStatusComplete },
			rule:  structs.ReconnectRuleFinished},
		{name: "one rescheduled while away is stopped", strategy: structs.ReconcileOptionKeepOriginal,
			setup: func(_ *ReconcilerInput, o, _ *structs.Allocation) { o.DesiredTransition.Reschedule = new(true) },
			rule:  structs.ReconnectRuleRescheduled},
		{name: "one an operator stopped is migrated", strategy: structs.ReconcileOptionKeepOriginal,
			setup: func(_ *ReconcilerInput, o, _ *structs.Allocation) { o.DesiredTransition.Migrate = new(true) },
			rule:  structs.ReconnectRuleMigrated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, o, r := reconnectFixture(tc.strategy)
			in.EvalID = "eval-reconnect"
			scored(o, 0.5)
			scored(r, 0.3)
			if tc.setup != nil {
				tc.setup(&in, o, r)
			}
			res := Reconcile(in)
			for _, g := range res.Groups {
				checkExclusive(t, g)
			}
			kept, stopped := r, o
			if tc.keptIsOld {
				kept, stopped = o, r
			}
			recs := records(res)
			rec := recs[stopped.ID]
			must.NotNil(t, rec, must.Sprint("the stopped copy carries the record"))
			want := &structs.ReconnectDecision{
				Rule: tc.rule, Strategy: tc.strategy,
				KeptAllocID: kept.ID, StoppedAllocID: stopped.ID,
				KeptScore: score(kept), StoppedScore: score(stopped),
				EvalID: "eval-reconnect", Time: testNow.UnixNano(),
			}
			if tc.noKept {
				want.KeptAllocID, want.KeptScore = "", 0
				must.MapLen(t, 1, recs)
			} else {
				must.Eq(t, rec, recs[kept.ID], must.Sprint("the kept copy carries the same record"))
			}
			must.Eq(t, want, rec)
			must.Nil(t, o.ReconnectDecision, must.Sprint("the stored allocations are not written to"))
			must.Nil(t, r.ReconnectDecision)
		})
	}
}

func score(a *structs.Allocation) float64 {
	s, _ := a.Metrics.NodeScore(a.NodeID)
	return s
}

// A replacement that wins only gets its record: it is counted as
// ignored, not as an update, so `job plan` reports no change to it.
func TestReconcile_RecordOnlyCountsAsIgnored(t *testing.T) {
	in, o, r := reconnectFixture(structs.ReconcileOptionKeepReplacement)
	res := Reconcile(in)
	g := res.Groups[0]
	must.MapContainsKey(t, g.Recorded, r.ID)
	must.MapContainsKey(t, g.Ignore, r.ID)
	must.MapNotContainsKey(t, g.Updates, r.ID)
	must.Eq(t, 1, g.DesiredUpdates().Ignore)
	must.Eq(t, o.ID, g.Stop[0].alloc.ID)
}

// A batch allocation that finished while its node was away did its work
// and is kept; it carries a record that names no stopped copy.
func TestReconcile_BatchFinishedRecorded(t *testing.T) {
	in, o, _ := reconnectFixture(structs.ReconcileOptionKeepOriginal)
	in.Job.Type = structs.JobTypeBatch
	o.ClientStatus = structs.AllocClientStatusComplete
	in.Allocs = []*structs.Allocation{o}
	o.NextAllocation = ""
	recs := records(Reconcile(in))
	must.MapLen(t, 1, recs)
	must.Eq(t, structs.ReconnectRuleFinished, recs[o.ID].Rule)
	must.Eq(t, o.ID, recs[o.ID].KeptAllocID)
	must.Eq(t, "", recs[o.ID].StoppedAllocID)
}

// reconnectFixture: a group of one with a window; the original O came back
// running on a ready node after being unknown, and its replacement R runs.
// Allocs[0] is O.
func reconnectFixture(strategy string) (ReconcilerInput, *structs.Allocation, *structs.Allocation) {
	job := withWindow(mock.Job(), time.Hour)
	job.TaskGroups[0].Count = 1
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Reconcile: strategy}
	o := allocsFor(job, 1, structs.AllocClientStatusRunning)[0]
	o.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: testNow.Add(-10 * time.Minute)}}
	r := allocsFor(job, 1, structs.AllocClientStatusRunning)[0]
	r.PreviousAllocation = o.ID
	o.NextAllocation = r.ID
	return ReconcilerInput{Job: job, Allocs: []*structs.Allocation{o, r}, Now: testNow}, o, r
}
