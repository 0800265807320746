package proctask

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
	"github.com/nomad-edge/nomad/drivers/internal/stats"
	"github.com/nomad-edge/nomad/drivers/internal/tasks"
	"github.com/nomad-edge/nomad/helper/clock"
)

// DefaultKillWait bounds how long a stop waits for a task to disappear
// after SIGKILL; only a process stuck in the kernel takes longer, and the
// caller should hear about it rather than hang.
const DefaultKillWait = 5 * time.Second

// Options are what a driver decides once for all its tasks.
type Options struct {
	// HandleVersion is the driver's DriverState layout version.
	HandleVersion int
	Logger        hclog.Logger
	// Clock stamps start and exit times and paces stops and the /proc
	// polling of recovered tasks; nil means the real clock.
	Clock clock.Clock
	// KillWait bounds the wait for an exit after SIGKILL; zero means
	// DefaultKillWait.
	KillWait time.Duration
	// PollInterval is how often a recovered task's /proc entry is read
	// where there is no pidfd; zero means proc.DefaultPollInterval.
	PollInterval time.Duration
	// NoPidfd forces the /proc polling fallback for recovered tasks, so
	// that tests exercise the path kernels before 5.10 take.
	NoPidfd bool
	// RequireCgroups refuses a handle without cgroups (exec, whose limits
	// live there).
	RequireCgroups bool
	// OOMFromCgroups reports an OOM kill from the task's cgroup counters
	// (exec, which limits memory; raw_exec's cgroup may be shared).
	OOMFromCgroups bool
}

// Tasks is the process tasks one driver tracks and the Driver methods over
// them. It is safe for concurrent use.
type Tasks struct {
	// Options may be changed by tests before the first task.
	Options
	set *tasks.Set[*Task]
}

// New returns an empty set of tasks.
func New(opts Options) *Tasks {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.KillWait <= 0 {
		opts.KillWait = DefaultKillWait
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = proc.DefaultPollInterval
	}
	return &Tasks{Options: opts, set: tasks.NewSet[*Task]()}
}

// Get returns the tracked task id, or drivers.ErrTaskNotFound.
func (ts *Tasks) Get(id string) (*Task, error) { return ts.set.Get(id) }

// Has reports whether id is tracked or being started.
func (ts *Tasks) Has(id string) bool { return ts.set.Has(id) }

// IDs returns the tracked task IDs, sorted.
func (ts *Tasks) IDs() []string { return ts.set.IDs() }

// StartInput is a task about to be started.
type StartInput struct {
	Config *drivers.TaskConfig
	// Command is what the task runs, for the log.
	Command string
	// Launch starts the task's process (ending with Launched); from its
	// return on, the core owns cmd.Wait.
	Launch func() (*exec.Cmd, State, error)
}

// Start reserves the task's ID, launches it and tracks it, and returns the
// handle the client persists. A duplicate ID is drivers.ErrTaskExists; a
// failed launch frees the ID again.
func (ts *Tasks) Start(in StartInput) (*drivers.TaskHandle, error) {
	cfg := in.Config
	if err := ts.set.Reserve(cfg.ID); err != nil {
		return nil, err
	}
	cmd, st, err := in.Launch()
	if err != nil {
		ts.set.Release(cfg.ID)
		return nil, fmt.Errorf("starting task %q: %w", cfg.ID, err)
	}
	t := ts.newTask(cfg.ID, cfg.Name, st, ts.Clock.Now())
	go func() {
		err := cmd.Wait()
		res := ExitResult(cmd.ProcessState, err)
		ts.exit(t, res)
		t.logger.Debug("task exited", "result", res)
	}()
	ts.set.Fill(cfg.ID, t)
	ts.Logger.Debug("started task", "task_id", cfg.ID, "pid", st.Pid, "command", in.Command)
	return drivers.NewTaskHandle(ts.HandleVersion, cfg, t.StartedAt(), st)
}

func (ts *Tasks) newTask(id, name string, st State, startedAt time.Time) *Task {
	return &Task{
		Task:   tasks.New(id, name, startedAt),
		State:  st,
		opts:   &ts.Options,
		logger: ts.Logger.With("task_id", id),
		cpu:    stats.NewSampler(startedAt),
	}
}

// exit records res, completed with an OOM kill the cgroup counted.
func (ts *Tasks) exit(t *Task, res *drivers.ExitResult) {
	if ts.OOMFromCgroups && t.State.Cgroups != nil {
		res.OOMKilled = t.State.Cgroups.OOMKilled()
	}
	t.Exit(res, ts.Clock.Now())
}

// Recover implements drivers.Driver.RecoverTask. It refuses with
// drivers.ErrTaskNotFound when the node has rebooted since the task started
// (before looking at any pid: after a reboot a pid and start tick name
// nothing of ours), when the process is gone, or when its pid now belongs
// to a process started at another time. A recovered task is no longer the
// agent's child: its exit is seen through a pidfd (or /proc), and its exit
// code is unknown.
func (ts *Tasks) Recover(handle *drivers.TaskHandle) error {
	var st State
	id, tracked, err := ts.set.OpenHandle(handle, ts.HandleVersion, &st)
	if err != nil || tracked {
		return err
	}
	if st.Pgid == 0 {
		st.Pgid = st.Pid
	}
	if err := st.validate(ts.RequireCgroups); err != nil {
		return fmt.Errorf("task %q: %w", id, err)
	}
	if cur := proc.BootID(); st.BootID != "" && cur != "" && cur != st.BootID {
		return fmt.Errorf("task %q: %w: the node has rebooted since it started", id, drivers.ErrTaskNotFound)
	}
	w, err := proc.Watch(st.Pid, st.StartTime, proc.WatchOptions{PollInterval: ts.PollInterval, NoPidfd: ts.NoPidfd, Clock: ts.Clock})
	if err != nil {
		if errors.Is(err, drivers.ErrTaskNotFound) && st.Cgroups != nil {
			st.Cgroups.RemoveIfEmpty(ts.Logger.With("task_id", id))
		}
		return fmt.Errorf("recovering task %q: %w", id, err)
	}
	t := ts.newTask(id, handle.Config.Name, st, handle.StartedAt)
	t.Recovered, t.watch = true, w
	if err := ts.set.Add(id, t); err != nil {
		w.Close()
		if errors.Is(err, drivers.ErrTaskExists) {
			return nil // recovered concurrently: theirs stands
		}
		return err
	}
	go func() {
		if w.Wait() {
			res := &drivers.ExitResult{Err: drivers.ErrExitCodeUnknown}
			ts.exit(t, res)
			t.logger.Debug("recovered task exited", "pid", st.Pid, "result", res)
		}
	}()
	ts.Logger.Debug("recovered task", "task_id", id, "pid", st.Pid, "pidfd", w.HasPidfd())
	return nil
}

// Adopt re-attaches, as Recover would, to pid, a running group leader (see
// Leader) that FindTask found was started for cfg by an earlier agent, in
// cg (nil for none), and returns its handle with the process's own start
// time.
func (ts *Tasks) Adopt(cfg *drivers.TaskConfig, pid int, ps proc.Stat, cg *cgroup.Cgroups) (*drivers.TaskHandle, error) {
	st := State{Pid: pid, Pgid: pid, StartTime: ps.StartTime, BootID: proc.BootID(), Cgroups: cg}
	handle, err := drivers.NewTaskHandle(ts.HandleVersion, cfg, proc.StartedAt(ps.StartTime), st)
	if err != nil {
		return nil, err
	}
	if err := ts.Recover(handle); err != nil {
		return nil, err
	}
	ts.Logger.Info("found a task left running by an earlier agent", "task_id", cfg.ID, "pid", pid)
	return handle, nil
}

// Wait implements drivers.Driver.WaitTask.
func (ts *Tasks) Wait(ctx context.Context, id string) (<-chan *drivers.ExitResult, error) {
	return tasks.WaitTask(ts.set, ctx, id)
}

// Stop implements drivers.Driver.StopTask.
func (ts *Tasks) Stop(id string, timeout time.Duration, signal string) error {
	return tasks.StopTask(ts.set, id, timeout, signal)
}

// Destroy implements drivers.Driver.DestroyTask. It also kills whatever the
// task left running in its process group and its cgroup, and removes the
// cgroup: a task's children do not outlive the task.
func (ts *Tasks) Destroy(id string, force bool) error {
	return tasks.DestroyTask(ts.set, id, force)
}

// Signal implements drivers.Signaler: the signal goes to the task's whole
// process group, as a stop's does, so that a shell wrapper passes a SIGHUP
// on to the program it runs.
func (ts *Tasks) Signal(id, signal string) error { return tasks.SignalTask(ts.set, id, signal) }

// Inspect implements drivers.Driver.InspectTask.
func (ts *Tasks) Inspect(id string) (*drivers.TaskStatus, error) {
	t, err := ts.set.Get(id)
	if err != nil {
		return nil, err
	}
	return t.Status(t.attributes()), nil
}

// Stats implements drivers.StatsReporter: from the task's cgroup where it
// has one, else from /proc for the processes of its group.
func (ts *Tasks) Stats(id string) (*drivers.TaskResourceUsage, error) {
	t, err := ts.set.Get(id)
	if err != nil {
		return nil, err
	}
	now := ts.Clock.Now()
	if cg := t.State.Cgroups; cg != nil {
		return stats.FromCgroup(*cg, t.cpu, now), nil
	}
	return stats.FromProcs(proc.GroupPids(t.State.Pgid), t.cpu, now), nil
}
