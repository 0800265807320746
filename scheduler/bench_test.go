package scheduler_test

import (
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
