package allocrunner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/helper/mounts"
)

// Directory names inside an allocation directory, as upstream lays them out
// so that `nomad alloc fs` paths and habits carry over.
const (
	SharedAllocName = "alloc" // shared by the group's tasks
	LogDirName      = "logs"
	TaskLocalDir    = "local"
	TaskSecretsDir  = "secrets"
	TmpDirName      = "tmp"
	DataDirName     = "data"
)

// AllocDir is the on-disk layout of one allocation:
//
//	<root>/<allocID>/alloc/{logs,data,tmp}
//	<root>/<allocID>/alloc/logs/<task>.stdout.0 and .stderr.0
//	<root>/<allocID>/<task>/{local,secrets,tmp}
type AllocDir struct {
	Dir       string
	SharedDir string
	LogDir    string

	id string // as the server sent it, checked before any use on disk
}

// ErrUnsafeName is an allocation ID or task name that would not be one
// directory of its own inside the alloc dir.
var ErrUnsafeName = errors.New("unsafe name for a directory")

// NewAllocDir returns the layout of allocID under root; nothing is created.
func NewAllocDir(root, allocID string) *AllocDir {
	dir := filepath.Join(root, allocID)
	shared := filepath.Join(dir, SharedAllocName)
	return &AllocDir{Dir: dir, SharedDir: shared, LogDir: filepath.Join(shared, LogDirName), id: allocID}
}

// checkName refuses a name that is not a single, ordinary path element:
// the client runs as root, and a name from the server (validated there,
// but a server can be wrong or impersonated) must never place or remove
// anything outside the alloc dir.
func checkName(what, name string) error {
	if name == "." || !filepath.IsLocal(name) || filepath.Base(name) != name || strings.ContainsAny(name, "\\\x00") {
		return fmt.Errorf("%w: unsafe %s %q", ErrUnsafeName, what, name)
	}
	return nil
}

// checkTaskName also keeps tasks out of the directory the group shares.
func checkTaskName(name string) error {
	if name == SharedAllocName {
		return fmt.Errorf("%w: unsafe task name %q: the shared directory has that name", ErrUnsafeName, name)
	}
	return checkName("task name", name)
}

// TaskDir is the layout of one task's directory.
type TaskDir struct {
	Dir        string
	LocalDir   string
	SecretsDir string
	TmpDir     string
	StdoutPath string
	StderrPath string
}

// Paths inside a chroot'd task: its task directory is the root.
const (
	chrootAllocDir   = "/alloc"
	chrootLocalDir   = "/local"
	chrootSecretsDir = "/secrets"
	chrootTmpDir     = "/tmp"
)

// inChroot returns the layout as a task whose root is its task directory
// sees it; only the shared directory is ever visible there.
func (d *AllocDir) inChroot() *AllocDir {
	out := *d
	out.SharedDir = chrootAllocDir
	out.LogDir = filepath.Join(chrootAllocDir, LogDirName)
	return &out
}

// inChroot returns the layout as the task itself sees it when its task
// directory is its root. The log paths stay host paths: the client opens
// those files, not the task.
func (d TaskDir) inChroot() TaskDir {
	d.Dir = "/"
	d.LocalDir = chrootLocalDir
	d.SecretsDir = chrootSecretsDir
	d.TmpDir = chrootTmpDir
	return d
}

// TaskDir returns the layout of task's directory.
func (d *AllocDir) TaskDir(task string) TaskDir {
	dir := filepath.Join(d.Dir, task)
	return TaskDir{
		Dir:        dir,
		LocalDir:   filepath.Join(dir, TaskLocalDir),
		SecretsDir: filepath.Join(dir, TaskSecretsDir),
		TmpDir:     filepath.Join(dir, TmpDirName),
		StdoutPath: filepath.Join(d.LogDir, task+".stdout.0"),
		StderrPath: filepath.Join(d.LogDir, task+".stderr.0"),
	}
}

// Build creates the allocation's directories and empty log files for tasks.
// It is idempotent, so a restored allocation rebuilds whatever is missing.
//
// Each entry is one mkdirat or mknodat relative to a descriptor of the alloc
// dir, parents first, an existing one being kept: the kernel resolves a name
// or two instead of the whole data dir path each time, and the root is not
// stat'ed unless it is missing. What is left is the filesystem's own cost of
// a directory (on ext4, an inode and a 4 KiB block each).
func (d *AllocDir) Build(tasks []string) error {
	if err := checkName("allocation ID", d.id); err != nil {
		return fmt.Errorf("building alloc dir: %w", err)
	}
	for _, t := range tasks {
		if err := checkTaskName(t); err != nil {
			return fmt.Errorf("building alloc dir: %w", err)
		}
	}
	fd, err := d.create()
	if err != nil {
		return fmt.Errorf("building alloc dir: %w", err)
	}
	defer unix.Close(fd)
	for _, e := range sharedLayout {
		if err := d.mkdirAt(fd, e.rel, e.perm); err != nil {
			return fmt.Errorf("building alloc dir: %w", err)
		}
	}
	for _, t := range tasks {
		for _, e := range taskLayout {
			if err := d.mkdirAt(fd, filepath.Join(t, e.rel), e.perm); err != nil {
				return fmt.Errorf("building alloc dir: %w", err)
			}
		}
		for _, name := range []string{t + ".stdout.0", t + ".stderr.0"} {
			if err := d.createFileAt(fd, filepath.Join(SharedAllocName, LogDirName, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// layoutEntry is one directory of the layout, relative to its parent: the
// alloc dir for sharedLayout, a task's directory for taskLayout.
type layoutEntry struct {
	rel  string
	perm uint32 // mkdir(2) mode bits, the umask applies
}

// sharedLayout and taskLayout are in creation order, parents first.
var (
	sharedLayout = []layoutEntry{
		{SharedAllocName, 0o755},
		{filepath.Join(SharedAllocName, LogDirName), 0o755},
		{filepath.Join(SharedAllocName, DataDirName), 0o755},
		{filepath.Join(SharedAllocName, TmpDirName), 0o1777},
	}
	taskLayout = []layoutEntry{
		{".", 0o755},
		{TaskLocalDir, 0o755},
		{TmpDirName, 0o1777},
		// Secrets are the task's business only.
		{TaskSecretsDir, 0o700},
	}
)

// create makes the alloc dir (and the root above it, when missing) and
// returns a descriptor to create the rest relative to.
func (d *AllocDir) create() (int, error) {
	err := os.Mkdir(d.Dir, 0o755)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(d.Dir), 0o755); err == nil {
			err = os.Mkdir(d.Dir, 0o755)
		}
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return -1, err
	}
	var fd int
	err = ignoringEINTR(func() (err error) {
		fd, err = unix.Open(d.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: d.Dir, Err: err}
	}
	return fd, nil
}

// mkdirAt makes rel under the alloc dir open as fd; one that exists is kept.
// A scratch directory (sticky) gets its mode set past the umask: a task
// running as another user than the agent must be able to write there.
func (d *AllocDir) mkdirAt(fd int, rel string, perm uint32) error {
	err := ignoringEINTR(func() error { return unix.Mkdirat(fd, rel, perm) })
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return &os.PathError{Op: "mkdir", Path: filepath.Join(d.Dir, rel), Err: err}
	}
	if perm&unix.S_ISVTX != 0 {
		if err := ignoringEINTR(func() error { return unix.Fchmodat(fd, rel, perm, 0) }); err != nil {
			return &os.PathError{Op: "chmod", Path: filepath.Join(d.Dir, rel), Err: err}
		}
	}
	return nil
}

// createFileAt makes rel an empty file under the alloc dir open as fd; one
// that exists is kept. mknod makes it in one syscall with no descriptor to
// close, and, unlike open, never follows a symlink or waits on a FIFO left
// at that name.
func (d *AllocDir) createFileAt(fd int, rel string) error {
	err := ignoringEINTR(func() error { return unix.Mknodat(fd, rel, unix.S_IFREG|0o644, 0) })
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("creating log file %s: %w", filepath.Join(d.Dir, rel), err)
	}
	return nil
}

// ignoringEINTR retries f while a signal interrupts it, as package os does:
// on network and FUSE filesystems the runtime's preemption signals can.
func ignoringEINTR(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// Destroy removes the allocation's directory.
func (d *AllocDir) Destroy() error {
	if err := checkName("allocation ID", d.id); err != nil {
		return fmt.Errorf("removing alloc dir: %w", err)
	}
	// A mount below it (upstream Nomad's tmpfs on a secrets dir, in an
	// allocation taken over from it) would make the removal fail.
	if err := mounts.UnmountUnder(d.Dir); err != nil {
		return fmt.Errorf("removing alloc dir: %w", err)
	}
	if err := os.RemoveAll(d.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing alloc dir: %w", err)
	}
	return nil
}
