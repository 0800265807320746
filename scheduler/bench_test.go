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

// BenchmarkServiceSched_1000 measures one evaluation placing a 1,000-count
// service job over 100 empty nodes: the reconciler, 1,000 selections and
// the plan.
func BenchmarkServiceSched_1000(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		h := schedtest.NewHarness(b)
		for range 100 {
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

// BenchmarkSystemSched_5000 measures the system scheduler over 5,000 ready
// nodes: "place" is the first evaluation (5,000 single-node selections and
// the plan), "settled" one more evaluation that finds nothing to do.
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
