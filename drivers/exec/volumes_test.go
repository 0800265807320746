//go:build linux

package exec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// A host volume mounted by volume_mount is the host's directory inside the
// task's root: what the task writes there lands in the host path, which is
// the point of a host volume (data that outlives the allocation).
func TestStartTask_HostVolumeWritable(t *testing.T) {
	needIsolation(t)
	host := t.TempDir()
	must.NoError(t, os.Chmod(host, 0o777)) // the task runs as nobody
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", "echo from-the-task > /srv/data/out")
	cfg.Mounts = []*drivers.MountConfig{{TaskPath: "/srv/data", HostPath: host, PropagationMode: drivers.PropagationPrivate}}
	res, out := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res, out))
	got, err := os.ReadFile(filepath.Join(host, "out"))
	must.NoError(t, err)
	must.Eq(t, "from-the-task\n", string(got))
}

// A read-only mount can be read but not written, whoever the task runs as:
// read_only on the node's volume, the request or the mount is honoured.
func TestStartTask_HostVolumeReadOnly(t *testing.T) {
	needIsolation(t)
	host := t.TempDir()
	must.NoError(t, os.Chmod(host, 0o777))
	must.NoError(t, os.WriteFile(filepath.Join(host, "in"), []byte("seed\n"), 0o644))
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", "cat /srv/data/in; echo x > /srv/data/out && echo wrote || echo refused")
	cfg.User = "root"
	cfg.Mounts = []*drivers.MountConfig{{TaskPath: "/srv/data", HostPath: host, Readonly: true}}
	res, out := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res, out))
	must.Eq(t, []string{"seed", "refused"}, strings.Split(strings.TrimSpace(out), "\n"))
	_, err := os.Stat(filepath.Join(host, "out"))
	must.True(t, os.IsNotExist(err))
}

// A propagation mode the task's private mount namespace cannot honour is
// refused by name rather than silently made private.
func TestStartTask_HostVolumePropagationRefused(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/true")
	cfg.Mounts = []*drivers.MountConfig{{TaskPath: "/srv", HostPath: t.TempDir(), PropagationMode: drivers.PropagationHostToTask}}
	_, err := d.StartTask(cfg)
	must.ErrorContains(t, err, `propagation_mode "host-to-task" is not supported by the exec driver`)
}
