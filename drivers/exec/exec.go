package exec

import (
	"errors"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/proctask"
)

// Name is the driver name jobs use in a task's `driver` field.
const Name = "exec"

// HandleVersion is the layout version of the DriverState this driver writes.
const HandleVersion = 1

// defaultUser is who a task runs as when its `user` is unset: nobody owns
// nothing, so a task can read the chroot and write only its own dirs.
const defaultUser = "nobody"

// defaultChrootEnv is upstream's default `chroot_env`: the host paths (key)
// bound read-only at the same place (value) in a task's root. What a host
// lacks (/lib32, /run/resolvconf) is skipped.
var defaultChrootEnv = map[string]string{
	"/bin":                 "/bin",
	"/etc":                 "/etc",
	"/lib":                 "/lib",
	"/lib32":               "/lib32",
	"/lib64":               "/lib64",
	"/run/resolvconf":      "/run/resolvconf",
	"/run/systemd/resolve": "/run/systemd/resolve",
	"/sbin":                "/sbin",
	"/usr":                 "/usr",
}

var (
	// ErrCannotIsolate is why a task is refused on a host where the
	// driver cannot isolate it (not root, no cgroups, no namespaces). The
	// task runner reports it as the task's Driver Failure.
	ErrCannotIsolate = errors.New("exec driver cannot isolate tasks on this host")

	// ErrTaskSetup is the cause when the task's init failed to build its
	// root, drop its privileges or exec the command.
	ErrTaskSetup = errors.New("setting up the task's isolation failed")

	// ErrKillTimeout is returned by StopTask and DestroyTask when the task
	// is still alive after SIGKILL and the kill wait.
	ErrKillTimeout = proctask.ErrKillTimeout
)

// Factory is New as a drivers.Factory.
func Factory(opts drivers.Options) (drivers.Driver, error) { return New(opts) }

// Name implements drivers.Driver.
func (d *Driver) Name() string { return Name }
