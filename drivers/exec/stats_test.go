//go:build linux

package exec

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
	"github.com/nomad-edge/nomad/drivers/internal/users"
)

// A busy task's CPU and memory are read from its cgroups, for
// `alloc status -stats`; a re-attached task's as well.
func TestTaskStats(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", drivertest.BusyLoop)
	h, err := d.StartTask(cfg)
	must.NoError(t, err)

	for _, drv := range []*Driver{d, recovered(t, h)} {
		u := drivertest.BusyStats(t, drv, cfg.ID, 10*time.Second)
		must.Positive(t, u.ResourceUsage.MemoryStats.Usage)
		must.SliceContains(t, u.ResourceUsage.CpuStats.Measured, drivers.MeasuredUserMode)
		must.Positive(t, len(u.Pids))
	}
}

// recovered re-attaches a second driver, a restarted agent, to h's task.
func recovered(t *testing.T, h *drivers.TaskHandle) *Driver {
	t.Helper()
	d2 := newTestDriver(t, nil)
	must.NoError(t, d2.RecoverTask(h.Copy()))
	return d2
}

// A task whose user has a uid the plugin denies does not start.
func TestStartTask_UserDenied(t *testing.T) {
	needIsolation(t)
	nobody, err := users.Lookup("nobody")
	must.NoError(t, err)
	d := newTestDriver(t, map[string]any{"denied_host_uids": strconv.Itoa(nobody.UID)})
	_, err = d.StartTask(newTaskConfig(t, "/bin/true"))
	must.ErrorIs(t, err, users.ErrDenied)
	must.StrContains(t, err.Error(), "denied_host_uids")
}

// A task that ended while no agent watched it leaves its cgroups behind;
// the agent that then fails to re-attach removes them.
func TestRecoverTask_GoneRemovesCgroups(t *testing.T) {
	needIsolation(t)
	d1 := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/true")
	h, err := d1.StartTask(cfg)
	must.NoError(t, err)
	waitExit(t, d1, cfg.ID)
	var st taskState
	must.NoError(t, h.GetDriverState(&st))

	d2 := newTestDriver(t, nil)
	must.ErrorIs(t, d2.RecoverTask(h.Copy()), drivers.ErrTaskNotFound)
	for _, p := range st.Cgroups.Paths {
		_, err := os.Stat(p)
		must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", p))
	}
}
