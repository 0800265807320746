package scheduler

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// reconcileFixture is a 10,000-count service job with a one-hour
// disconnect window running 10 allocations on each of 1,000 nodes, of
// which the first 100 are disconnected: 1,000 allocations on them.
type reconcileFixture struct {
	job     *structs.Job
	allocs  []*structs.Allocation
	tainted map[string]*structs.Node
}

func newReconcileFixture() reconcileFixture {
	job := withWindow(mock.Job(), time.Hour)
	job.TaskGroups[0].Count = 10_000
	f := reconcileFixture{
		job: job, allocs: allocsFor(job, 10_000, structs.AllocClientStatusRunning),
		tainted: map[string]*structs.Node{},
	}
	for n := range 1000 {
		node := mock.Node()
		if n < 100 {
			node.Status = structs.NodeStatusDisconnected
			f.tainted[node.ID] = node
		}
		for _, a := range f.allocs[n*10 : n*10+10] {
			a.NodeID, a.NodeName = node.ID, node.Name
		}
	}
	return f
}

// BenchmarkReconcile_10000Disconnected measures the reconciler alone on a
// 10,000-allocation job with 1,000 allocations on disconnected nodes
// (issue 7's target: under 30 ms on 2 cores). "disconnecting" is the
// evaluation after the nodes dropped: the 1,000 are marked unknown and get
// two follow-ups, one to replace them after the reschedule delay and one
// for the end of their window; "reconnecting" is the one after they came
// back, their 1,000 replacements running: each pair is resolved and the
// replacements stopped.
func BenchmarkReconcile_10000Disconnected(b *testing.B) {
	now := testNow
	b.Run("disconnecting", func(b *testing.B) {
		f := newReconcileFixture()
		in := ReconcilerInput{
			Job: f.job, Allocs: f.allocs, TaintedNodes: f.tainted, EvalID: structs.GenerateUUID(), EvalPriority: 50, Now: now,
		}
		g := benchReconcile(b, in)
		must.MapLen(b, 1000, g.Disconnect)
		must.MapLen(b, 1000, g.RescheduleLater)
		must.Len(b, 2, g.FollowupEvals)
	})
	b.Run("reconnecting", func(b *testing.B) {
		f := newReconcileFixture()
		since := now.Add(-10 * time.Minute)
		var replacements []*structs.Allocation
		for _, a := range f.allocs {
			if _, ok := f.tainted[a.NodeID]; !ok {
				continue
			}
			// The client reported it running again after it was unknown.
			a.AllocStates = []*structs.AllocState{{
				Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: since,
			}}
			r := a.Copy()
			r.ID = structs.GenerateUUID()
			r.NodeID = structs.GenerateUUID()
			r.PreviousAllocation = a.ID
			r.AllocStates = nil
			r.CreateIndex = a.CreateIndex + 20_000
			a.NextAllocation = r.ID
			replacements = append(replacements, r)
		}
		in := ReconcilerInput{
			Job: f.job, Allocs: append(f.allocs, replacements...),
			EvalID: structs.GenerateUUID(), EvalPriority: 50, Now: now,
		}
		g := benchReconcile(b, in)
		must.Len(b, 1000, g.Stop)
		must.SliceEmpty(b, g.Place)
	})
}

// benchReconcile times the reconciler on in and returns its first group's
// results, for the benchmark to check.
func benchReconcile(b *testing.B, in ReconcilerInput) *GroupResults {
	b.ReportAllocs()
	var res ReconcileResults
	for b.Loop() {
		res = Reconcile(in)
	}
	return res.Groups[0]
}
