package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// A host volume mount becomes a container bind with its read-only flag and
// upstream's propagation mapping (private rprivate, host-to-task rslave,
// bidirectional rshared), whatever the plugin's volumes { enabled } says.
func TestBuildSpec_HostVolumes(t *testing.T) {
	cfg := &drivers.TaskConfig{ID: "a/web", Name: "web", AllocID: "a", TaskDir: "/d/web", Mounts: []*drivers.MountConfig{
		{TaskPath: "/data", HostPath: "/srv/data", PropagationMode: drivers.PropagationPrivate},
		{TaskPath: "/ro", HostPath: "/srv/ro", Readonly: true, PropagationMode: drivers.PropagationHostToTask},
		{TaskPath: "/both", HostPath: "/srv/both", PropagationMode: drivers.PropagationBidirectional},
	}}
	spec, err := buildSpec(cfg, taskConfig{Image: "x"}, "sha256:abc")
	must.NoError(t, err)
	must.Eq(t, []string{"/srv/both:/both:rw,rshared", "/srv/data:/data:rw,rprivate", "/srv/ro:/ro:ro,rslave"}, spec.HostConfig.Binds)
}

// A file the container writes into its host volume lands in the host path,
// and a read-only one refuses the write.
func TestDriver_HostVolumeWrite(t *testing.T) {
	d := newTestDriver(t)
	rw, ro := t.TempDir(), t.TempDir()
	must.NoError(t, os.Chmod(rw, 0o777))
	cfg := newTaskConfig(t, sh("echo from-the-container > /data/out; echo x > /ro/out && echo wrote || echo refused"))
	cfg.Mounts = []*drivers.MountConfig{{TaskPath: "/data", HostPath: rw}, {TaskPath: "/ro", HostPath: ro, Readonly: true}}
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	res := waitExit(t, d, cfg.ID)
	must.True(t, res.Successful(), must.Sprint(res))
	got, err := os.ReadFile(filepath.Join(rw, "out"))
	must.NoError(t, err)
	must.Eq(t, "from-the-container\n", string(got))
	must.StrContains(t, strings.TrimSpace(readFileUntil(t, cfg.StdoutPath, "refused")), "refused")
	_, err = os.Stat(filepath.Join(ro, "out"))
	must.True(t, os.IsNotExist(err))
}
