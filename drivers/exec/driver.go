//go:build linux

package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
	"github.com/nomad-edge/nomad/drivers/internal/stats"
	"github.com/nomad-edge/nomad/drivers/internal/tasks"
	"github.com/nomad-edge/nomad/drivers/internal/users"
	"github.com/nomad-edge/nomad/helper/clock"
)

// Driver is the exec driver. It is safe for concurrent use.
type Driver struct {
	logger hclog.Logger
	pc     pluginConfig
	tasks  *tasks.Set[*taskHandle]
	clock  clock.Clock

	// chrootEnv maps host paths to where they appear in the task's root,
	// as the client's chroot_env does.
	chrootEnv map[string]string
	// hostCheck says whether this host can isolate a task: the cgroup
	// version to use, or 0 and why not. Tests replace it.
	hostCheck func() (int, string)

	killWait         time.Duration
	exitPollInterval time.Duration
	noPidfd          bool
}

var (
	_ drivers.Driver             = (*Driver)(nil)
	_ drivers.CapabilityReporter = (*Driver)(nil)
	_ drivers.TaskFinder         = (*Driver)(nil)
	_ drivers.StatsReporter      = (*Driver)(nil)
)

// New builds the driver from the agent's plugin config.
func New(opts drivers.Options) (*Driver, error) {
	pc, err := decodePluginConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("plugin %q config: %w", Name, err)
	}
	chroot := defaultChrootEnv
	if opts.ChrootEnv != nil {
		if err := checkChrootEnv(opts.ChrootEnv); err != nil {
			return nil, err
		}
		chroot = opts.ChrootEnv
	}
	d := &Driver{
		logger:           opts.LoggerOrNull().Named(Name),
		pc:               pc,
		tasks:            tasks.NewSet[*taskHandle](),
		clock:            clock.Real(),
		chrootEnv:        maps.Clone(chroot),
		hostCheck:        checkHost,
		killWait:         defaultKillWait,
		exitPollInterval: proc.DefaultPollInterval,
	}
	if v, reason := d.hostCheck(); v == 0 {
		// The client does not advertise an undetected driver: the log
		// is where an operator learns why exec is missing.
		d.logger.Info("exec driver not available on this host", "reason", reason)
	}
	return d, nil
}

// checkHost is the real host check: root, the namespaces, and cgroups.
func checkHost() (int, string) {
	if os.Geteuid() != 0 {
		return 0, "exec needs the agent to run as root"
	}
	for _, ns := range []string{"mnt", "pid", "ipc", "uts"} {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			return 0, fmt.Sprintf("the kernel has no %s namespaces", ns)
		}
	}
	return cgroup.Detect(cgroupControllers)
}

// cgroupControllers are the v1 hierarchies the limits need.
var cgroupControllers = []string{"cpu", "memory", "pids"}

// taskControllers are the v1 hierarchies a task joins: those of its limits,
// and cpuacct, where mounted, for its CPU time in `alloc status -stats`.
func taskControllers() []string {
	if cgroup.MountedV1("cpuacct") {
		return []string{"cpu", "cpuacct", "memory", "pids"}
	}
	return cgroupControllers
}

// Fingerprint implements drivers.Driver: the driver is detected only where it
// can isolate a task, and says why not otherwise.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	version, reason := d.hostCheck()
	if version == 0 {
		return &drivers.Fingerprint{HealthDescription: drivers.HealthDescUndetected + ": " + reason}
	}
	return &drivers.Fingerprint{
		Detected:          true,
		Healthy:           true,
		HealthDescription: drivers.HealthDescHealthy,
		Attributes: map[string]string{
			"driver." + Name:             "1",
			"driver." + Name + ".cgroup": "v" + strconv.Itoa(version),
		},
	}
}

// Capabilities implements drivers.CapabilityReporter.
func (d *Driver) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{FSIsolation: drivers.FSIsolationChroot, LogFIFO: true}
}

// lookupUser is the task's user, nobody unless it names one.
func lookupUser(name string) (users.Credential, error) {
	if name == "" {
		name = defaultUser
	}
	return users.Lookup(name)
}

// StartTask implements drivers.Driver.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	if cfg == nil || cfg.ID == "" || cfg.TaskDir == "" {
		return nil, errors.New("starting task: a task config with an ID and a task dir is required")
	}
	version, reason := d.hostCheck()
	if version == 0 {
		return nil, fmt.Errorf("starting task %q: %w: %s", cfg.ID, ErrCannotIsolate, reason)
	}
	proc.DefaultSignalsForChildren()
	tc, err := decodeTaskConfig(cfg.Config, d.pc)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", cfg.ID, err)
	}
	cred, err := lookupUser(cfg.User)
	if err == nil {
		err = d.pc.Denied.Check(orDefault(cfg.User, defaultUser), cred)
	}
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", cfg.ID, err)
	}
	if len(tc.CapAdd) > 0 && cred.UID != 0 {
		return nil, fmt.Errorf("task %q: %w", cfg.ID, &drivers.ConfigError{Key: "cap_add",
			Err: errors.New("capabilities for a user other than root (ambient capabilities) are not implemented")})
	}
	if err := d.tasks.Reserve(cfg.ID); err != nil {
		return nil, err
	}
	h, err := d.start(startInput{cfg: cfg, tc: tc, cred: cred, cgroupVersion: version})
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

type startInput struct {
	cfg           *drivers.TaskConfig
	tc            taskConfig
	cred          users.Credential
	cgroupVersion int
}

// start creates the task's cgroups and re-executes the agent binary as the
// init of the task's namespaces, which builds the root and execs the task.
// On success a goroutine owns cmd.Wait and records the exit in the handle.
func (d *Driver) start(in startInput) (_ *taskHandle, err error) {
	cfg, tc := in.cfg, in.tc
	if err := prepareTaskDir(cfg, in.cred); err != nil {
		return nil, err
	}
	cg, err := cgroup.Create(cgroup.CreateInput{
		Version:     in.cgroupVersion,
		Name:        cgroup.NameFor(cfg.ID),
		Controllers: taskControllers(),
		Limits: cgroup.Limits{
			CPUShares: cfg.Resources.CPUShares,
			MemSoftMB: cfg.Resources.MemoryMB,
			MemHardMB: max(cfg.Resources.MemoryMaxMB, cfg.Resources.MemoryMB),
			Pids:      tc.PidsLimit,
		},
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cg.KillAll()
			_ = cg.DestroyWait(d.clock, d.killWait)
		}
	}()

	cmd, pipes, err := d.initCommand(cfg, tc)
	if err != nil {
		return nil, err
	}
	defer pipes.closeAll()
	if err := cmd.Start(); err != nil {
		return nil, drivers.NewRecoverableError(err, isTransient(err))
	}
	pipes.closeChildEnds()
	pid := cmd.Process.Pid
	fail := func(err error) (*taskHandle, error) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, err
	}
	// The init blocks on its config until it is in the cgroups, so that
	// nothing of the task ever runs unlimited.
	if err := cg.Join(pid); err != nil {
		return fail(err)
	}
	if err := pipes.sendConfig(d.initConfig(cfg, tc, in.cred)); err != nil {
		return fail(err)
	}
	if msg := pipes.readError(); msg != "" {
		return fail(fmt.Errorf("%w: %s", ErrTaskSetup, msg))
	}
	ps, err := proc.ReadStat(pid)
	if err != nil {
		return fail(fmt.Errorf("reading start time of pid %d: %w", pid, err))
	}
	h := &taskHandle{
		Task:     tasks.New(cfg.ID, cfg.Name, d.clock.Now()),
		logger:   d.logger.With("task_id", cfg.ID),
		clock:    d.clock,
		state:    taskState{Pid: pid, StartTime: ps.StartTime, BootID: proc.BootID(), Cgroups: cg},
		killWait: d.killWait,
	}
	h.cpu = stats.NewSampler(h.StartedAt())
	go func() {
		err := cmd.Wait()
		res := exitResult(cmd.ProcessState, err)
		res.OOMKilled = cg.OOMKilled()
		h.Exit(res, d.clock.Now())
		h.logger.Debug("task exited", "result", res)
	}()
	return h, nil
}

// prepareTaskDir makes the directories the root needs and hands the task's
// own ones to its user.
func prepareTaskDir(cfg *drivers.TaskConfig, cred users.Credential) error {
	for _, dir := range []struct {
		path string
		perm os.FileMode
		own  bool
	}{
		{cfg.TaskDir, 0o755, false},
		{filepath.Join(cfg.TaskDir, "tmp"), 0o777 | os.ModeSticky, false},
		{orDefault(cfg.LocalDir, filepath.Join(cfg.TaskDir, "local")), 0o755, true},
		{orDefault(cfg.SecretsDir, filepath.Join(cfg.TaskDir, "secrets")), 0o700, true},
	} {
		if err := os.MkdirAll(dir.path, dir.perm); err != nil {
			return fmt.Errorf("creating task dir: %w", err)
		}
		// A task that ran as root before may have left a symlink here;
		// following it would hand a host directory to the task's user.
		if fi, err := os.Lstat(dir.path); err != nil || !fi.IsDir() {
			return fmt.Errorf("task dir %s is not a directory (a symlink?): %v", dir.path, err)
		}
		if dir.own {
			if err := os.Lchown(dir.path, cred.UID, cred.GID); err != nil {
				return fmt.Errorf("handing %s to the task user: %w", dir.path, err)
			}
		}
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// initCommand builds the re-execution of the agent binary as the task's
// init, in new namespaces.
func (d *Driver) initCommand(cfg *drivers.TaskConfig, tc taskConfig) (*osexec.Cmd, *initPipes, error) {
	pipes, err := newInitPipes()
	if err != nil {
		return nil, nil, err
	}
	flags := uintptr(syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS)
	if tc.PidMode == modePrivate {
		flags |= syscall.CLONE_NEWPID
	}
	if tc.IpcMode == modePrivate {
		flags |= syscall.CLONE_NEWIPC
	}
	cmd := &osexec.Cmd{
		Path: "/proc/self/exe",
		Args: []string{initArg0},
		// Not nil: nil would hand the init the agent's environment.
		Env:        []string{},
		Dir:        "/",
		ExtraFiles: []*os.File{pipes.configR, pipes.errorW},
		// A group of its own lets StopTask signal the task's whole
		// process tree. No Pdeathsig: the task must outlive an agent
		// restart.
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: flags, Setpgid: true},
	}
	for _, out := range []struct {
		path string
		dst  *io.Writer
	}{{cfg.StdoutPath, &cmd.Stdout}, {cfg.StderrPath, &cmd.Stderr}} {
		f, err := openLog(out.path)
		if err != nil {
			pipes.closeAll()
			return nil, nil, fmt.Errorf("opening task log: %w", err)
		}
		if f != nil {
			// The files are the child's fds 1 and 2: no copying
			// goroutine, and no pipe that a crashed agent would leave
			// the task writing into.
			pipes.extra = append(pipes.extra, f)
			*out.dst = f
		}
	}
	return cmd, pipes, nil
}

// initConfig is what the init is told to do.
func (d *Driver) initConfig(cfg *drivers.TaskConfig, tc taskConfig, cred users.Credential) initConfig {
	mounts := chrootMounts(d.chrootEnv)
	if cfg.AllocDir != "" {
		mounts = append(mounts, bindMount{Source: cfg.AllocDir, Target: "/alloc"})
	}
	for _, m := range []bindMount{{Source: cfg.LocalDir, Target: "/local"}, {Source: cfg.SecretsDir, Target: "/secrets"}} {
		if m.Source != "" && filepath.Clean(m.Source) != filepath.Join(cfg.TaskDir, m.Target) {
			mounts = append(mounts, m)
		}
	}
	return initConfig{
		Root:        cfg.TaskDir,
		Mounts:      mounts,
		Hostname:    hostname(cfg.Name),
		NoPivotRoot: d.pc.NoPivotRoot,
		Caps:        taskCaps(d.pc, tc),
		UID:         cred.UID,
		GID:         cred.GID,
		Groups:      cred.Groups,
		WorkDir:     tc.WorkDir,
		Command:     tc.Command,
		Args:        tc.Args,
		Env:         taskEnv(cfg.Env),
	}
}

// hostname is the task's name as a valid host name, for its UTS namespace.
func hostname(name string) string {
	h := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, name)
	h = strings.Trim(h, "-")
	if len(h) > 63 {
		h = h[:63]
	}
	if h == "" {
		h = "task"
	}
	return h
}

// initPipes are the driver's ends of the pipes to a starting init, and the
// init's ends until it has them.
type initPipes struct {
	configR, configW *os.File
	errorR, errorW   *os.File
	extra            []*os.File
}

func newInitPipes() (*initPipes, error) {
	cr, cw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	er, ew, err := os.Pipe()
	if err != nil {
		cr.Close()
		cw.Close()
		return nil, err
	}
	return &initPipes{configR: cr, configW: cw, errorR: er, errorW: ew}, nil
}

// closeChildEnds closes the driver's copies of what the child inherited, so
// that the error pipe reads EOF once the init has exec'd (or died).
func (p *initPipes) closeChildEnds() {
	for _, f := range append([]*os.File{p.configR, p.errorW}, p.extra...) {
		f.Close()
	}
}

func (p *initPipes) closeAll() {
	p.closeChildEnds()
	p.configW.Close()
	p.errorR.Close()
}

func (p *initPipes) sendConfig(c initConfig) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if _, err := p.configW.Write(b); err != nil {
		return fmt.Errorf("sending the task's init its config: %w", err)
	}
	return p.configW.Close()
}

// readError returns what the init reported before dying, or "" once the
// task has replaced it.
func (p *initPipes) readError() string {
	b, _ := io.ReadAll(io.LimitReader(p.errorR, 64<<10))
	return strings.TrimSpace(string(b))
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

// isTransient reports whether a failed fork is worth retrying: the node ran
// short of processes, memory or descriptors.
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

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	return tasks.WaitTask(d.tasks, ctx, taskID)
}

// StopTask implements drivers.Driver.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	return tasks.StopTask(d.tasks, taskID, timeout, signal)
}

// DestroyTask implements drivers.Driver. It kills whatever the task left in
// its cgroups and removes them.
func (d *Driver) DestroyTask(taskID string, force bool) error {
	return tasks.DestroyTask(d.tasks, taskID, force)
}

// TaskStats implements drivers.StatsReporter, from the task's cgroups.
func (d *Driver) TaskStats(taskID string) (*drivers.TaskResourceUsage, error) {
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	return stats.FromCgroup(h.state.Cgroups, h.cpu, d.clock.Now()), nil
}

// Release implements tasks.Destroyer.
func (h *taskHandle) Release() {
	if err := h.state.Cgroups.Remove(h.clock, h.killWait); err != nil {
		h.logger.Warn("failed to remove the task's cgroups", "error", err)
	}
	if h.watch != nil {
		h.watch.Close()
	}
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	attrs := map[string]string{
		"pid":       strconv.Itoa(h.state.Pid),
		"recovered": strconv.FormatBool(h.recovered),
	}
	if len(h.state.Cgroups.Paths) > 0 {
		attrs["cgroup"] = h.state.Cgroups.Paths[0]
	}
	return h.Status(attrs), nil
}
