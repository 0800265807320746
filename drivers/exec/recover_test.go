//go:build linux

package exec

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
)

// After the agent is killed with SIGKILL its tasks run on; a new agent
// re-attaches to the same process (same pid, same start time), can stop it,
// and still learns from the cgroup that the kernel OOM-killed it, though
// the exit code went to whoever reaped the orphan.
func TestRecoverTask_AfterAgentKill(t *testing.T) {
	needIsolation(t)
	for _, tc := range []struct {
		name    string
		noPidfd bool
	}{{name: "pidfd"}, {name: "proc polling", noPidfd: true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newTaskConfig(t, "/bin/sh", "-c", "read go < /local/go; exec tail /dev/zero")
			cfg.Resources = drivers.Resources{MemoryMB: 16}
			goFifo := filepath.Join(cfg.LocalDir, "go")
			must.NoError(t, unix.Mkfifo(goFifo, 0o666))
			must.NoError(t, os.Chmod(goFifo, 0o666))
			saved := drivertest.StartInCrashedAgent(t, cfg)
			var st taskState
			must.NoError(t, saved.GetDriverState(&st))
			ps, err := proc.ReadStat(st.Pid)
			must.NoError(t, err)
			must.False(t, ps.Exited(), must.Sprint("the task outlived its agent"))

			d := newTestDriver(t, nil)
			d.tasks.NoPidfd = tc.noPidfd
			d.tasks.PollInterval = 10 * time.Millisecond
			must.NoError(t, d.RecoverTask(saved))
			must.NoError(t, d.RecoverTask(saved), must.Sprint("recovering twice is a no-op"))
			status, err := d.InspectTask(cfg.ID)
			must.NoError(t, err)
			must.Eq(t, drivers.TaskStateRunning, status.State)
			must.Eq(t, itoa(st.Pid), status.DriverAttributes["pid"])
			must.Eq(t, "true", status.DriverAttributes["recovered"])

			// Release the task into its memory hog.
			f, err := os.OpenFile(goFifo, os.O_WRONLY, 0)
			must.NoError(t, err)
			_, err = f.WriteString("go\n")
			must.NoError(t, err)
			must.NoError(t, f.Close())

			res := waitExit(t, d, cfg.ID)
			must.True(t, res.OOMKilled, must.Sprint(res))
			must.ErrorIs(t, res.Err, drivers.ErrExitCodeUnknown)
			must.NoError(t, d.DestroyTask(cfg.ID, false))
			for _, p := range st.Cgroups.Paths {
				_, err := os.Stat(p)
				must.True(t, errors.Is(err, os.ErrNotExist), must.Sprintf("cgroup %s removed", p))
			}
		})
	}
}

// A new agent whose state was lost finds the orphaned task by its cgroup and
// re-attaches to the same process instead of starting a second copy.
func TestFindTask_ByCgroup(t *testing.T) {
	needIsolation(t)
	cfg := newTaskConfig(t, "/bin/sleep", "30")
	saved := drivertest.StartInCrashedAgent(t, cfg)
	var st taskState
	must.NoError(t, saved.GetDriverState(&st))

	d := newTestDriver(t, nil)
	other := newTaskConfig(t, "/bin/sleep", "30")
	_, err := d.FindTask(other)
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)

	found, err := d.FindTask(cfg)
	must.NoError(t, err)
	var got taskState
	must.NoError(t, found.GetDriverState(&got))
	must.Eq(t, st.Pid, got.Pid)
	must.Eq(t, st.StartTime, got.StartTime)

	must.NoError(t, d.StopTask(cfg.ID, 10*time.Millisecond, "SIGTERM"))
	res := waitExit(t, d, cfg.ID)
	must.ErrorIs(t, res.Err, drivers.ErrExitCodeUnknown)
}

// A handle that names cgroups outside the driver's is refused: a corrupt
// state file must not make the agent kill or remove other processes.
func TestRecoverTask_InvalidHandle(t *testing.T) {
	d := newTestDriver(t, nil)
	h := &drivers.TaskHandle{Version: HandleVersion, Config: &drivers.TaskConfig{ID: "a/web"}}
	must.NoError(t, h.SetDriverState(taskState{Pid: 4242, StartTime: 1, Cgroups: &cgroup.Cgroups{Version: 1, Paths: []string{"/sys/fs/cgroup/memory/system.slice"}}}))
	must.ErrorIs(t, d.RecoverTask(h), drivers.ErrInvalidHandle)

	cg := cgroup.For(1, "a.web", cgroupControllers)
	must.NoError(t, h.SetDriverState(taskState{Pid: 1, StartTime: 1, Cgroups: &cg}))
	must.ErrorIs(t, d.RecoverTask(h), drivers.ErrInvalidHandle)

	h.Version = HandleVersion + 1
	must.ErrorIs(t, d.RecoverTask(h), drivers.ErrInvalidHandle)
}
