package rawexec

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
	"github.com/nomad-edge/nomad/drivers/internal/stats"
	"github.com/nomad-edge/nomad/drivers/internal/tasks"
	"github.com/nomad-edge/nomad/helper/clock"
)

// taskState is the DriverState persisted in the task handle: everything a new
// client process needs to find the task again and to make sure it found the
// same process, not a stranger that was given the same pid.
type taskState struct {
	Pid  int `json:"pid"`
	Pgid int `json:"pgid"`
	// StartTime is field 22 of /proc/<pid>/stat: clock ticks after boot at
	// which the process started. Together with BootID it names one process
	// for the lifetime of the node.
	StartTime uint64 `json:"start_time"`
	BootID    string `json:"boot_id,omitempty"`
	// Cgroups is the task's cgroup, nil on hosts without (and in handles
	// written before raw_exec used cgroups).
	Cgroups *cgroup.Cgroups `json:"cgroups,omitempty"`
}

// validate rejects states whose pid or pgid would make a signal hit more than
// the task: kill(-1) reaches every process, kill(0) the client's own group.
// The driver makes every task the leader of its own group, so a pgid other
// than the pid can only come from a corrupt handle.
func (s taskState) validate() error {
	if s.Pid <= 1 || s.Pgid != s.Pid {
		return fmt.Errorf("%w: pid %d, pgid %d", drivers.ErrInvalidHandle, s.Pid, s.Pgid)
	}
	if s.StartTime == 0 {
		return fmt.Errorf("%w: no process start time", drivers.ErrInvalidHandle)
	}
	if s.Cgroups != nil && !s.Cgroups.Valid() {
		return fmt.Errorf("%w: cgroups %v are not the driver's", drivers.ErrInvalidHandle, s.Cgroups.Paths)
	}
	return nil
}

// taskHandle is one tracked task.
type taskHandle struct {
	*tasks.Task
	logger hclog.Logger
	state  taskState // immutable after construction
	// killWait bounds the wait for the task's exit after SIGKILL.
	killWait time.Duration
	cpu      *stats.Sampler

	// recovered is set for tasks re-attached after a client restart; their
	// exit is seen by watch instead of by wait(2).
	recovered bool
	watch     *proc.Watcher
}

// Stop signals the task's group, escalates to SIGKILL after timeout and waits
// for the task to exit, at most killWait after the SIGKILL.
//
// The task is its leader process: once the leader has exited, whatever it
// left in its group is killed. Those processes got the stop signal at the
// same moment as the leader, and a leader that wanted them to finish would
// have waited for them; left alone they would run on, invisible to the client
// (background jobs of a shell ignore SIGINT, for one).
func (h *taskHandle) Stop(sig syscall.Signal, timeout time.Duration) error {
	if h.Exited() {
		return nil
	}
	if err := h.stopLeader(sig, timeout); err != nil {
		return err
	}
	h.killLeftovers()
	return nil
}

// killLeftovers kills what the task left behind: its process group, and
// whatever else is in its cgroup (children that left the group).
func (h *taskHandle) killLeftovers() {
	if err := h.signalGroup(syscall.SIGKILL); err != nil {
		h.logger.Warn("failed to kill leftover processes of task", "pgid", h.state.Pgid, "error", err)
	}
	if h.state.Cgroups != nil {
		h.state.Cgroups.KillAll()
	}
}

// Release implements tasks.Destroyer: leftovers are killed, the cgroup
// removed and the exit watch closed.
func (h *taskHandle) Release() {
	h.killLeftovers()
	if cg := h.state.Cgroups; cg != nil {
		if err := cg.Remove(clock.Real(), h.killWait); err != nil {
			h.logger.Warn("failed to remove the task's cgroup", "error", err)
		}
	}
	if h.watch != nil {
		h.watch.Close()
	}
}

func (h *taskHandle) stopLeader(sig syscall.Signal, timeout time.Duration) error {
	killWait := h.killWait
	if err := h.signalGroup(sig); err != nil {
		return fmt.Errorf("stopping task %q: sending %s: %w", h.ID(), sig, err)
	}
	if sig != syscall.SIGKILL {
		grace := time.NewTimer(timeout)
		defer grace.Stop()
		select {
		case <-h.Done():
			return nil
		case <-grace.C:
		}
		h.logger.Debug("task still running after stop signal, sending SIGKILL", "signal", sig, "timeout", timeout)
		if err := h.signalGroup(syscall.SIGKILL); err != nil {
			return fmt.Errorf("stopping task %q: sending SIGKILL: %w", h.ID(), err)
		}
	}
	wait := time.NewTimer(killWait)
	defer wait.Stop()
	select {
	case <-h.Done():
		return nil
	case <-wait.C:
		return fmt.Errorf("stopping task %q (pid %d): %w within %s", h.ID(), h.state.Pid, ErrKillTimeout, killWait)
	}
}

// signalGroup sends sig to the task's process group. A group that no longer
// exists is not an error.
//
// Once the leader has been reaped its pid may be handed to a new process that
// leads a group of the same number. The group can only be ours if the process
// with pid == pgid is missing (only our leftovers hold the number) or is still
// our leader, so any other owner is left alone.
func (h *taskHandle) signalGroup(sig syscall.Signal) error {
	if err := h.state.validate(); err != nil {
		return err
	}
	if h.state.Pgid == syscall.Getpgrp() {
		return fmt.Errorf("refusing to signal the client's own process group %d", h.state.Pgid)
	}
	if ps, err := proc.ReadStat(h.state.Pgid); err == nil && ps.StartTime != h.state.StartTime {
		return nil
	}
	err := syscall.Kill(-h.state.Pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
