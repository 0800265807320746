package docker

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// A busy container's CPU and memory come from the engine's stats endpoint,
// for `alloc status -stats`.
func TestDriver_TaskStats(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, sh("while :; do :; done"))
	_, err := d.StartTask(cfg)
	must.NoError(t, err)

	deadline := time.Now().Add(20 * time.Second)
	var u *drivers.TaskResourceUsage
	for time.Now().Before(deadline) {
		u, err = d.TaskStats(cfg.ID)
		must.NoError(t, err)
		if u.ResourceUsage.CpuStats.Percent > 0 && u.ResourceUsage.MemoryStats.Usage > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond) // real CPU time must accrue
	}
	must.Positive(t, u.ResourceUsage.CpuStats.Percent, must.Sprintf("cpu %+v", *u.ResourceUsage.CpuStats))
	must.Positive(t, u.ResourceUsage.MemoryStats.Usage, must.Sprintf("mem %+v", *u.ResourceUsage.MemoryStats))

	_, err = d.TaskStats("nope")
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)
}
