package rawexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
	"github.com/nomad-edge/nomad/drivers/internal/stats"
	"github.com/nomad-edge/nomad/drivers/internal/tasks"
	"github.com/nomad-edge/nomad/drivers/internal/users"
	"github.com/nomad-edge/nomad/helper/clock"
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

// ErrUserNotSupported refuses a task whose `user` is not the agent's own
// when the agent does not run as root: only root can switch users.
var ErrUserNotSupported = errors.New("running a task as another user needs the agent to run as root")

// ErrWorkDirUnreachable is the cause when the task's user cannot enter its
// working directory.
var ErrWorkDirUnreachable = errors.New("working directory unreachable")

// ErrKillTimeout is returned by StopTask and DestroyTask when the task's
// process is still alive after SIGKILL and the kill wait.
var ErrKillTimeout = errors.New("process did not exit after SIGKILL")

// Driver is the raw_exec driver. It is safe for concurrent use.
type Driver struct {
	logger hclog.Logger
	pc     pluginConfig
	tasks  *tasks.Set[*taskHandle]
	// cgroupHost says what cgroups this host offers; tests replace it.
	cgroupHost func() cgroupHost

	killWait         time.Duration
	exitPollInterval time.Duration
	// noPidfd forces the /proc polling fallback for recovered tasks, so
	// that tests exercise the path kernels before 5.10 take.
	noPidfd bool
}

var (
	_ drivers.Driver        = (*Driver)(nil)
	_ drivers.StatsReporter = (*Driver)(nil)
)

// New builds the driver from the agent's plugin config: `enabled` (default
// false), `denied_host_uids` and `denied_host_gids`.
func New(opts drivers.Options) (*Driver, error) {
	pc, err := decodePluginConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("plugin %q config: %w", Name, err)
	}
	return &Driver{
		logger:           opts.LoggerOrNull().Named(Name),
		pc:               pc,
		tasks:            tasks.NewSet[*taskHandle](),
		cgroupHost:       detectCgroupHost,
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
	case !d.pc.Enabled:
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

// StartTask implements drivers.Driver.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("starting task: a task config with an ID is required")
	}
	if !proc.Supported {
		return nil, fmt.Errorf("starting task %q: %s is only supported on Linux", cfg.ID, Name)
	}
	if !d.pc.Enabled {
		return nil, fmt.Errorf("starting task %q: %w: set enabled = true in the agent's plugin %q config",
			cfg.ID, drivers.ErrDriverDisabled, Name)
	}
	proc.DefaultSignalsForChildren()
	tc, err := decodeTaskConfig(cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", cfg.ID, err)
	}
	cred, err := d.credential(cfg.User)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", cfg.ID, err)
	}
	if err := d.tasks.Reserve(cfg.ID); err != nil {
		return nil, err
	}
	h, err := d.start(startInput{cfg: cfg, tc: tc, cred: cred})
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

// credential is who the task runs as: nil for the agent's own user (no
// `user`, or the agent's), else the looked-up user, unless the plugin
// denies its ids or the agent cannot switch to it.
func (d *Driver) credential(name string) (*users.Credential, error) {
	if name == "" {
		return nil, nil
	}
	c, err := users.Lookup(name)
	if err != nil {
		return nil, err
	}
	if err := d.pc.Denied.Check(name, c); err != nil {
		return nil, err
	}
	if euid := os.Geteuid(); euid != 0 {
		if c.UID != euid {
			return nil, fmt.Errorf("task user %q: %w (the agent runs as uid %d)", name, ErrUserNotSupported, euid)
		}
		return nil, nil
	}
	return &c, nil
}

type startInput struct {
	cfg  *drivers.TaskConfig
	tc   taskConfig
	cred *users.Credential
}

// start forks the task's process into its cgroup. On success a goroutine
// owns cmd.Wait and records the exit in the returned handle.
func (d *Driver) start(in startInput) (_ *taskHandle, err error) {
	cfg, tc := in.cfg, in.tc
	cmd, closeLogs, err := taskCommand(in)
	if err != nil {
		return nil, err
	}
	defer closeLogs()
	cg, err := d.taskCgroups(cfg, tc)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && cg != nil {
			_ = cg.DestroyWait(clock.Real(), d.killWait)
		}
	}()

	if err := startIn(cmd, cg); err != nil {
		return nil, drivers.NewRecoverableError(err, isTransient(err))
	}
	pid := cmd.Process.Pid
	fail := func(err error) (*taskHandle, error) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if cg != nil {
			cg.KillAll()
		}
		return nil, err
	}
	// The child is not reaped until cmd.Wait below, so its /proc entry is
	// there even if it has already exited.
	ps, err := proc.ReadStat(pid)
	if err != nil {
		return fail(fmt.Errorf("reading start time of pid %d: %w", pid, err))
	}
	if err := d.setOOMScoreAdj(pid, tc); err != nil {
		return fail(err)
	}

	h := &taskHandle{
		Task:     tasks.New(cfg.ID, cfg.Name, time.Now()),
		logger:   d.logger.With("task_id", cfg.ID),
		killWait: d.killWait,
		state: taskState{
			Pid:       pid,
			Pgid:      pid,
			StartTime: ps.StartTime,
			BootID:    proc.BootID(),
			Cgroups:   cg,
		},
	}
	h.cpu = stats.NewSampler(h.StartedAt())
	go func() {
		err := cmd.Wait()
		res := exitResult(cmd.ProcessState, err)
		h.Exit(res, time.Now())
		h.logger.Debug("task exited", "result", res)
	}()
	return h, nil
}

// taskCommand is the task's process, not yet started: its command, working
// directory, environment, user and log files. closeLogs closes the agent's
// copies of the files once the child has them.
func taskCommand(in startInput) (_ *exec.Cmd, closeLogs func(), err error) {
	cfg, tc := in.cfg, in.tc
	if cfg.TaskDir != "" {
		if err := os.MkdirAll(cfg.TaskDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("creating task dir: %w", err)
		}
	}
	cmd := exec.Command(tc.Command, tc.Args...)
	cmd.Dir = cfg.TaskDir
	if tc.WorkDir != "" {
		cmd.Dir = tc.WorkDir
	}
	if c := in.cred; c != nil {
		giveTaskDirs(cfg, *c)
		// Otherwise the fork fails with a bare "permission denied" that
		// names the command, not the directory.
		if err := reachable(cmd.Dir, *c); err != nil {
			return nil, nil, err
		}
	}
	cmd.Env = taskEnv(cfg.Env, tc.DeniedEnvvars)
	// A group of its own lets StopTask signal the task's whole process
	// tree. No Pdeathsig: the task must outlive a client restart.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c := in.cred; c != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{
			Uid: uint32(c.UID), Gid: uint32(c.GID), Groups: toUint32(c.Groups),
		}
	}

	// The files are handed to the child as its fds 1 and 2: no copying
	// goroutine, and no pipe that a crashed client would leave the task
	// writing into.
	var files []*os.File
	closeLogs = func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, out := range []struct {
		name, path string
		dst        *io.Writer
	}{{"stdout", cfg.StdoutPath, &cmd.Stdout}, {"stderr", cfg.StderrPath, &cmd.Stderr}} {
		f, err := openLog(out.path)
		if err != nil {
			closeLogs()
			return nil, nil, fmt.Errorf("opening %s: %w", out.name, err)
		}
		if f != nil {
			files = append(files, f)
			*out.dst = f
		}
	}
	return cmd, closeLogs, nil
}

// setOOMScoreAdj sets the task's OOM score right after the start: until then
// the command has the agent's. The score belongs to the process, not to the
// forking thread, so it cannot be set for the child before the fork. A
// failure fails the task only when the job asked for a score.
func (d *Driver) setOOMScoreAdj(pid int, tc taskConfig) error {
	err := writeOOMScoreAdj(pid, tc.OOMScoreAdj)
	switch {
	case err == nil:
		return nil
	case tc.OOMScoreAdjSet:
		return &drivers.ConfigError{Key: "oom_score_adj", Err: err}
	}
	d.logger.Warn("could not reset the task's oom_score_adj to 0", "pid", pid, "error", err)
	return nil
}

// writeOOMScoreAdj sets the task's OOM score adjustment.
func writeOOMScoreAdj(pid, v int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid), []byte(strconv.Itoa(v)), 0o644)
}

// giveTaskDirs hands the task's local and secrets directories to its user,
// so that a task run as someone else can write where its job expects.
// A symlink is not followed: it could point at a host directory.
func giveTaskDirs(cfg *drivers.TaskConfig, c users.Credential) {
	for _, dir := range []string{cfg.LocalDir, cfg.SecretsDir} {
		if fi, err := os.Lstat(dir); dir == "" || err != nil || !fi.IsDir() {
			continue
		}
		_ = os.Lchown(dir, c.UID, c.GID)
	}
}

// reachable checks that the task's user can enter dir: every directory on
// the way must be searchable by it. A client data_dir of mode 0700 is the
// usual culprit.
func reachable(dir string, c users.Credential) error {
	if dir == "" {
		return nil
	}
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("working directory %s: %w", dir, err)
		}
		if !searchable(fi, c) {
			return fmt.Errorf("%w: task user cannot enter its working directory %s: %s (mode %04o) is closed to uid %d; "+
				"set work_dir, or open the client's data_dir to the user", ErrWorkDirUnreachable, dir, p, uint32(fi.Mode().Perm()), c.UID)
		}
		if p == "/" {
			return nil
		}
	}
}

// searchable applies the permission bits as the kernel does for a user who
// is not root: owner, then group, then others.
func searchable(fi os.FileInfo, c users.Credential) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || c.UID == 0 {
		return true
	}
	mode := fi.Mode().Perm()
	switch {
	case int(st.Uid) == c.UID:
		return mode&0o100 != 0
	case int(st.Gid) == c.GID || slices.Contains(c.Groups, int(st.Gid)):
		return mode&0o010 != 0
	}
	return mode&0o001 != 0
}

func toUint32(in []int) []uint32 {
	out := make([]uint32, len(in))
	for i, v := range in {
		out[i] = uint32(v)
	}
	return out
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
		if errors.Is(err, drivers.ErrTaskNotFound) && st.Cgroups != nil {
			st.Cgroups.RemoveIfEmpty(d.logger.With("task_id", id))
		}
		return fmt.Errorf("recovering task %q: %w", id, err)
	}
	h := &taskHandle{
		Task:      tasks.New(id, handle.Config.Name, handle.StartedAt),
		logger:    d.logger.With("task_id", id),
		state:     st,
		killWait:  d.killWait,
		cpu:       stats.NewSampler(handle.StartedAt),
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
	return tasks.WaitTask(d.tasks, ctx, taskID)
}

// StopTask implements drivers.Driver.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	return tasks.StopTask(d.tasks, taskID, timeout, signal)
}

// DestroyTask implements drivers.Driver. It also kills whatever the task left
// running in its process group and its cgroup, and removes the cgroup: a
// task's children do not outlive the task.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	return tasks.DestroyTask(d.tasks, taskID, force)
}

// TaskStats implements drivers.StatsReporter: from the task's cgroup where
// it has one, else from /proc for the processes of its group.
func (d *Driver) TaskStats(taskID string) (*drivers.TaskResourceUsage, error) {
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if cg := h.state.Cgroups; cg != nil {
		return stats.FromCgroup(*cg, h.cpu, now), nil
	}
	return stats.FromProcs(proc.GroupPids(h.state.Pgid), h.cpu, now), nil
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	attrs := map[string]string{
		"pid":       strconv.Itoa(h.state.Pid),
		"pgid":      strconv.Itoa(h.state.Pgid),
		"recovered": strconv.FormatBool(h.recovered),
	}
	if cg := h.state.Cgroups; cg != nil && len(cg.Paths) > 0 {
		attrs["cgroup"] = cg.Paths[0]
	}
	return h.Status(attrs), nil
}
