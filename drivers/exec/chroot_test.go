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

// The client's chroot_env replaces the default set: its host paths (keys)
// appear at its paths (values), and what it leaves out (/etc) is not there.
func TestStartTask_ClientChrootEnv(t *testing.T) {
	needIsolation(t)
	tools := t.TempDir()
	must.NoError(t, os.Chmod(tools, 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(tools, "hello"), []byte("from the host\n"), 0o644))
	env := map[string]string{tools: "/opt/tools"}
	for _, p := range []string{"/bin", "/lib", "/lib64", "/usr", "/sbin"} {
		env[p] = p
	}
	d, err := New(drivers.Options{ChrootEnv: env})
	must.NoError(t, err)
	t.Cleanup(func() {
		for _, id := range d.tasks.IDs() {
			_ = d.DestroyTask(id, true)
		}
	})
	cfg := newTaskConfig(t, "/bin/sh", "-c", `cat /opt/tools/hello; test -e /etc/passwd && echo "etc there" || echo "no etc"`)
	res, out := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res, out))
	must.Eq(t, []string{"from the host", "no etc"}, strings.Split(strings.TrimSpace(out), "\n"))
}

// A chroot_env entry that is not two absolute paths, or that would cover
// the task's own directories, stops the agent with the entry named.
func TestNew_BadChrootEnv(t *testing.T) {
	for _, env := range []map[string]string{
		{"bin": "/bin"},
		{"/bin": "bin"},
		{"/srv": "/alloc"},
		{"/srv": "/"},
	} {
		_, err := New(drivers.Options{ChrootEnv: env})
		must.ErrorContains(t, err, "client chroot_env", must.Sprint(env))
	}
}

// The group's network.dns resolv.conf and network.hostname hosts file are
// what the task reads at /etc/resolv.conf and /etc/hosts, and the host
// name is its own: the host's files stay as they were.
func TestStartTask_NetworkFiles(t *testing.T) {
	needIsolation(t)
	d, err := New(drivers.Options{})
	must.NoError(t, err)
	t.Cleanup(func() {
		for _, id := range d.tasks.IDs() {
			_ = d.DestroyTask(id, true)
		}
	})
	files := t.TempDir()
	resolv, hosts := filepath.Join(files, "resolv.conf"), filepath.Join(files, "hosts")
	must.NoError(t, os.WriteFile(resolv, []byte("nameserver 10.0.0.53\n"), 0o644))
	must.NoError(t, os.WriteFile(hosts, []byte("172.26.64.9 web-1\n"), 0o644))
	hostResolv, err := os.ReadFile("/etc/resolv.conf")
	must.NoError(t, err)
	cfg := newTaskConfig(t, "/bin/sh", "-c", `cat /etc/resolv.conf /etc/hosts; hostname`)
	cfg.ResolvConfPath, cfg.HostsPath, cfg.Hostname = resolv, hosts, "web-1"
	res, out := runScript(t, d, cfg)
	must.True(t, res.Successful(), must.Sprint(res, out))
	must.Eq(t, []string{"nameserver 10.0.0.53", "172.26.64.9 web-1", "web-1"}, strings.Split(strings.TrimSpace(out), "\n"))
	after, err := os.ReadFile("/etc/resolv.conf")
	must.NoError(t, err)
	must.Eq(t, string(hostResolv), string(after))
}
