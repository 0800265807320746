package docker

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// A busy container's CPU and memory come from the engine's stats endpoint,
// for `alloc status -stats`.
func TestDriver_TaskStats(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, sh(drivertest.BusyLoop))
	_, err := d.StartTask(cfg)
	must.NoError(t, err)

	u := drivertest.BusyStats(t, d, cfg.ID, 20*time.Second)
	must.Positive(t, u.ResourceUsage.MemoryStats.Usage, must.Sprintf("mem %+v", *u.ResourceUsage.MemoryStats))

	_, err = d.TaskStats("nope")
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)
}
