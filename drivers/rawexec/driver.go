package rawexec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
	"github.com/nomad-edge/nomad/drivers/internal/tasks"
)

// Name is the driver name jobs use in a task's `driver` field.
const Name = "raw_exec"

// HandleVersion is the layout version of the DriverState this driver writes.
const HandleVersion = 1

// defaultPath is the PATH a task gets unless its env sets one. Tasks do not
// inherit the client's environment: the client's secrets and settings are none
// of a task's business, and a task must behave the same whichever way the
// client was started.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

const (
	// defaultKillWait bounds how long StopTask waits for a process group
	// to disappear after SIGKILL; only a process stuck in the kernel takes
	// longer, and the caller should hear about it rather than hang.
	defaultKillWait = 5 * time.Second
)

// ErrUserNotSupported refuses a task that sets `user`.
var ErrUserNotSupported = errors.New("the task's user is not supported")

// ErrKillTimeout is returned by StopTask and DestroyTask when the task's
// process is still alive after SIGKILL and the kill wait.
var ErrKillTimeout = errors.New("process did not exit after SIGKILL")

// Driver is the raw_exec driver. It is safe for concurrent use.
type Driver struct {
	logger  hclog.Logger
	enabled bool
	tasks   *tasks.Set[*taskHandle]

	killWait         time.Duration
	exitPollInterval time.Duration
	// noPidfd forces the /proc polling fallback for recovered tasks, so
	// that tests exercise the path kernels before 5.10 take.
	noPidfd bool
}

var _ drivers.Driver = (*Driver)(nil)

// New builds the driver from the agent's plugin config. The only key is
// `enabled` (bool, default false).
func New(opts drivers.Options) (*Driver, error) {
	dec := drivers.NewConfigDecoder(opts.Config)
	enabled := dec.Bool("enabled")
	if err := dec.Err(); err != nil {
		return nil, fmt.Errorf("plugin %q config: %w", Name, err)
	}
	return &Driver{
		logger:           opts.LoggerOrNull().Named(Name),
		enabled:          enabled,
		tasks:            tasks.NewSet[*taskHandle](),
		killWait:         defaultKillWait,
		exitPollInterval: proc.DefaultPollInterval,
	}, nil
}

// Factory is New as a drivers.Factory.
func Factory(opts drivers.Options) (drivers.Driver, error) { return New(opts) }

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }

// Fingerprint implements drivers.Driver. A disabled driver is detected but
// unhealthy, so that operators see why the scheduler will not use it.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	switch {
	case !proc.Supported:
		return &drivers.Fingerprint{HealthDescription: drivers.HealthDescUndetected}
	case !d.enabled:
		return &drivers.Fingerprint{Detected: true, HealthDescription: drivers.HealthDescDisabled}
	default:
		return &drivers.Fingerprint{
			Detected:          true,
			Healthy:           true,
			HealthDescription: drivers.HealthDescHealthy,
			Attributes:        map[string]string{"driver." + Name: "1"},
		}
	}
}

// taskConfig is the decoded `config` block of a raw_exec task.
type taskConfig struct {
	Command string
	Args    []string
}

func decodeTaskConfig(m map[string]any) (taskConfig, error) {
	dec := drivers.NewConfigDecoder(m)
	tc := taskConfig{
		Command: dec.RequiredString("command"),
		Args:    dec.StringSlice("args"),
	}
	return tc, dec.Err()
}

// StartTask implements drivers.Driver.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("starting task: a task config with an ID is required")
	}
	if !proc.Supported {
		return nil, fmt.Errorf("starting task %q: %s is only supported on Linux", cfg.ID, Name)
	}
	if !d.enabled {
		return nil, fmt.Errorf("starting task %q: %w: set enabled = true in the agent's plugin %q config",
			cfg.ID, drivers.ErrDriverDisabled, Name)
	}
	tc, err := decodeTaskConfig(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", cfg.ID, err)
	}
	if cfg.User != "" {
		// Running it as the agent's user instead would ignore the job.
		return nil, fmt.Errorf("task %q: %w: %s runs tasks as the agent's user", cfg.ID, ErrUserNotSupported, Name)
	}
	if err := d.tasks.Reserve(cfg.ID); err != nil {
		return nil, err
	}
	h, err := d.start(cfg, tc)
	if err != nil {
		d.tasks.Release(cfg.ID)
		return nil, fmt.Errorf("starting task %q: %w", cfg.ID, err)
	}
	d.tasks.Fill(cfg.ID, h)

	handle := &drivers.TaskHandle{
		Version:   HandleVersion,
		Config:    cfg.Copy(),
		State:     drivers.TaskStateRunning,
		StartedAt: h.StartedAt(),
	}
	if err := handle.SetDriverState(h.state); err != nil {
		return nil, err
	}
	d.logger.Debug("started task", "task_id", cfg.ID, "pid", h.state.Pid, "command", tc.Command)
	return handle, nil
}

// start forks the task's process. On success a goroutine owns cmd.Wait and
// records the exit in the returned handle.
func (d *Driver) start(cfg *drivers.TaskConfig, tc taskConfig) (*taskHandle, error) {
	if cfg.TaskDir != "" {
		if err := os.MkdirAll(cfg.TaskDir, 0o755); err != nil {
			return nil, fmt.Errorf("creating task dir: %w", err)
		}
	}
	cmd := exec.Command(tc.Command, tc.Args...)
	cmd.Dir = cfg.TaskDir
	cmd.Env = taskEnv(cfg.Env)
	// A group of its own lets StopTask signal the task's whole process
	// tree. No Pdeathsig: the task must outlive a client restart.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	// The files are handed to the child as its fds 1 and 2 and closed here
	// once it runs: no copying goroutine, and no pipe that a crashed client
	// would leave the task writing into.
	stdout, err := openLog(cfg.StdoutPath)
	if err != nil {
		return nil, fmt.Errorf("opening stdout: %w", err)
	}
	if stdout != nil {
		defer stdout.Close()
		cmd.Stdout = stdout
	}
	stderr, err := openLog(cfg.StderrPath)
	if err != nil {
		return nil, fmt.Errorf("opening stderr: %w", err)
	}
	if stderr != nil {
		defer stderr.Close()
		cmd.Stderr = stderr
	}

	if err := cmd.Start(); err != nil {
		return nil, drivers.NewRecoverableError(err, isTransient(err))
	}
	pid := cmd.Process.Pid
	// The child is not reaped until cmd.Wait below, so its /proc entry is
	// there even if it has already exited.
	ps, err := proc.ReadStat(pid)
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, fmt.Errorf("reading start time of pid %d: %w", pid, err)
	}

	h := &taskHandle{
		Task:   tasks.New(cfg.ID, cfg.Name, time.Now()),
		logger: d.logger.With("task_id", cfg.ID),
		state: taskState{
			Pid:       pid,
			Pgid:      pid,
			StartTime: ps.StartTime,
			BootID:    proc.BootID(),
		},
	}
	go func() {
		err := cmd.Wait()
		res := exitResult(cmd.ProcessState, err)
		h.Exit(res, time.Now())
		h.logger.Debug("task exited", "result", res)
	}()
	return h, nil
}

// exitResult turns a wait status into the driver's result.
func exitResult(ps *os.ProcessState, waitErr error) *drivers.ExitResult {
	if ps == nil {
		return &drivers.ExitResult{Err: fmt.Errorf("waiting for process: %w", waitErr)}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return drivers.SignalExitResult(ws.Signal())
	}
	return &drivers.ExitResult{ExitCode: ps.ExitCode()}
}

// isTransient reports whether a failed fork or exec is worth retrying: the
// node ran short of processes, memory or descriptors. A missing or
// non-executable command will fail the same way every time.
func isTransient(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// taskEnv is the task's environment on top of a minimal base, sorted so that
// a process's environment does not depend on map order.
func taskEnv(env map[string]string) []string {
	all := map[string]string{"PATH": defaultPath}
	maps.Copy(all, env)
	out := make([]string, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		out = append(out, k+"="+all[k])
	}
	return out
}

// openLog opens path for appending, creating it and its directory. An empty
// path returns nil, which exec maps to /dev/null.
func openLog(path string) (*os.File, error) { return drivers.OpenTaskLog(path) }

// RecoverTask implements drivers.Driver. It refuses with ErrTaskNotFound when
// the process is gone, the node has rebooted since, or the pid now belongs to
// a process started at another time.
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

	w, err := proc.Watch(st.Pid, st.StartTime, proc.WatchOptions{PollInterval: d.exitPollInterval, NoPidfd: d.noPidfd})
	if err != nil {
		return fmt.Errorf("recovering task %q: %w", id, err)
	}
	h := &taskHandle{
		Task:      tasks.New(id, handle.Config.Name, handle.StartedAt),
		logger:    d.logger.With("task_id", id),
		state:     st,
		recovered: true,
		watch:     w,
	}
	if err := d.tasks.Add(id, h); err != nil {
		// Recovered concurrently by another caller: theirs stands.
		w.Close()
		if errors.Is(err, drivers.ErrTaskExists) {
			return nil
		}
		return err
	}
	go func() {
		if w.Wait() {
			h.Exit(&drivers.ExitResult{Err: drivers.ErrExitCodeUnknown}, time.Now())
			h.logger.Debug("recovered task exited", "pid", st.Pid)
		}
	}()
	d.logger.Debug("recovered task", "task_id", id, "pid", st.Pid, "pidfd", w.HasPidfd())
	return nil
}

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	return h.Wait(ctx), nil
}

// StopTask implements drivers.Driver.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	sig, err := drivers.ParseSignal(signal)
	if err != nil {
		return fmt.Errorf("stopping task %q: %w", taskID, err)
	}
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return err
	}
	return h.stop(sig, timeout, d.killWait)
}

// DestroyTask implements drivers.Driver. It also kills whatever the task left
// running in its process group: a task's children do not outlive the task.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return err
	}
	if !h.Exited() {
		if !force {
			return fmt.Errorf("destroying task %q: %w", taskID, drivers.ErrTaskRunning)
		}
		if err := h.stop(syscall.SIGKILL, 0, d.killWait); err != nil {
			return err
		}
	}
	if err := h.signalGroup(syscall.SIGKILL); err != nil {
		h.logger.Warn("failed to kill leftover processes of task", "pgid", h.state.Pgid, "error", err)
	}
	if h.watch != nil {
		h.watch.Close()
	}
	d.tasks.Delete(taskID)
	return nil
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	return h.Status(map[string]string{
		"pid":       strconv.Itoa(h.state.Pid),
		"pgid":      strconv.Itoa(h.state.Pgid),
		"recovered": strconv.FormatBool(h.recovered),
	}), nil
}
