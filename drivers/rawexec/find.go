package rawexec

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
	"github.com/nomad-edge/nomad/drivers/internal/proctask"
)

var _ drivers.TaskFinder = (*Driver)(nil)

// FindTask implements drivers.TaskFinder: it looks for a process group
// leader whose environment names cfg's allocation and task
// (NOMAD_ALLOC_ID, NOMAD_TASK_NAME: the client sets both on every task) and
// re-attaches to it. Only group leaders count: the driver makes each task
// the leader of its own group, so a task's children are never mistaken for
// it.
func (d *Driver) FindTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" || cfg.AllocID == "" || cfg.Name == "" {
		return nil, fmt.Errorf("%w: finding a task needs its ID, allocation and name", drivers.ErrInvalidHandle)
	}
	if !proc.Supported {
		return nil, drivers.ErrTaskNotFound
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("finding task %q: %w", cfg.ID, err)
	}
	want := [][]byte{[]byte("NOMAD_ALLOC_ID=" + cfg.AllocID), []byte("NOMAD_TASK_NAME=" + cfg.Name)}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == os.Getpid() {
			continue
		}
		st, ok := proctask.Leader(pid)
		if !ok {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !hasAll(bytes.Split(env, []byte{0}), want) {
			continue
		}
		return d.tasks.Adopt(cfg, pid, st, d.existingCgroups(cfg.ID))
	}
	return nil, drivers.ErrTaskNotFound
}

func hasAll(vars [][]byte, want [][]byte) bool {
	for _, w := range want {
		found := false
		for _, v := range vars {
			if bytes.Equal(v, w) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// existingCgroups are the cgroups an earlier client made for the task, if
// they are still there, so that an adopted task keeps its accounting and is
// cleaned up the same way.
func (d *Driver) existingCgroups(taskID string) *cgroup.Cgroups {
	host := d.cgroupHost()
	if host.version == 0 {
		return nil
	}
	cg := cgroup.For(host.version, cgroup.NameFor(taskID), host.controllers)
	for _, p := range cg.Paths {
		if _, err := os.Stat(p); err != nil {
			return nil
		}
	}
	return &cg
}
