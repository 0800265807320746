//go:build linux

package exec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/testutil/wait"
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

// tmpfsAt mounts a tmpfs of the test's own at a new directory, with the
// given propagation (unix.MS_SHARED or unix.MS_PRIVATE), so that a test
// depends on no mount of the host's; the mount and everything below it are
// detached when the test ends, whatever happened.
func tmpfsAt(t *testing.T, propagation uintptr) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vol")
	must.NoError(t, os.Mkdir(dir, 0o755))
	must.NoError(t, unix.Mount("tmpfs", dir, "tmpfs", 0, "size=4m,mode=0755"))
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting the test's tmpfs %s: %v", dir, err)
		}
	})
	must.NoError(t, unix.Mount("", dir, "", propagation, ""))
	return dir
}

// mountedBelow lists the host's mount points below dir.
func mountedBelow(t *testing.T, dir string) []string {
	t.Helper()
	refs, err := mountsBelow(dir)
	must.NoError(t, err)
	out := []string{}
	for _, r := range refs {
		out = append(out, strings.TrimPrefix(r.Path, dir))
	}
	return out
}

// release lets a task blocked reading word from the fifo at path go on:
// the open succeeds once the task has opened its end.
func release(t *testing.T, path, word string, d *Driver, cfg *drivers.TaskConfig) {
	t.Helper()
	wait.Poll(t, testTimeout, "the task to read "+path, func() (bool, string) {
		f, err := os.OpenFile(path, os.O_WRONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			st, _ := d.InspectTask(cfg.ID)
			out, _ := os.ReadFile(cfg.StdoutPath)
			errOut, _ := os.ReadFile(cfg.StderrPath)
			return false, fmt.Sprintf("%v; task %+v; stdout %q stderr %q", err, st, out, errOut)
		}
		defer f.Close()
		_, err = f.WriteString(word + "\n")
		return err == nil, fmt.Sprint(err)
	})
}

// propagationScript waits for the host's mount, reports whether it sees
// it, mounts a tmpfs of its own in the volume, says so and waits again.
// A step waits for its own word, so that an end of file (a writer that
// comes and goes without one, as a descriptor a concurrent fork held
// open does) is no go-ahead.
const propagationScript = `step() { until read x < /srv/vol/go && [ "$x" = "$1" ]; do :; done; }
step one
cat /srv/vol/fromhost/marker 2>/dev/null || echo no-host-mount
mount -t tmpfs task /srv/vol/fromtask && echo task > /srv/vol/fromtask/f && echo mounted
step two
`

// Each propagation_mode with the real kernel semantics, between a shared
// tmpfs on the host and a task that has CAP_SYS_ADMIN: the host's mount
// made after the task started reaches the task only with host-to-task and
// bidirectional; the task's own mount reaches the host only with
// bidirectional, and is gone from the host once the task is destroyed, so
// that a bidirectional task leaves nothing mounted behind it.
func TestStartTask_HostVolumePropagation(t *testing.T) {
	needIsolation(t)
	for _, tc := range []struct {
		mode          string
		seesHostMount bool
		hostSeesTask  bool
	}{
		{mode: drivers.PropagationPrivate},
		{mode: drivers.PropagationHostToTask, seesHostMount: true},
		{mode: drivers.PropagationBidirectional, seesHostMount: true, hostSeesTask: true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			vol := tmpfsAt(t, unix.MS_SHARED)
			for _, dir := range []string{"fromhost", "fromtask"} {
				must.NoError(t, os.Mkdir(filepath.Join(vol, dir), 0o755))
			}
			must.NoError(t, unix.Mkfifo(filepath.Join(vol, "go"), 0o600))
			d := newTestDriver(t, map[string]any{"allow_caps": []any{"sys_admin", "chown", "dac_override", "fowner", "setuid", "setgid"}})
			cfg := newTaskConfig(t, "/bin/sh", "-c", propagationScript)
			cfg.User = "root"
			cfg.Config["cap_add"] = []any{"sys_admin"}
			cfg.Mounts = []*drivers.MountConfig{{TaskPath: "/srv/vol", HostPath: vol, PropagationMode: tc.mode}}
			_, err := d.StartTask(cfg)
			must.NoError(t, err)

			// The task's root is built: what the host mounts now can
			// only reach it by propagation.
			must.NoError(t, unix.Mount("tmpfs", filepath.Join(vol, "fromhost"), "tmpfs", 0, "size=1m"))
			must.NoError(t, os.WriteFile(filepath.Join(vol, "fromhost", "marker"), []byte("host\n"), 0o644))
			release(t, filepath.Join(vol, "go"), "one", d, cfg)
			wait.Poll(t, testTimeout, "the task to mount its tmpfs", func() (bool, string) {
				out, _ := os.ReadFile(cfg.StdoutPath)
				errOut, _ := os.ReadFile(cfg.StderrPath)
				return strings.Contains(string(out), "mounted\n"), fmt.Sprintf("stdout %q stderr %q", out, errOut)
			})
			got, err := os.ReadFile(filepath.Join(vol, "fromtask", "f"))
			if tc.hostSeesTask {
				must.NoError(t, err)
				must.Eq(t, "task\n", string(got))
				must.SliceContains(t, mountedBelow(t, vol), "/fromtask")
			} else {
				must.True(t, os.IsNotExist(err), must.Sprintf("the task's mount reached the host: %q, %v", got, err))
				must.SliceNotContains(t, mountedBelow(t, vol), "/fromtask")
			}

			release(t, filepath.Join(vol, "go"), "two", d, cfg)
			res := waitExit(t, d, cfg.ID)
			out, _ := os.ReadFile(cfg.StdoutPath)
			must.True(t, res.Successful(), must.Sprint(res, string(out)))
			want := "no-host-mount\n"
			if tc.seesHostMount {
				want = "host\n"
			}
			must.Eq(t, want+"mounted\n", string(out))

			must.NoError(t, d.DestroyTask(cfg.ID, false))
			left := mountedBelow(t, vol)
			must.SliceNotContains(t, left, "/fromtask", must.Sprint("the task's mount outlived it on the host"))
			if tc.mode != drivers.PropagationBidirectional {
				// A bidirectional destroy also removes the host's
				// mounts made while the task ran (see the package
				// doc); the others touch nothing of the host's.
				must.Eq(t, []string{"/fromhost"}, left)
			}
		})
	}
}

// A propagating mode on a host mount that propagates nothing is refused
// with the fix, rather than accepted and silently private; so is a
// read-only bidirectional mount, as upstream.
func TestStartTask_HostVolumePropagationRefused(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	private := tmpfsAt(t, unix.MS_PRIVATE)
	for _, tc := range []struct {
		name string
		m    drivers.MountConfig
		want string
	}{
		{"private host mount", drivers.MountConfig{HostPath: private, PropagationMode: drivers.PropagationHostToTask},
			`propagation_mode "host-to-task": the host mount holding ` + fmt.Sprintf("%q (%s) is not shared", private, private)},
		{"read-only bidirectional", drivers.MountConfig{HostPath: tmpfsAt(t, unix.MS_SHARED), Readonly: true, PropagationMode: drivers.PropagationBidirectional},
			`propagation_mode "bidirectional" needs a writable volume`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newTaskConfig(t, "/bin/true")
			tc.m.TaskPath = "/srv"
			cfg.Mounts = []*drivers.MountConfig{&tc.m}
			_, err := d.StartTask(cfg)
			must.ErrorContains(t, err, tc.want)
		})
	}
}
