package rawexec

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

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
		env, err := readEnviron(pid)
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

// environRetry bounds how long readEnviron re-reads an empty environment.
const environRetry = 50 * time.Millisecond

// readEnviron reads a process group leader's environment. A process in the
// middle of execve shows an empty one for a moment (measured here: one
// read in eight right after a `sh -c 'echo ready; exec sleep 300'` task
// printed its line came back empty, for up to 1.2 ms), and a task of that
// common form would be taken for absent and started a second time. An
// empty read is read again, every millisecond, for up to environRetry: a
// task always has an environment (NOMAD_ALLOC_ID at least), and a leader
// with none is rare enough for the wait not to matter.
func readEnviron(pid int) ([]byte, error) {
	path := fmt.Sprintf("/proc/%d/environ", pid)
	deadline := time.Now().Add(environRetry)
	for {
		b, err := os.ReadFile(path)
		if err != nil || len(b) > 0 || !time.Now().Before(deadline) {
			return b, err
		}
		time.Sleep(time.Millisecond)
	}
}
