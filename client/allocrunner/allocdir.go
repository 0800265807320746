package allocrunner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
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
// It makes each directory with one mkdir, parents first, instead of
// os.MkdirAll's stat-then-mkdir walk: a thousand allocations arriving at once
// all create directories under the same parent, and every syscall there
// queues on that parent's lock.
func (d *AllocDir) Build(tasks []string) error {
	if err := checkName("allocation ID", d.id); err != nil {
		return fmt.Errorf("building alloc dir: %w", err)
	}
	for _, t := range tasks {
		if err := checkTaskName(t); err != nil {
			return fmt.Errorf("building alloc dir: %w", err)
		}
	}
	type dir struct {
		path string
		perm os.FileMode
	}
	if err := os.MkdirAll(filepath.Dir(d.Dir), 0o755); err != nil {
		return fmt.Errorf("building alloc dir: %w", err)
	}
	dirs := []dir{
		{d.Dir, 0o755},
		{d.SharedDir, 0o755},
		{d.LogDir, 0o755},
		{filepath.Join(d.SharedDir, DataDirName), 0o755},
		{filepath.Join(d.SharedDir, TmpDirName), 0o777 | os.ModeSticky},
	}
	for _, t := range tasks {
		td := d.TaskDir(t)
		dirs = append(dirs,
			dir{td.Dir, 0o755},
			dir{td.LocalDir, 0o755},
			dir{td.TmpDir, 0o777 | os.ModeSticky},
			// Secrets are the task's business only.
			dir{td.SecretsDir, 0o700},
		)
	}
	for _, dir := range dirs {
		if err := os.Mkdir(dir.path, dir.perm); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("building alloc dir: %w", err)
		}
	}
	for _, t := range tasks {
		td := d.TaskDir(t)
		for _, p := range []string{td.StdoutPath, td.StderrPath} {
			fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND|unix.O_CLOEXEC, 0o644)
			if err != nil {
				return fmt.Errorf("creating log file %s: %w", p, err)
			}
			_ = unix.Close(fd)
		}
	}
	return nil
}

// Destroy removes the allocation's directory.
func (d *AllocDir) Destroy() error {
	if err := checkName("allocation ID", d.id); err != nil {
		return fmt.Errorf("removing alloc dir: %w", err)
	}
	if err := os.RemoveAll(d.Dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing alloc dir: %w", err)
	}
	return nil
}
