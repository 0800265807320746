package allocrunner

import (
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Errors of the operations an operator runs against a live allocation
// (`nomad alloc restart|signal|exec`).
var (
	// ErrUnknownTask is a task name the allocation's group does not have.
	ErrUnknownTask = errors.New("unknown task")
	// ErrTaskNotRunning is an operation that needs a running task.
	ErrTaskNotRunning = errors.New("task is not running")
	// ErrNotSupported is an operation the task's driver does not offer.
	ErrNotSupported = errors.New("not supported by the task's driver")
)

// Dir returns the allocation's directory layout.
func (ar *AllocRunner) Dir() *AllocDir { return ar.allocDir }

// Task returns the runner of the named task.
func (ar *AllocRunner) Task(name string) (*TaskRunner, error) {
	for _, tr := range ar.tasks {
		if tr.Name() == name {
			return tr, nil
		}
	}
	return nil, fmt.Errorf("%w %q in allocation %s", ErrUnknownTask, name, ar.id)
}

// Tasks returns the task runners in the group's order.
func (ar *AllocRunner) Tasks() []*TaskRunner { return ar.tasks }

// selected is the named task, or every task when name is empty.
func (ar *AllocRunner) selected(name string) ([]*TaskRunner, error) {
	if name == "" {
		return ar.tasks, nil
	}
	tr, err := ar.Task(name)
	if err != nil {
		return nil, err
	}
	return []*TaskRunner{tr}, nil
}

// Restart restarts the named task, or every running task when task is
// empty, in place: the restart does not count against the restart policy,
// as upstream's `alloc restart`.
func (ar *AllocRunner) Restart(task string) error {
	trs, err := ar.selected(task)
	if err != nil {
		return err
	}
	var errs []error
	for _, tr := range trs {
		if err := tr.Restart(); err != nil && (task != "" || !errors.Is(err, ErrTaskNotRunning)) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Signal sends sig to the named task, or to every running task when task
// is empty.
func (ar *AllocRunner) Signal(task, sig string) error {
	trs, err := ar.selected(task)
	if err != nil {
		return err
	}
	var errs []error
	for _, tr := range trs {
		if err := tr.Signal(sig); err != nil && (task != "" || !errors.Is(err, ErrTaskNotRunning)) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// running reports whether the task has a live driver handle.
func (tr *TaskRunner) running() bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.handle != nil && tr.state.State == structs.TaskStateRunning
}

// Restart asks Run to stop the task with its kill signal and start it
// again at once. It does not wait for the restart.
func (tr *TaskRunner) Restart() error {
	if !tr.running() || tr.killed() {
		return fmt.Errorf("restarting %q: %w", tr.Name(), ErrTaskNotRunning)
	}
	// The event goes first: once the request is on restartCh, Run may kill
	// and start the task before this goroutine runs again, and the task's
	// events would read Killing, Restarting, Started, Restart Signaled.
	e := newEvent(structs.TaskRestartSignal, tr.clock.Now())
	e.RestartReason = "User requested restart"
	e.DisplayMessage = e.RestartReason
	tr.EmitEvent(e)
	select {
	case tr.restartCh <- restartRequest{reason: "User requested restart"}:
	default:
		// A restart is already on its way; it serves this request too.
	}
	return nil
}

// clearRestart drops a restart asked for while the task was exiting on its
// own: the start about to happen serves it.
func (tr *TaskRunner) clearRestart() {
	select {
	case <-tr.restartCh:
	default:
	}
}

// stopForRestart stops the running task for Restart and leaves it pending,
// so that Run starts it again at once; a check_restart's goes through the
// restart policy instead (restartUnhealthy). It reports whether Run
// should start the task again.
func (tr *TaskRunner) stopForRestart() bool {
	req := tr.restartReq
	timeout := tr.killTimeout()
	e := newEvent(structs.TaskKilling, tr.clock.Now())
	e.KillTimeout = timeout
	e.KillReason = req.reason
	tr.EmitEvent(e)
	stopErr := tr.driver.StopTask(tr.taskID, timeout, tr.task.KillSignal)
	if stopErr != nil {
		tr.logger.Error("failed to stop task for a restart", "error", stopErr)
	}
	if err := tr.driver.DestroyTask(tr.taskID, stopErr != nil); err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
		tr.logger.Warn("failed to destroy task stopped for a restart", "error", err)
	}
	tr.setHandle(nil)
	now := tr.clock.Now()
	if req.failure {
		return tr.handleDecision(tr.restarts.next(now))
	}
	tr.update(func(st *structs.TaskState) {
		r := newEvent(structs.TaskRestarting, now)
		r.RestartReason = "User requested restart"
		r.DisplayMessage = "Task restarting in 0s"
		appendEvent(st, r)
		st.State = structs.TaskStatePending
		st.Restarts++
		st.LastRestart = now.UTC()
	})
	return true
}

// killTimeout is the task's kill_timeout, capped by the client's.
func (tr *TaskRunner) killTimeout() time.Duration {
	timeout := tr.task.KillTimeout
	if timeout <= 0 {
		timeout = structs.DefaultKillTimeout
	}
	if tr.maxKill > 0 && timeout > tr.maxKill {
		timeout = tr.maxKill
	}
	return timeout
}

// Signal sends sig (a name such as "SIGHUP") to the running task through
// its driver.
func (tr *TaskRunner) Signal(sig string) error {
	if !tr.running() {
		return fmt.Errorf("signalling %q: %w", tr.Name(), ErrTaskNotRunning)
	}
	s, ok := tr.driver.(drivers.Signaler)
	if !ok {
		return fmt.Errorf("signalling %q: %w (%s)", tr.Name(), ErrNotSupported, tr.task.Driver)
	}
	num, err := drivers.ParseSignal(sig)
	if err != nil {
		return err
	}
	e := newEvent(structs.TaskSignaling, tr.clock.Now())
	e.Signal = int(num)
	e.DisplayMessage = "Task being sent signal " + sig
	tr.EmitEvent(e)
	return s.SignalTask(tr.taskID, sig)
}

// ExecInfo is what running a command "in" a task needs from it.
type ExecInfo struct {
	Driver string
	// Isolation is the driver's filesystem isolation: a command can only
	// be run beside a task that has none (raw_exec).
	Isolation drivers.FSIsolation
	Env       map[string]string
	Dir       string
	// NetNSPath is the allocation's network namespace in bridge mode:
	// commands run beside the task start there too (Start).
	NetNSPath string
}

// ExecInfo returns the task's environment and working directory.
func (tr *TaskRunner) ExecInfo() (ExecInfo, error) {
	if !tr.running() {
		return ExecInfo{}, fmt.Errorf("exec in %q: %w", tr.Name(), ErrTaskNotRunning)
	}
	cfg := tr.taskConfig()
	return ExecInfo{
		Driver:    tr.task.Driver,
		Isolation: drivers.CapabilitiesOf(tr.driver).FSIsolation,
		Env:       maps.Clone(cfg.Env),
		Dir:       cfg.TaskDir,
		NetNSPath: cfg.NetNSPath,
	}, nil
}

// Stats samples the task's resource usage through its driver. It is nil,
// without error, when the task is not running or its driver reports no
// stats (mock_driver).
func (tr *TaskRunner) Stats() (*drivers.TaskResourceUsage, error) {
	if !tr.running() {
		return nil, nil
	}
	s, ok := tr.driver.(drivers.StatsReporter)
	if !ok {
		return nil, nil
	}
	return s.TaskStats(tr.taskID)
}

// Driver returns the name of the task's driver.
func (tr *TaskRunner) Driver() string { return tr.task.Driver }
