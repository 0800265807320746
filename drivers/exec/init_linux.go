//go:build linux

package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/proctask"
)

// initArg0 is the argv[0] under which the agent binary, re-executed by the
// driver as the first process of a task's namespaces, sets them up and
// execs the task. It is no subcommand: a user never types it.
const initArg0 = "nomad-exec-init"

// The init's file descriptors, as the driver passes them (ExtraFiles).
const (
	initConfigFD = 3 // the driver writes the initConfig as JSON, then closes
	initErrorFD  = 4 // the init writes why it failed; close-on-exec, so EOF means the task runs
)

// initConfig is everything the init needs, sent by the driver over a pipe so
// that no secret of the task's environment shows in the init's argv.
type initConfig struct {
	// Root is the task directory, which becomes the task's /.
	Root        string      `json:"root"`
	Mounts      []bindMount `json:"mounts"`
	Hostname    string      `json:"hostname"`
	NoPivotRoot bool        `json:"no_pivot_root"`
	// Caps is the capability bounding set; everything else is dropped.
	Caps    []string `json:"caps"`
	UID     int      `json:"uid"`
	GID     int      `json:"gid"`
	Groups  []int    `json:"groups"`
	WorkDir string   `json:"work_dir"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []string `json:"env"`
}

// bindMount is a host path made visible inside the task's root.
type bindMount struct {
	Source   string `json:"source"`
	Target   string `json:"target"` // absolute, inside the root
	ReadOnly bool   `json:"read_only"`
	// Propagation is "" (private), host-to-task or bidirectional.
	Propagation string `json:"propagation,omitempty"`
}

// Init runs the exec driver's namespace init when the process was started
// as one, and never returns then; otherwise it returns at once. The agent's
// main, and the TestMain of any package whose tests start exec tasks, must
// call it first thing.
func Init() {
	if len(os.Args) == 0 || os.Args[0] != initArg0 {
		return
	}
	// Namespace and credential changes must all happen on the thread that
	// finally execs.
	runtime.LockOSThread()
	errOut := os.NewFile(initErrorFD, "init-errors")
	err := runInit()
	// Only reached on failure: success replaces this process.
	fmt.Fprint(errOut, err.Error())
	os.Exit(127)
}

func runInit() error {
	syscall.CloseOnExec(initErrorFD)
	in := os.NewFile(initConfigFD, "init-config")
	b, err := io.ReadAll(in)
	in.Close()
	if err != nil {
		return fmt.Errorf("reading init config: %w", err)
	}
	var cfg initConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("decoding init config: %w", err)
	}
	steps := []struct {
		name string
		fn   func(*initConfig) error
	}{
		{"mounts", buildRoot},
		{"hostname", func(c *initConfig) error { return unix.Sethostname([]byte(c.Hostname)) }},
		{"root", enterRoot},
		{"capabilities", dropCaps},
		{"user", setUser},
	}
	for _, s := range steps {
		if err := s.fn(&cfg); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	if err := unix.Chdir(cfg.WorkDir); err != nil {
		return fmt.Errorf("work_dir %q: %w", cfg.WorkDir, err)
	}
	bin, err := lookPath(cfg.Command, cfg.Env)
	if err != nil {
		return err
	}
	argv := append([]string{cfg.Command}, cfg.Args...)
	return fmt.Errorf("executing %q: %w", bin, unix.Exec(bin, argv, cfg.Env))
}

// buildRoot mounts the chroot's contents. The mounts are made in the task's
// own mount namespace, so they vanish with its last process: nothing to
// clean up on the host, even after an agent crash.
func buildRoot(c *initConfig) error {
	// A propagating volume is cloned first, while the namespace's copy of
	// the host's mount is still a peer of it (clone(2) made it one): the
	// clone is a peer too, and stays one through what follows.
	clones, err := cloneVolumes(c.Mounts)
	if err != nil {
		return err
	}
	defer func() {
		for _, fd := range clones {
			unix.Close(fd)
		}
	}()
	// Without this, the binds would propagate back to the host's shared
	// mounts (systemd makes / shared).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	// pivot_root needs the new root to be a mount point.
	if err := unix.Mount(c.Root, c.Root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding root: %w", err)
	}
	for i, m := range c.Mounts {
		var err error
		if fd, ok := clones[i]; ok {
			err = attachVolume(c.Root, m, fd)
		} else {
			err = bind(c.Root, m)
		}
		if err != nil {
			return err
		}
	}
	if err := mountProc(c.Root); err != nil {
		return err
	}
	return mountDev(c.Root)
}

func bind(root string, m bindMount) error {
	target, err := mountPoint(root, m)
	if err != nil {
		return err
	}
	if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding %q at %q: %w", m.Source, m.Target, err)
	}
	return readOnly(target, m)
}

// mountPoint makes m's mount point inside root and returns it.
func mountPoint(root string, m bindMount) (string, error) {
	fi, err := os.Stat(m.Source)
	if err != nil {
		return "", fmt.Errorf("bind source %q: %w", m.Source, err)
	}
	target := filepath.Join(root, m.Target)
	if err := mkTarget(target, fi.IsDir()); err != nil {
		return "", err
	}
	// The root is the task's to write (a root task's, at least): a
	// symlink it left at a mount point must not aim a mount elsewhere.
	if real, err := filepath.EvalSymlinks(target); err != nil || real != target {
		return "", fmt.Errorf("mount point %q is a symlink (to %q) or unreadable: %v", m.Target, real, err)
	}
	return target, nil
}

// cloneVolumes makes a detached copy (open_tree) of each propagating
// volume's host path, by index in ms.
func cloneVolumes(ms []bindMount) (map[int]int, error) {
	clones := map[int]int{}
	for i, m := range ms {
		if m.Propagation == "" {
			continue
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, m.Source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			for _, fd := range clones {
				unix.Close(fd)
			}
			return nil, fmt.Errorf("cloning %q for propagation_mode %q (open_tree, Linux 5.2 or later): %w", m.Source, m.Propagation, err)
		}
		clones[i] = fd
	}
	return clones, nil
}

// attachVolume mounts the clone fd of m's source at its target. The clone
// is a peer of the host's mount: bidirectional keeps it one; host-to-task
// makes it a slave, which receives the host's later mounts and sends none
// back. The target's own mount is private, so the attach itself reaches
// no one.
func attachVolume(root string, m bindMount, fd int) error {
	target, err := mountPoint(root, m)
	if err != nil {
		return err
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mounting %q at %q: %w", m.Source, m.Target, err)
	}
	prop := uintptr(unix.MS_SHARED)
	if m.Propagation == drivers.PropagationHostToTask {
		prop = unix.MS_SLAVE
	}
	if err := unix.Mount("", target, "", prop|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("setting propagation %q on %q: %w", m.Propagation, m.Target, err)
	}
	return readOnly(target, m)
}

// readOnly remounts target read-only when m says so.
func readOnly(target string, m bindMount) error {
	if !m.ReadOnly {
		return nil
	}
	// A bind mount takes flags only on a remount. nosuid: a setuid binary
	// of the host (su, sudo) must not give an unprivileged task root.
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID)
	if err := unix.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("making %q read-only: %w", m.Target, err)
	}
	return nil
}

func mkTarget(target string, dir bool) error {
	if dir {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// mountProc mounts a /proc of the task's PID namespace: with a private one
// the task sees only its own processes.
func mountProc(root string) error {
	target := filepath.Join(root, "proc")
	if err := os.MkdirAll(target, 0o555); err != nil {
		return err
	}
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
	if err := unix.Mount("proc", target, "proc", flags, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	// The kernel's knobs stay read-only and its memory and secrets hidden
	// even from a root task: /proc/sysrq-trigger alone could reboot the node.
	for _, p := range procReadOnly {
		dst := filepath.Join(target, p)
		if _, err := os.Stat(dst); err != nil {
			continue
		}
		if err := bind(root, bindMount{Source: dst, Target: filepath.Join("/proc", p), ReadOnly: true}); err != nil {
			return err
		}
	}
	for _, p := range procMasked {
		dst := filepath.Join(target, p)
		if _, err := os.Stat(dst); err != nil {
			continue
		}
		if err := unix.Mount("/dev/null", dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("masking /proc/%s: %w", p, err)
		}
	}
	return nil
}

// procReadOnly and procMasked follow what container runtimes do to a
// container's /proc.
var (
	procReadOnly = []string{"bus", "fs", "irq", "sys", "sysrq-trigger"}
	procMasked   = []string{"kcore", "keys", "latency_stats", "sched_debug", "timer_list", "timer_stats"}
)

// taskDevices are the device nodes a task gets, bound from the host's.
var taskDevices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// mountDev gives the task a /dev of its own with only the harmless devices.
func mountDev(root string) error {
	dev := filepath.Join(root, "dev")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755,size=64k"); err != nil {
		return fmt.Errorf("mounting /dev: %w", err)
	}
	for _, d := range taskDevices {
		src := "/dev/" + d
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if err := bind(root, bindMount{Source: src, Target: "/dev/" + d}); err != nil {
			return err
		}
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("shm", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("mounting /dev/shm: %w", err)
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return nil
}

// enterRoot makes the task directory the root. pivot_root detaches the
// host's root from the namespace entirely, where chroot only hides it (a
// root process could chroot back out); no_pivot_root is for filesystems that
// refuse pivot_root (a ramdisk root).
func enterRoot(c *initConfig) error {
	if err := unix.Chdir(c.Root); err != nil {
		return err
	}
	if c.NoPivotRoot {
		if err := unix.Chroot("."); err != nil {
			return fmt.Errorf("chroot: %w", err)
		}
		return unix.Chdir("/")
	}
	// Stacking the old root under the new one and detaching it needs no
	// directory for the old root.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host's root: %w", err)
	}
	return unix.Chdir("/")
}

// dropCaps shrinks the capability bounding set to c.Caps. A root task's
// capabilities after exec are bounded by it; a task of any other user has
// none anyway once setUser has run.
func dropCaps(c *initConfig) error {
	keep := make(map[int]bool, len(c.Caps))
	for _, n := range c.Caps {
		if i, ok := capNumber(n); ok {
			keep[i] = true
		}
	}
	for i := 0; i <= lastCap(); i++ {
		if keep[i] {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(i), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("dropping capability %d: %w", i, err)
		}
	}
	return nil
}

// lastCap is the highest capability number the running kernel knows.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &n); err == nil {
			return n
		}
	}
	return len(capNames) - 1
}

func setUser(c *initConfig) error {
	if err := unix.Setgroups(c.Groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := unix.Setgid(c.GID); err != nil {
		return fmt.Errorf("setgid %d: %w", c.GID, err)
	}
	if err := unix.Setuid(c.UID); err != nil {
		return fmt.Errorf("setuid %d: %w", c.UID, err)
	}
	return nil
}

// lookPath finds the task's command inside the root: a path is taken as it
// is (relative to the task directory), a bare name is searched on the task's
// PATH.
func lookPath(cmd string, env []string) (string, error) {
	if strings.Contains(cmd, "/") {
		p := path.Join("/", cmd)
		if err := unix.Access(p, unix.X_OK); err != nil {
			return "", fmt.Errorf("command %q: %w", cmd, err)
		}
		return p, nil
	}
	pathVar := proctask.DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, dir := range filepath.SplitList(pathVar) {
		p := path.Join("/", dir, cmd)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("command %q: not found in the task's PATH %q inside its chroot", cmd, pathVar)
}
