package proctask

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers/internal/proc"
	"github.com/nomad-edge/nomad/drivers/internal/stats"
	"github.com/nomad-edge/nomad/drivers/internal/tasks"
)

// ErrKillTimeout is returned by StopTask and DestroyTask when the task's
// process is still alive after SIGKILL and the kill wait.
var ErrKillTimeout = errors.New("process did not exit after SIGKILL")

// Task is one tracked process task.
type Task struct {
	*tasks.Task
	// State is what the handle persists; immutable after construction.
	State State
	// Recovered is set for tasks re-attached after an agent restart:
	// their exit is seen by a watch instead of by wait(2).
	Recovered bool

	opts   *Options
	logger hclog.Logger
	cpu    *stats.Sampler
	watch  *proc.Watcher
}

// HasPidfd reports whether the exit of a recovered task is watched through
// a pidfd rather than by polling /proc.
func (t *Task) HasPidfd() bool { return t.watch != nil && t.watch.HasPidfd() }

// Stop implements tasks.Stopper: it signals the task's group, escalates to
// SIGKILL after timeout and waits for the task to exit, at most the kill
// wait after the SIGKILL.
//
// The task is its leader process: once the leader has exited, whatever it
// left in its group and its cgroup is killed. Those processes got the stop
// signal at the same moment as the leader, and a leader that wanted them to
// finish would have waited for them; left alone they would run on,
// invisible to the agent (background jobs of a shell ignore SIGINT, for
// one). With exec's private PID namespace the task is its namespace's
// init: the kernel delivers a signal to it from outside only if it handles
// that signal (SIGKILL always), so a task that ignores the kill signal is
// killed at the timeout, and everything in the namespace dies with it.
func (t *Task) Stop(sig syscall.Signal, timeout time.Duration) error {
	if t.Exited() {
		return nil
	}
	exited, err := tasks.Escalate(tasks.EscalateInput{
		Clock: t.opts.Clock, Done: t.Done(), Send: t.Signal,
		Signal: sig, Timeout: timeout, KillWait: t.opts.KillWait, Logger: t.logger,
	})
	if err != nil {
		return fmt.Errorf("stopping task %q: %w", t.ID(), err)
	}
	if !exited {
		return fmt.Errorf("stopping task %q (pid %d): %w within %s", t.ID(), t.State.Pid, ErrKillTimeout, t.opts.KillWait)
	}
	t.killLeftovers()
	return nil
}

// Release implements tasks.Destroyer: leftovers are killed, the cgroup
// removed and the exit watch closed. A cgroup that cannot be removed is
// logged, not returned: the task is gone either way.
func (t *Task) Release() error {
	t.killLeftovers()
	if cg := t.State.Cgroups; cg != nil {
		if err := cg.Remove(t.opts.Clock, t.opts.KillWait); err != nil {
			t.logger.Warn("failed to remove the task's cgroup", "error", err)
		}
	}
	if t.watch != nil {
		t.watch.Close()
	}
	return nil
}

// killLeftovers kills what the task left behind: its process group, and
// whatever else is in its cgroup (children that left the group).
func (t *Task) killLeftovers() {
	if err := t.Signal(syscall.SIGKILL); err != nil {
		t.logger.Warn("failed to kill leftover processes of task", "pgid", t.State.Pgid, "error", err)
	}
	if cg := t.State.Cgroups; cg != nil {
		cg.KillAll()
	}
}

// Signal implements tasks.Signaller: it sends sig to the task's process
// group, and to the task itself
// should it have left its group (setsid). A group that no longer exists is
// not an error.
//
// Once the leader has been reaped its pid may be handed to a new process
// that leads a group of the same number. The group can only be ours if the
// process with pid == pgid is missing (only our leftovers hold the number)
// or is still our leader, so any other owner is left alone.
func (t *Task) Signal(sig syscall.Signal) error {
	s := t.State
	if err := s.validate(false); err != nil {
		return err
	}
	if s.Pgid == syscall.Getpgrp() {
		return fmt.Errorf("refusing to signal the agent's own process group %d", s.Pgid)
	}
	leader, statErr := proc.ReadStat(s.Pid)
	if statErr == nil && leader.StartTime != s.StartTime {
		return nil
	}
	err := syscall.Kill(-s.Pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	if statErr == nil && leader.Pgid != s.Pgid {
		if err2 := syscall.Kill(s.Pid, sig); err == nil && !errors.Is(err2, syscall.ESRCH) {
			err = err2
		}
	}
	return err
}

// attributes are the task's DriverAttributes.
func (t *Task) attributes() map[string]string {
	attrs := map[string]string{
		"pid":       strconv.Itoa(t.State.Pid),
		"pgid":      strconv.Itoa(t.State.Pgid),
		"recovered": strconv.FormatBool(t.Recovered),
	}
	if cg := t.State.Cgroups; cg != nil && len(cg.Paths) > 0 {
		attrs["cgroup"] = cg.Paths[0]
	}
	return attrs
}
