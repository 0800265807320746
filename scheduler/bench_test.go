package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// BenchmarkServiceSched_1000 measures one evaluation placing a 1,000-count
// service job over empty nodes: the reconciler, 1,000 selections and the
// plan. nodes=1000 is the figure issue 7 sets a target for (under 100 ms
// on 2 cores); nodes=100 is the older row of the benchmarks page.
func BenchmarkServiceSched_1000(b *testing.B) {
	for _, nodes := range []int{100, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				h := schedtest.NewHarness(b)
				for range nodes {
					h.UpsertNodes(mock.Node())
				}
				job := mock.Job()
				job.TaskGroups[0].Count = 1000
				job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
				job = h.UpsertJob(job)
				eval := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
				h.UpsertEval(eval)
				b.StartTimer()

				must.NoError(b, h.Process(scheduler.NewServiceScheduler, eval))

				b.StopTimer()
				must.Len(b, 1000, schedtest.PlacedAllocs(h.Plans[0]))
				b.StartTimer()
			}
		})
	}
}

// reconcileFixture is a 10,000-count service job with a one-hour
// disconnect window running 10 allocations on each of 1,000 nodes, of
// which the first 100 are disconnected: 1,000 allocations on them.
type reconcileFixture struct {
	job     *structs.Job
	allocs  []*structs.Allocation
	tainted map[string]*structs.Node
}

func newReconcileFixture() reconcileFixture {
	job := mock.Job()
	tg := job.TaskGroups[0]
	tg.Count = 10_000
	window := time.Hour
	tg.MaxClientDisconnect = &window
	job.Canonicalize()
	f := reconcileFixture{job: job, tainted: map[string]*structs.Node{}}
	for n := range 1000 {
		node := mock.Node()
		if n < 100 {
			node.Status = structs.NodeStatusDisconnected
			f.tainted[node.ID] = node
		}
		for i := range 10 {
			f.allocs = append(f.allocs, &structs.Allocation{
				ID:                 structs.GenerateUUID(),
				Namespace:          job.Namespace,
				EvalID:             structs.GenerateUUID(),
				Name:               structs.AllocName(job.ID, tg.Name, uint(n*10+i)),
				NodeID:             node.ID,
				NodeName:           node.Name,
				JobID:              job.ID,
				Job:                job,
				TaskGroup:          tg.Name,
				AllocatedResources: structs.NewAllocatedResources(tg),
				Metrics:            &structs.AllocMetric{},
				DesiredStatus:      structs.AllocDesiredStatusRun,
				ClientStatus:       structs.AllocClientStatusRunning,
				CreateIndex:        uint64(100 + n*10 + i),
			})
		}
	}
	return f
}

// BenchmarkReconcile_10000Disconnected measures the reconciler alone on a
// 10,000-allocation job with 1,000 allocations on disconnected nodes
// (issue 7's target: under 30 ms on 2 cores). "disconnecting" is the
// evaluation after the nodes dropped: the 1,000 are marked unknown and get
// two follow-ups, one to replace them after the reschedule delay and one
// for the end of their window; "reconnecting" is the
// one after they came back, their 1,000 replacements running: each pair
// is resolved and the replacements stopped.
func BenchmarkReconcile_10000Disconnected(b *testing.B) {
	now := schedtest.DefaultNow
	b.Run("disconnecting", func(b *testing.B) {
		f := newReconcileFixture()
		in := scheduler.ReconcilerInput{
			Job: f.job, Allocs: f.allocs, TaintedNodes: f.tainted,
			EvalID: structs.GenerateUUID(), EvalPriority: 50, Now: now,
		}
		b.ReportAllocs()
		var res scheduler.ReconcileResults
		for b.Loop() {
			res = scheduler.Reconcile(in)
		}
		g := res.Groups[0]
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
		in := scheduler.ReconcilerInput{
			Job: f.job, Allocs: append(f.allocs, replacements...),
			EvalID: structs.GenerateUUID(), EvalPriority: 50, Now: now,
		}
		b.ReportAllocs()
		var res scheduler.ReconcileResults
		for b.Loop() {
			res = scheduler.Reconcile(in)
		}
		g := res.Groups[0]
		must.Len(b, 1000, g.Stop)
		must.SliceEmpty(b, g.Place)
	})
}

// BenchmarkServiceSched_CountBeyondCapacity measures evaluations of a group
// far larger than a cluster of 10 small nodes that holds 100 of it: "first"
// places the 100 and records the rest as failed, "retry" is the blocked
// evaluation re-run on the full cluster, which places nothing. Each runs at
// count 1,000 and at structs.MaxGroupCount: the cost must follow what can
// be placed plus the nodes, not the count.
func BenchmarkServiceSched_CountBeyondCapacity(b *testing.B) {
	setup := func(b *testing.B, count int) (*schedtest.Harness, *structs.Job) {
		h := schedtest.NewHarness(b)
		for range 10 {
			h.UpsertNodes(mock.Node())
		}
		job := mock.Job()
		job.TaskGroups[0].Count = count
		// mock.Node has 3,900 usable MHz: ten of these fill one.
		job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 390, MemoryMB: 64}
		return h, h.UpsertJob(job)
	}
	for _, count := range []int{1000, structs.MaxGroupCount} {
		b.Run(fmt.Sprintf("first/count=%d", count), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				h, job := setup(b, count)
				eval := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
				h.UpsertEval(eval)
				b.StartTimer()

				must.NoError(b, h.Process(scheduler.NewServiceScheduler, eval))

				b.StopTimer()
				must.Len(b, 100, schedtest.PlacedAllocs(h.Plans[0]))
				b.StartTimer()
			}
		})
		b.Run(fmt.Sprintf("retry/count=%d", count), func(b *testing.B) {
			h, job := setup(b, count)
			eval := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
			h.UpsertEval(eval)
			must.NoError(b, h.Process(scheduler.NewServiceScheduler, eval))
			blocked := h.CreateEvals[len(h.CreateEvals)-1]
			must.Eq(b, structs.EvalStatusBlocked, blocked.Status)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				must.NoError(b, h.Process(scheduler.NewServiceScheduler, blocked))
			}
			b.StopTimer()
			last := h.ReblockEvals[len(h.ReblockEvals)-1]
			must.Eq(b, count-100, last.QueuedAllocations["web"])
		})
	}
}

// acceptingPlanner is a harness whose plans are accepted whole and written
// nowhere, so that a benchmark measures the scheduler without the state
// store's inserts that follow in the plan applier.
type acceptingPlanner struct {
	*schedtest.Harness
	plans []*structs.Plan
}

func (p *acceptingPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	p.plans = append(p.plans, plan)
	return &structs.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation}, nil, nil
}

// BenchmarkSystemSched_5000 measures the system scheduler over 5,000 ready
// nodes: "place" is the first evaluation (5,000 single-node selections and
// the plan, applied by the harness to its state store), "schedule" the
// same with the plan accepted and not applied (the scheduler alone),
// "settled" one more evaluation that finds nothing to do.
func BenchmarkSystemSched_5000(b *testing.B) {
	setup := func(b *testing.B) (*schedtest.Harness, *structs.Job) {
		h := schedtest.NewHarness(b)
		for range 5000 {
			h.UpsertNodes(mock.Node())
		}
		return h, h.UpsertJob(systemJob(structs.JobTypeSystem, 0))
	}
	b.Run("place", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			h, job := setup(b)
			eval := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
			h.UpsertEval(eval)
			b.StartTimer()

			must.NoError(b, h.Process(scheduler.NewSystemScheduler, eval))

			b.StopTimer()
			must.Len(b, 5000, schedtest.PlacedAllocs(h.Plans[0]))
			b.StartTimer()
		}
	})
	b.Run("schedule", func(b *testing.B) {
		h, job := setup(b)
		snap, err := h.State.Snapshot()
		must.NoError(b, err)
		p := &acceptingPlanner{Harness: h}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			eval := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
			sched := scheduler.NewSystemScheduler(scheduler.Config{State: snap, Planner: p, Now: h.Clock()})
			must.NoError(b, sched.Process(eval))
		}
		b.StopTimer()
		must.Len(b, 5000, schedtest.PlacedAllocs(p.plans[len(p.plans)-1]))
	})
	b.Run("settled", func(b *testing.B) {
		h, job := setup(b)
		eval := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
		h.UpsertEval(eval)
		must.NoError(b, h.Process(scheduler.NewSystemScheduler, eval))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			must.NoError(b, h.Process(scheduler.NewSystemScheduler, schedtest.JobEval(job, structs.EvalTriggerNodeUpdate)))
		}
		b.StopTimer()
		must.Len(b, 1, h.Plans)
	})
}
