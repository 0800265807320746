package docker

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// BenchmarkDocker_Tasks starts benchTasks containers with the driver, one
// after the other, as the agent would: image inspect, create, start, and
// the log stream and exit wait each container keeps open. It reports the
// mean start latency and what the running containers cost the agent's Go
// memory (the test binary stands in for the agent). The engine's and the
// containers' own memory are not the agent's.
func BenchmarkDocker_Tasks(b *testing.B) {
	if podman.skip != "" {
		b.Skipf("needs a Podman service: %s", podman.skip)
	}
	const benchTasks = 50
	var total time.Duration
	var held int
	for b.Loop() {
		b.StopTimer()
		d, err := New(drivers.Options{Config: map[string]any{"endpoint": podman.endpoint, "gc": []map[string]any{{"image": false}}}})
		must.NoError(b, err)
		cfgs := make([]*drivers.TaskConfig, benchTasks)
		for i := range cfgs {
			cfgs[i] = newTaskConfig(b, sh("exec sleep 300"))
		}
		before := drivertest.HeldKiB()
		b.StartTimer()
		start := time.Now()
		for _, c := range cfgs {
			_, err := d.StartTask(c)
			must.NoError(b, err)
		}
		total += time.Since(start)
		b.StopTimer()
		held += drivertest.HeldKiB() - before
		for _, c := range cfgs {
			must.NoError(b, d.DestroyTask(c.ID, true))
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N*benchTasks)/1000, "ms/start")
	b.ReportMetric(float64(held)/float64(b.N)*100/benchTasks, "agent-KiB/100tasks")
}
