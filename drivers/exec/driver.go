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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
	"github.com/nomad-edge/nomad/drivers/internal/proctask"
	"github.com/nomad-edge/nomad/drivers/internal/users"
	"github.com/nomad-edge/nomad/helper/netns"
)

// taskState is the DriverState this driver persists.
type taskState = proctask.State

// Driver is the exec driver. It is safe for concurrent use.
type Driver struct {
	logger hclog.Logger
	pc     pluginConfig
	tasks  *proctask.Tasks

	// chrootEnv maps host paths to where they appear in the task's root,
	// as the client's chroot_env does.
	chrootEnv map[string]string
	// hostCheck says whether this host can isolate a task: the cgroup
	// version to use, or 0 and why not. Tests replace it.
	hostCheck func() (int, string)
}

var (
	_ drivers.Driver             = (*Driver)(nil)
	_ drivers.CapabilityReporter = (*Driver)(nil)
	_ drivers.TaskFinder         = (*Driver)(nil)
	_ drivers.StatsReporter      = (*Driver)(nil)
	_ drivers.Signaler           = (*Driver)(nil)
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
	logger := opts.LoggerOrNull().Named(Name)
	d := &Driver{
		logger: logger,
		pc:     pc,
		tasks: proctask.New(proctask.Options{
			HandleVersion:  HandleVersion,
			Logger:         logger,
			RequireCgroups: true,
			OOMFromCgroups: true,
		}),
		chrootEnv: maps.Clone(chroot),
		hostCheck: checkHost,
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
	return drivers.Capabilities{FSIsolation: drivers.FSIsolationChroot, LogFIFO: true, NetNamespace: netns.Supported, NetworkFiles: true}
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
	binds, err := volumeBinds(cfg.Mounts)
	if err == nil {
		err = checkBinds(binds)
	}
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", cfg.ID, err)
	}
	if len(tc.CapAdd) > 0 && cred.UID != 0 {
		return nil, fmt.Errorf("task %q: %w", cfg.ID, &drivers.ConfigError{Key: "cap_add",
			Err: errors.New("capabilities for a user other than root (ambient capabilities) are not implemented")})
	}
	in := startInput{cfg: cfg, tc: tc, cred: cred, cgroupVersion: version, binds: binds}
	return d.tasks.Start(proctask.StartInput{
		Config:  cfg,
		Command: tc.Command,
		Launch:  func() (*osexec.Cmd, taskState, error) { return d.start(in) },
	})
}

type startInput struct {
	cfg           *drivers.TaskConfig
	tc            taskConfig
	cred          users.Credential
	cgroupVersion int
	binds         []bindMount
}

// start creates the task's cgroups and re-executes the agent binary as the
// init of the task's namespaces, which builds the root and execs the task,
// and hands it to the core, which owns cmd.Wait from then on.
func (d *Driver) start(in startInput) (_ *osexec.Cmd, _ taskState, err error) {
	cfg, tc := in.cfg, in.tc
	if err := prepareTaskDir(cfg, in.cred); err != nil {
		return nil, taskState{}, err
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
		return nil, taskState{}, err
	}
	defer func() {
		if err != nil {
			_ = cg.Remove(d.tasks.Clock, d.tasks.KillWait)
		}
	}()

	// Before the task exists, so that none of its mounts is in it.
	bidir, err := recordBidirectional(in.binds)
	if err != nil {
		return nil, taskState{}, fmt.Errorf("recording the mounts of a bidirectional volume: %w", err)
	}
	cmd, pipes, err := d.initCommand(cfg, tc)
	if err != nil {
		return nil, taskState{}, err
	}
	defer pipes.closeAll()
	if err := startInNetns(cmd, cfg.NetNSPath); err != nil {
		return nil, taskState{}, drivers.NewRecoverableError(err, proctask.IsTransient(err))
	}
	pipes.closeChildEnds()
	// The init blocks on its config until it is in the cgroups, so that
	// nothing of the task ever runs unlimited.
	if err := cg.Join(cmd.Process.Pid); err != nil {
		return nil, taskState{}, proctask.Abort(cmd, err)
	}
	if err := pipes.sendConfig(d.initConfig(cfg, tc, in.cred)); err != nil {
		return nil, taskState{}, proctask.Abort(cmd, err)
	}
	if msg := pipes.readError(); msg != "" {
		return nil, taskState{}, proctask.Abort(cmd, fmt.Errorf("%w: %s", ErrTaskSetup, msg))
	}
	st, err := proctask.Launched(cmd, &cg)
	if err != nil {
		return nil, taskState{}, err
	}
	st.Bidirectional = bidir
	return cmd, st, nil
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
		f, err := drivers.OpenTaskLog(out.path)
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
	// Checked by StartTask; last, so that a volume may sit under /local.
	binds, _ := volumeBinds(cfg.Mounts)
	mounts = append(mounts, binds...)
	mounts = append(mounts, networkFileMounts(cfg)...)
	host := hostname(cfg.Name)
	if cfg.Hostname != "" {
		host = cfg.Hostname
	}
	return initConfig{
		Root:        cfg.TaskDir,
		Mounts:      mounts,
		Hostname:    host,
		NoPivotRoot: d.pc.NoPivotRoot,
		Caps:        taskCaps(d.pc, tc),
		UID:         cred.UID,
		GID:         cred.GID,
		Groups:      cred.Groups,
		WorkDir:     tc.WorkDir,
		Command:     tc.Command,
		Args:        tc.Args,
		Env:         proctask.Env(cfg.Env, nil),
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

// RecoverTask implements drivers.Driver. It refuses with ErrTaskNotFound when
// the node has rebooted since, the process is gone, or the pid now belongs
// to another process. A recovered task is no longer the agent's child: its
// exit is seen through a pidfd (or /proc), its exit code is unknown, and an
// OOM kill is still told by its cgroup's counters.
func (d *Driver) RecoverTask(handle *drivers.TaskHandle) error {
	err := d.tasks.Recover(handle)
	if errors.Is(err, drivers.ErrTaskNotFound) {
		// The task ended while no agent ran: what it mounted in a
		// bidirectional volume is still on the host. Not after a
		// reboot, which took those mounts, and after which the
		// recorded mount IDs name other mounts.
		var st taskState
		if handle.GetDriverState(&st) == nil && len(st.Bidirectional) > 0 && st.BootID != "" && st.BootID == proc.BootID() {
			if uerr := unmountNew(st.Bidirectional, d.logger); uerr != nil {
				d.logger.Warn("unmounting what a task left in its bidirectional volumes", "error", uerr)
			}
		}
	}
	return err
}

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(ctx context.Context, taskID string) (<-chan *drivers.ExitResult, error) {
	return d.tasks.Wait(ctx, taskID)
}

// StopTask implements drivers.Driver.
func (d *Driver) StopTask(taskID string, timeout time.Duration, signal string) error {
	return d.tasks.Stop(taskID, timeout, signal)
}

// DestroyTask implements drivers.Driver. It kills whatever the task left in
// its cgroups and removes them, and unmounts from the host what the task
// mounted in its bidirectional volumes (unmountNew).
func (d *Driver) DestroyTask(taskID string, force bool) error {
	var bidir []proctask.VolumeMounts
	if t, err := d.tasks.Get(taskID); err == nil {
		bidir = t.State.Bidirectional
	}
	if err := d.tasks.Destroy(taskID, force); err != nil {
		return err
	}
	if err := unmountNew(bidir, d.logger); err != nil {
		return fmt.Errorf("task %q: %w", taskID, err)
	}
	return nil
}

// TaskStats implements drivers.StatsReporter, from the task's cgroups.
func (d *Driver) TaskStats(taskID string) (*drivers.TaskResourceUsage, error) {
	return d.tasks.Stats(taskID)
}

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(taskID string) (*drivers.TaskStatus, error) {
	return d.tasks.Inspect(taskID)
}

// SignalTask implements drivers.Signaler: the signal goes to the task's
// process group, as a stop's does. As its PID namespace's init, the task
// gets only a signal it handles.
func (d *Driver) SignalTask(taskID, signal string) error { return d.tasks.Signal(taskID, signal) }

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
		if st, ok := proctask.Leader(pid); ok {
			return d.tasks.Adopt(cfg, pid, st, &cg)
		}
	}
	return nil, drivers.ErrTaskNotFound
}

// startInNetns starts cmd, in the allocation's network namespace when
// path names one (bridge mode): the init clones no network namespace of
// its own, so it and the task inherit the forking thread's.
func startInNetns(cmd *osexec.Cmd, path string) error {
	if path == "" {
		return cmd.Start()
	}
	return netns.Do(path, cmd.Start)
}

// networkFileMounts bind the group's network.dns resolv.conf and
// network.hostname hosts file over the chroot's (the host's /etc, read
// only). Where the host's file is a symlink (systemd-resolved's
// /etc/resolv.conf), the mount goes on what it points at, which the
// default chroot_env binds at the same path: a mount point may not be a
// symlink.
func networkFileMounts(cfg *drivers.TaskConfig) []bindMount {
	var out []bindMount
	for _, f := range []struct{ host, inside string }{{cfg.ResolvConfPath, "/etc/resolv.conf"}, {cfg.HostsPath, "/etc/hosts"}} {
		if f.host == "" {
			continue
		}
		target := f.inside
		if real, err := filepath.EvalSymlinks(f.inside); err == nil {
			target = real
		}
		out = append(out, bindMount{Source: f.host, Target: target, ReadOnly: true})
	}
	return out
}
