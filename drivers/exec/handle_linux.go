//go:build linux

package exec

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

// taskState is the DriverState persisted in the task handle: what a new
// agent needs to find the task again (its host pid, which also leads its
// process group) and to be sure it found the same process, plus its cgroups.
type taskState struct {
	Pid int `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat; with BootID it names
	// one process for the lifetime of the node.
	StartTime uint64         `json:"start_time"`
	BootID    string         `json:"boot_id,omitempty"`
	Cgroups   cgroup.Cgroups `json:"cgroups"`
}

// validate rejects states whose pid would make a signal hit more than the
// task, or whose cgroups are not the driver's.
func (s taskState) validate() error {
	if s.Pid <= 1 || s.StartTime == 0 {
		return fmt.Errorf("%w: pid %d, start time %d", drivers.ErrInvalidHandle, s.Pid, s.StartTime)
	}
	if !s.Cgroups.Valid() {
		return fmt.Errorf("%w: cgroups %v are not the exec driver's", drivers.ErrInvalidHandle, s.Cgroups.Paths)
	}
	return nil
}

// taskHandle is one tracked task.
type taskHandle struct {
	*tasks.Task
	logger hclog.Logger
	clock  clock.Clock
	state  taskState // immutable after construction
	// killWait bounds the wait for the task's exit after SIGKILL.
	killWait time.Duration
	cpu      *stats.Sampler

	// recovered is set for tasks re-attached after an agent restart; their
	// exit is seen by watch instead of by wait(2).
	recovered bool
	watch     *proc.Watcher
}

// Stop signals the task's process group, escalates to SIGKILL after timeout
// and waits for the task to exit, at most killWait after the SIGKILL.
//
// With a private PID namespace the task is its namespace's init: the kernel
// delivers a signal to it from outside only if the task handles that
// signal (SIGKILL always), so a task that ignores the kill signal is killed
// at the timeout, and everything in the namespace dies with it.
func (h *taskHandle) Stop(sig syscall.Signal, timeout time.Duration) error {
	if h.Exited() {
		return nil
	}
	if err := h.signalGroup(sig); err != nil {
		return fmt.Errorf("stopping task %q: sending %s: %w", h.ID(), sig, err)
	}
	if sig != syscall.SIGKILL {
		if clock.Sleep(h.clock, timeout, h.Done()) {
			h.logger.Debug("task still running after stop signal, sending SIGKILL", "signal", sig, "timeout", timeout)
			if err := h.signalGroup(syscall.SIGKILL); err != nil {
				return fmt.Errorf("stopping task %q: sending SIGKILL: %w", h.ID(), err)
			}
		}
	}
	if clock.Sleep(h.clock, h.killWait, h.Done()) {
		return fmt.Errorf("stopping task %q (pid %d): %w within %s", h.ID(), h.state.Pid, ErrKillTimeout, h.killWait)
	}
	// Whatever the task left in its cgroups (with pid_mode = "host" its
	// children outlive it) goes with it.
	h.state.Cgroups.KillAll()
	return nil
}

// signalGroup sends sig to the task's process group and to the task, unless
// its pid now belongs to another process. A group that no longer exists is not an
// error.
func (h *taskHandle) signalGroup(sig syscall.Signal) error {
	if err := h.state.validate(); err != nil {
		return err
	}
	if h.state.Pid == syscall.Getpgrp() {
		return fmt.Errorf("refusing to signal the agent's own process group %d", h.state.Pid)
	}
	if ps, err := proc.ReadStat(h.state.Pid); err == nil && ps.StartTime != h.state.StartTime {
		return nil
	}
	err := syscall.Kill(-h.state.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	// The task itself too, should it have left its group (setsid): with
	// a private PID namespace its death takes everything else along.
	if err2 := syscall.Kill(h.state.Pid, sig); err == nil && !errors.Is(err2, syscall.ESRCH) {
		err = err2
	}
	return err
}

// RecoverTask implements drivers.Driver. It refuses with ErrTaskNotFound when
// the process is gone, the node has rebooted since, or the pid now belongs
// to another process. A recovered task is no longer the agent's child: its
// exit is seen through a pidfd (or /proc), its exit code is unknown, and an
// OOM kill is still told by its cgroup's counters.
func (d *Driver) RecoverTask(handle *drivers.TaskHandle) error {
	if handle == nil || handle.Config == nil || handle.Config.ID == "" {
		return fmt.Errorf("%w: missing task config or ID", drivers.ErrInvalidHandle)
	}
	id := handle.Config.ID
	if handle.Version != HandleVersion {
		return fmt.Errorf("%w: task %q: handle version %d, want %d",
			drivers.ErrInvalidHandle, id, handle.Version, HandleVersion)
	}
	if d.tasks.Has(id) {
		return nil
	}
	var st taskState
	if err := handle.GetDriverState(&st); err != nil {
		return fmt.Errorf("task %q: %w", id, err)
	}
	if err := st.validate(); err != nil {
		return fmt.Errorf("task %q: %w", id, err)
	}
	if cur := proc.BootID(); st.BootID != "" && cur != "" && cur != st.BootID {
		return fmt.Errorf("task %q: %w: the node has rebooted since it started", id, drivers.ErrTaskNotFound)
	}
	w, err := proc.Watch(st.Pid, st.StartTime, proc.WatchOptions{PollInterval: d.exitPollInterval, NoPidfd: d.noPidfd, Clock: d.clock})
	if err != nil {
		if errors.Is(err, drivers.ErrTaskNotFound) {
			st.Cgroups.RemoveIfEmpty(d.logger.With("task_id", id))
		}
		return fmt.Errorf("recovering task %q: %w", id, err)
	}
	h := &taskHandle{
		Task:      tasks.New(id, handle.Config.Name, handle.StartedAt),
		logger:    d.logger.With("task_id", id),
		clock:     d.clock,
		state:     st,
		killWait:  d.killWait,
		cpu:       stats.NewSampler(handle.StartedAt),
		recovered: true,
		watch:     w,
	}
	if err := d.tasks.Add(id, h); err != nil {
		w.Close()
		if errors.Is(err, drivers.ErrTaskExists) {
			return nil // recovered concurrently: theirs stands
		}
		return err
	}
	go func() {
		if w.Wait() {
			res := &drivers.ExitResult{Err: drivers.ErrExitCodeUnknown, OOMKilled: st.Cgroups.OOMKilled()}
			h.Exit(res, d.clock.Now())
			h.logger.Debug("recovered task exited", "pid", st.Pid, "result", res)
		}
	}()
	d.logger.Debug("recovered task", "task_id", id, "pid", st.Pid, "pidfd", w.HasPidfd())
	return nil
}

// FindTask implements drivers.TaskFinder: a task started for cfg by an
// earlier agent is found by its cgroup, named after the task ID, whose
// process group leader is the task.
func (d *Driver) FindTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, fmt.Errorf("%w: finding a task needs its ID", drivers.ErrInvalidHandle)
	}
	version, _ := d.hostCheck()
	if version == 0 {
		return nil, drivers.ErrTaskNotFound
	}
	cg := cgroup.For(version, cgroup.NameFor(cfg.ID), taskControllers())
	for _, pid := range cg.Pids() {
		st, err := proc.ReadStat(pid)
		if err != nil || st.Pgid != pid || st.Exited() {
			continue
		}
		handle := &drivers.TaskHandle{
			Version:   HandleVersion,
			Config:    cfg.Copy(),
			State:     drivers.TaskStateRunning,
			StartedAt: proc.StartedAt(st.StartTime),
		}
		ts := taskState{Pid: pid, StartTime: st.StartTime, BootID: proc.BootID(), Cgroups: cg}
		if err := handle.SetDriverState(ts); err != nil {
			return nil, err
		}
		if err := d.RecoverTask(handle); err != nil {
			return nil, err
		}
		d.logger.Info("found a task left running by an earlier agent", "task_id", cfg.ID, "pid", pid)
		return handle, nil
	}
	return nil, drivers.ErrTaskNotFound
}
