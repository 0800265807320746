package rawexec

import (
	"bufio"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A client whose state database was lost finds the tasks an earlier
// client process left running by their environment, and re-attaches to
// them with their true start time instead of starting a second copy: an
// edge device that lost power mid-write must not run its workload twice.
// A task of another allocation is never taken for it.
func TestFindTask_ByEnvironment(t *testing.T) {
	if !proc.Supported {
		t.Skip("raw_exec needs Linux")
	}
	cfg := newTaskConfig(t, "sleep", "30")
	id := structs.GenerateUUID()
	cfg.AllocID, cfg.ID = id, id+"/web"
	cfg.Env = map[string]string{"NOMAD_ALLOC_ID": id, "NOMAD_TASK_NAME": "web"}
	first := newTestDriver(t)
	h, err := first.StartTask(cfg)
	must.NoError(t, err)
	var started taskState
	must.NoError(t, h.GetDriverState(&started))

	// The state that named the task is gone: a new driver, no handle.
	other := cfg.Copy()
	other.AllocID, other.ID = structs.GenerateUUID(), "other/web"
	second := newTestDriver(t)
	_, err = second.FindTask(other)
	must.True(t, errors.Is(err, drivers.ErrTaskNotFound), must.Sprintf("another allocation's task is not adopted: %v", err))

	found, err := second.FindTask(cfg)
	must.NoError(t, err)
	var got taskState
	must.NoError(t, found.GetDriverState(&got))
	must.Eq(t, started.Pid, got.Pid)
	must.Eq(t, started.StartTime, got.StartTime)
	must.Less(t, time.Second, found.StartedAt.Sub(h.StartedAt).Abs(), must.Sprint("the process's own start time, from its stat"))

	// Re-attached: the second driver waits on it and can stop it.
	must.NoError(t, second.StopTask(cfg.ID, time.Second, "SIGTERM"))
	if st, err := proc.ReadStat(started.Pid); err == nil {
		must.True(t, st.Exited(), must.Sprint("the adopted process was stopped"))
	}
}

// A task found while it execs (`echo ready; exec sleep`, the shape of many
// wrapper scripts) is found: its environment reads empty for a moment
// then, and a scan that took that for absent would start the task again.
// Without the re-read, about one in eight of these finds failed.
func TestFindTask_WhileTheTaskExecs(t *testing.T) {
	if !proc.Supported {
		t.Skip("raw_exec needs Linux")
	}
	d := newTestDriver(t)
	for i := range 100 {
		id := structs.GenerateUUID()
		cmd := exec.Command("sh", "-c", "echo ready; exec sleep 300")
		cmd.Env = []string{"NOMAD_ALLOC_ID=" + id, "NOMAD_TASK_NAME=web"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		must.NoError(t, err)
		must.NoError(t, cmd.Start())
		_, err = bufio.NewReader(out).ReadString('\n')
		must.NoError(t, err)
		cfg := newTaskConfig(t, "sleep", "300")
		cfg.AllocID, cfg.ID = id, id+"/web"
		found, err := d.FindTask(cfg)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		must.NoError(t, err, must.Sprintf("find %d", i))
		var got taskState
		must.NoError(t, found.GetDriverState(&got))
		must.Eq(t, cmd.Process.Pid, got.Pid)
		_ = d.DestroyTask(cfg.ID, true)
	}
}
