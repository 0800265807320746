package docker

import (
	"testing"

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
	drivertest.BenchStarts(b, benchTasks, func() drivers.Driver {
		d, err := New(drivers.Options{Config: map[string]any{"endpoint": podman.endpoint, "gc": []map[string]any{{"image": false}}}})
		must.NoError(b, err)
		return d
	}, func() *drivers.TaskConfig { return newTaskConfig(b, sh("exec sleep 300")) })
}
