//go:build linux

package rawexec

import (
	"fmt"
	"os"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
)

func TestMain(m *testing.M) {
	drivertest.RunAgentIfAsked(func() (drivers.Driver, error) {
		return New(drivers.Options{Config: map[string]any{"enabled": true}})
	})
	os.Exit(m.Run())
}

// After the agent is killed with SIGKILL the task runs on in its cgroup; a
// new agent re-attaches to the same process, reads its stats from the
// cgroup named in the handle, and removes that cgroup when it destroys the
// task.
func TestRecoverTask_AfterAgentKill_Stats(t *testing.T) {
	needCgroups(t)
	cfg := newTaskConfig(t, "sh", "-c", busyLoop)
	saved := drivertest.StartInCrashedAgent(t, cfg)
	var st taskState
	must.NoError(t, saved.GetDriverState(&st))
	must.NotNil(t, st.Cgroups)
	ps, err := proc.ReadStat(st.Pid)
	must.NoError(t, err)
	must.False(t, ps.Exited(), must.Sprint("the task outlived its agent"))

	d := newTestDriver(t)
	must.NoError(t, d.RecoverTask(saved))
	u := busyStats(t, d, cfg.ID)
	must.MapContainsKey(t, u.Pids, fmt.Sprint(st.Pid))

	must.NoError(t, d.DestroyTask(cfg.ID, true))
	waitGone(t, st.Pid)
	for _, p := range st.Cgroups.Paths {
		_, err := os.Stat(p)
		must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", p))
	}
}
