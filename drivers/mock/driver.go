package mock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/nomad-edge/nomad/helper/clock"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/tasks"
)

// Name is the driver name jobs use in a task's `driver` field.
const Name = "mock_driver"

// HandleVersion is the layout version of the DriverState this driver writes.
const HandleVersion = 1

// Driver is the mock driver. It is safe for concurrent use.
type Driver struct {
	logger hclog.Logger
	clock  clock.Clock
	tasks  *tasks.Set[*taskHandle]
}

var _ drivers.Driver = (*Driver)(nil)

// New builds the driver. The agent's plugin config must be empty: the mock
// driver has no agent-level options. A nil clock means clock.Real().
func New(opts drivers.Options, clk clock.Clock) (*Driver, error) {
	if err := drivers.NewConfigDecoder(opts.Config).Err(); err != nil {
		return nil, fmt.Errorf("plugin %q config: %w", Name, err)
	}
	if clk == nil {
		clk = clock.Real()
	}
	return &Driver{
		logger: opts.LoggerOrNull().Named(Name),
		clock:  clk,
		tasks:  tasks.NewSet[*taskHandle](),
	}, nil
}

// Factory is New with the real clock, as a drivers.Factory.
func Factory(opts drivers.Options) (drivers.Driver, error) { return New(opts, nil) }

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Fingerprint implements drivers.Driver; the mock driver is always usable.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	return &drivers.Fingerprint{
		Detected:          true,
		Healthy:           true,
		HealthDescription: drivers.HealthDescHealthy,
		Attributes:        map[string]string{"driver." + Name: "1"},
	}
}

// driverState is the handle's DriverState.
type driverState struct {
	Config    taskConfig `json:"config"`
	StartedAt time.Time  `json:"started_at"`
}

// StartTask implements drivers.Driver. It blocks for start_block_for, then
// fails with start_error if set.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("starting task: a task config with an ID is required")
	}
	tc, err := decodeTaskConfig(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", cfg.ID, err)
	}
	if err := d.tasks.Reserve(cfg.ID); err != nil {
		return nil, err
	}
	if tc.StartBlockFor > 0 {
		d.sleep(tc.StartBlockFor)
	}
	if tc.StartError != "" {
		d.tasks.Release(cfg.ID)
		return nil, drivers.NewRecoverableError(errors.New(tc.StartError), tc.StartErrorRecoverable)
	}

	now := d.clock.Now()
	h := d.newHandle(cfg.ID, cfg.Name, cfg.StdoutPath, tc, now)
	d.tasks.Fill(cfg.ID, h)
	h.writeStdout(tc.StdoutRepeat)
	if tc.RunFor > 0 {
		h.schedule(&h.runTimer, tc.RunFor, func() { h.exit(tc.result()) })
	}

	return drivers.NewTaskHandle(HandleVersion, cfg, now, driverState{Config: tc, StartedAt: now})
}

// sleep blocks for dur on the driver's clock.
func (d *Driver) sleep(dur time.Duration) {
	done := make(chan struct{})
	d.clock.AfterFunc(dur, func() { close(done) })
	<-done
}

func (d *Driver) newHandle(id, name, stdoutPath string, tc taskConfig, startedAt time.Time) *taskHandle {
	return &taskHandle{
		Task:       tasks.New(id, name, startedAt),
		cfg:        tc,
		clock:      d.clock,
		logger:     d.logger.With("task_id", id),
		stdoutPath: stdoutPath,
	}
}

// RecoverTask implements drivers.Driver. The task resumes with whatever is
// left of its run_for since it first started; one whose run_for ran out while
// the client was away exits at once with its configured result.
func (d *Driver) RecoverTask(handle *drivers.TaskHandle) error {
	var st driverState
	id, tracked, err := d.tasks.OpenHandle(handle, HandleVersion, &st)
	if err != nil || tracked {
		return err
	}
	h := d.newHandle(id, handle.Config.Name, handle.Config.StdoutPath, st.Config, st.StartedAt)
	if err := d.tasks.Add(id, h); err != nil {
		if errors.Is(err, drivers.ErrTaskExists) {
			return nil
		}
		return err
	}
	if st.Config.RunFor > 0 {
		remaining := st.StartedAt.Add(st.Config.RunFor).Sub(d.clock.Now())
		if remaining <= 0 {
			h.exit(st.Config.result())
		} else {
			h.schedule(&h.runTimer, remaining, func() { h.exit(st.Config.result()) })
		}
	}
	return nil
}

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	return tasks.WaitTask(d.tasks, ctx, taskID)
}

// StopTask implements drivers.Driver. The task exits with the stop signal
// after kill_after, or is killed with SIGKILL at timeout if kill_after is not
// shorter; StopTask returns when it has exited.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	return tasks.StopTask(d.tasks, taskID, timeout, signal)
}

// DestroyTask implements drivers.Driver: a forced destroy of a running
// task kills it at once.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	return tasks.DestroyTask(d.tasks, taskID, force)
}

// Stop implements tasks.Stopper: it requests the stop and returns once the
// task has exited.
func (h *taskHandle) Stop(sig syscall.Signal, timeout time.Duration) error {
	h.requestStop(sig, timeout)
	<-h.Done()
	return nil
}

// Release implements tasks.Destroyer: an exited mock task holds nothing.
func (h *taskHandle) Release() error { return nil }

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	return h.Status(nil), nil
}

// taskHandle is one mock task: its exit latch and the timers that will end
// it. Every timer is stopped when the task exits, so an exited task holds
// nothing but memory.
type taskHandle struct {
	*tasks.Task
	cfg        taskConfig
	clock      clock.Clock
	logger     hclog.Logger
	stdoutPath string

	mu          sync.Mutex
	runTimer    clock.Timer // run_for
	stopTimer   clock.Timer // kill_after or the stop timeout
	stdoutTimer clock.Timer // next stdout repeat
}

// schedule arms *slot to call f after dur, unless the task has exited. Checking
// under mu, which exit also takes, guarantees that no timer armed after the
// exit survives it.
func (h *taskHandle) schedule(slot *clock.Timer, dur time.Duration, f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Exited() {
		return
	}
	*slot = h.clock.AfterFunc(dur, f)
}

// exit records the result (first caller wins) and disarms every timer.
func (h *taskHandle) exit(res *drivers.ExitResult) {
	if !h.Exit(res, h.clock.Now()) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range []clock.Timer{h.runTimer, h.stopTimer, h.stdoutTimer} {
		if t != nil {
			t.Stop()
		}
	}
	h.logger.Trace("task exited", "result", res)
}

// requestStop starts a stop. A second request while one is pending does not
// move the deadline: the first stop's timeout already bounds it.
func (h *taskHandle) requestStop(sig syscall.Signal, timeout time.Duration) {
	if sig == syscall.SIGKILL || h.cfg.KillAfter <= 0 {
		h.exit(drivers.SignalExitResult(sig))
		return
	}
	delay, res := h.cfg.KillAfter, drivers.SignalExitResult(sig)
	if h.cfg.KillAfter >= timeout {
		delay, res = timeout, drivers.SignalExitResult(syscall.SIGKILL)
	}
	if delay <= 0 {
		h.exit(res)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.Exited() || h.stopTimer != nil {
		return
	}
	h.stopTimer = h.clock.AfterFunc(delay, func() { h.exit(res) })
}

// writeStdout appends stdout_string to the stdout file and schedules the
// next of the remaining repeats; without a repeat duration they are all
// written at once.
func (h *taskHandle) writeStdout(remaining int) {
	if h.cfg.StdoutString == "" || h.stdoutPath == "" {
		return
	}
	for {
		if h.Exited() {
			return
		}
		if err := appendFile(h.stdoutPath, h.cfg.StdoutString); err != nil {
			h.logger.Warn("failed to write stdout", "error", err)
			return
		}
		if remaining <= 0 {
			return
		}
		remaining--
		if h.cfg.StdoutRepeatDuration > 0 {
			next := remaining
			h.schedule(&h.stdoutTimer, h.cfg.StdoutRepeatDuration, func() { h.writeStdout(next) })
			return
		}
	}
}

// appendFile opens and closes the file on each write, so that thousands of
// idle mock tasks hold no descriptors.
func appendFile(path, s string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(s)
	return errors.Join(werr, f.Close())
}
