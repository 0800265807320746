package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// placeTimed times one register evaluation of job by the scheduler
// factory makes, and nothing around it; it returns how many allocations
// the evaluation's first plan placed. The timer is stopped on entry.
func placeTimed(b *testing.B, h *schedtest.Harness, factory scheduler.Factory, job *structs.Job) int {
	eval := schedtest.JobEval(job, structs.EvalTriggerJobRegister)
	h.UpsertEval(eval)
	b.StartTimer()
	must.NoError(b, h.Process(factory, eval))
	b.StopTimer()
	return len(schedtest.PlacedAllocs(h.Plans[0]))
}

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
				must.Eq(b, 1000, placeTimed(b, h, scheduler.NewServiceScheduler, job))
				b.StartTimer()
			}
		})
	}
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
				must.Eq(b, 100, placeTimed(b, h, scheduler.NewServiceScheduler, job))
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
			must.Eq(b, 5000, placeTimed(b, h, scheduler.NewSystemScheduler, job))
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
