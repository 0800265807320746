package proctask

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
)

// State is the DriverState persisted in a task handle: what a new agent
// process needs to find the task again, and to be sure it found the same
// process, not a stranger that was given the same pid.
type State struct {
	Pid int `json:"pid"`
	// Pgid is the task's process group, which the task leads. Handles exec
	// wrote before it shared this layout with raw_exec have none: it is
	// the pid.
	Pgid int `json:"pgid,omitempty"`
	// StartTime is field 22 of /proc/<pid>/stat: clock ticks after boot at
	// which the process started. Together with BootID it names one process
	// for the lifetime of the node.
	StartTime uint64 `json:"start_time"`
	BootID    string `json:"boot_id,omitempty"`
	// Cgroups is the task's cgroup; nil for a raw_exec task on a host
	// without (and in handles written before raw_exec used cgroups).
	Cgroups *cgroup.Cgroups `json:"cgroups,omitempty"`
	// Bidirectional are the task's bidirectional volume mounts (exec),
	// whose new mounts a destroy removes from the host.
	Bidirectional []VolumeMounts `json:"bidirectional,omitempty"`
}

// validate rejects states whose pid or pgid would make a signal hit more
// than the task: kill(-1) reaches every process, kill(0) the agent's own
// group. The drivers make every task the leader of its own group, so a pgid
// other than the pid can only come from a corrupt handle; so can cgroups
// outside the drivers'.
func (s State) validate(requireCgroups bool) error {
	if s.Pid <= 1 || s.Pgid != s.Pid {
		return fmt.Errorf("%w: pid %d, pgid %d", drivers.ErrInvalidHandle, s.Pid, s.Pgid)
	}
	if s.StartTime == 0 {
		return fmt.Errorf("%w: no process start time", drivers.ErrInvalidHandle)
	}
	switch {
	case s.Cgroups == nil && requireCgroups:
		return fmt.Errorf("%w: no cgroups", drivers.ErrInvalidHandle)
	case s.Cgroups != nil && !s.Cgroups.Valid():
		return fmt.Errorf("%w: cgroups %v are not the driver's", drivers.ErrInvalidHandle, s.Cgroups.Paths)
	}
	return nil
}

// Launched completes the start of cmd, whose process the driver has just
// started as the leader of its own group, in cg (nil for none): it reads
// the process's start tick, which is there even if it has already exited,
// since only the core's cmd.Wait reaps it. On failure the process is
// killed and reaped.
func Launched(cmd *exec.Cmd, cg *cgroup.Cgroups) (State, error) {
	pid := cmd.Process.Pid
	ps, err := proc.ReadStat(pid)
	if err != nil {
		return State{}, Abort(cmd, fmt.Errorf("reading start time of pid %d: %w", pid, err))
	}
	return State{Pid: pid, Pgid: pid, StartTime: ps.StartTime, BootID: proc.BootID(), Cgroups: cg}, nil
}

// Abort kills the group of cmd's process, started but not handed to the
// core, reaps it and returns err: a start that failed half-way leaves no
// process behind.
func Abort(cmd *exec.Cmd, err error) error {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	return err
}

// Leader returns the stat of pid if it is a running process group leader:
// the drivers make each task lead its own group, so a task's children are
// never taken for it when FindTask looks for a task without a handle.
func Leader(pid int) (proc.Stat, bool) {
	st, err := proc.ReadStat(pid)
	if err != nil || st.Pgid != pid || st.Exited() {
		return proc.Stat{}, false
	}
	return st, true
}

// ExitResult turns the wait status of a task's process into its result.
func ExitResult(ps *os.ProcessState, waitErr error) *drivers.ExitResult {
	if ps == nil {
		return &drivers.ExitResult{Err: fmt.Errorf("waiting for process: %w", waitErr)}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return drivers.SignalExitResult(ws.Signal())
	}
	return &drivers.ExitResult{ExitCode: ps.ExitCode()}
}

// IsTransient reports whether a failed fork or exec is worth retrying: the
// node ran short of processes, memory or descriptors. A missing or
// non-executable command will fail the same way every time.
func IsTransient(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
