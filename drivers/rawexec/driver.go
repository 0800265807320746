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
	"github.com/nomad-edge/nomad/drivers/internal/proctask"
	"github.com/nomad-edge/nomad/drivers/internal/users"
)

// Name is the driver name jobs use in a task's `driver` field.
const Name = "raw_exec"

// HandleVersion is the layout version of the DriverState this driver writes.
const HandleVersion = 1

// ErrUserNotSupported refuses a task whose `user` is not the agent's own
// when the agent does not run as root: only root can switch users.
var ErrUserNotSupported = errors.New("running a task as another user needs the agent to run as root")

// ErrWorkDirUnreachable is the cause when the task's user cannot enter its
// working directory.
var ErrWorkDirUnreachable = errors.New("working directory unreachable")

// ErrKillTimeout is returned by StopTask and DestroyTask when the task's
// process is still alive after SIGKILL and the kill wait.
var ErrKillTimeout = proctask.ErrKillTimeout

// taskState is the DriverState this driver persists.
type taskState = proctask.State

// Driver is the raw_exec driver. It is safe for concurrent use.
type Driver struct {
	logger hclog.Logger
	pc     pluginConfig
	tasks  *proctask.Tasks
	// cgroupHost says what cgroups this host offers; tests replace it.
	cgroupHost func() cgroupHost
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
	logger := opts.LoggerOrNull().Named(Name)
	return &Driver{
		logger:     logger,
		pc:         pc,
		tasks:      proctask.New(proctask.Options{HandleVersion: HandleVersion, Logger: logger}),
		cgroupHost: detectCgroupHost,
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
	return d.tasks.Start(proctask.StartInput{
		Config:  cfg,
		Command: tc.Command,
		Launch:  func() (*exec.Cmd, taskState, error) { return d.start(startInput{cfg: cfg, tc: tc, cred: cred}) },
	})
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

// start forks the task's process into its cgroup and hands it to the core,
// which owns cmd.Wait from then on.
func (d *Driver) start(in startInput) (_ *exec.Cmd, _ taskState, err error) {
	cfg, tc := in.cfg, in.tc
	cmd, closeLogs, err := taskCommand(in)
	if err != nil {
		return nil, taskState{}, err
	}
	defer closeLogs()
	cg, err := d.taskCgroups(cfg, tc)
	if err != nil {
		return nil, taskState{}, err
	}
	defer func() {
		if err != nil && cg != nil {
			_ = cg.Remove(d.tasks.Clock, d.tasks.KillWait)
		}
	}()

	if err := startIn(cmd, cg, cfg.NetNSPath); err != nil {
		return nil, taskState{}, drivers.NewRecoverableError(err, proctask.IsTransient(err))
	}
	st, err := proctask.Launched(cmd, cg)
	if err != nil {
		return nil, taskState{}, err
	}
	if err := d.setOOMScoreAdj(st.Pid, tc); err != nil {
		return nil, taskState{}, proctask.Abort(cmd, err)
	}
	return cmd, st, nil
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
	cmd.Env = proctask.Env(cfg.Env, tc.DeniedEnvvars)
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
		f, err := drivers.OpenTaskLog(out.path)
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

// RecoverTask implements drivers.Driver. It refuses with ErrTaskNotFound when
// the node has rebooted since, the process is gone, or the pid now belongs to
// a process started at another time.
func (d *Driver) RecoverTask(handle *drivers.TaskHandle) error { return d.tasks.Recover(handle) }

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	return d.tasks.Wait(ctx, taskID)
}

// StopTask implements drivers.Driver.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	return d.tasks.Stop(taskID, timeout, signal)
}

// DestroyTask implements drivers.Driver. It also kills whatever the task left
// running in its process group and its cgroup, and removes the cgroup: a
// task's children do not outlive the task.
func (d *Driver) DestroyTask(taskID string, force bool) error { return d.tasks.Destroy(taskID, force) }

// TaskStats implements drivers.StatsReporter: from the task's cgroup where
// it has one, else from /proc for the processes of its group.
func (d *Driver) TaskStats(taskID string) (*drivers.TaskResourceUsage, error) {
	return d.tasks.Stats(taskID)
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	return d.tasks.Inspect(taskID)
}
