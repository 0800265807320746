package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/netns"
)

// TestDriver_JoinsNetNS checks that a container of a bridge-mode group
// runs in the allocation's network namespace (through Podman's "ns:<path>"
// network mode), and that such a task may not pick a network_mode of its
// own: on another network its group's port mappings would not reach it.
func TestDriver_JoinsNetNS(t *testing.T) {
	d := newTestDriver(t)
	// Podman resolves the path in its own mount namespace: under
	// /var/run/netns, where ip netns and the client pin them.
	path := filepath.Join("/var/run/netns", fmt.Sprintf("docker-test-%d", os.Getpid()))
	must.NoError(t, netns.Create(path))
	t.Cleanup(func() { _ = netns.Remove(path) })
	var st syscall.Stat_t
	must.NoError(t, syscall.Stat(path, &st))

	cfg := newTaskConfig(t, sh(`readlink /proc/self/ns/net`))
	cfg.NetNSPath = path
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	res := waitExit(t, d, cfg.ID)
	must.True(t, res.Successful(), must.Sprintf("result: %s", res))
	readFileUntil(t, cfg.StdoutPath, fmt.Sprintf("net:[%d]\n", st.Ino))

	own := sh(`true`)
	own["network_mode"] = "host"
	cfg = newTaskConfig(t, own)
	cfg.NetNSPath = path
	_, err = d.StartTask(cfg)
	must.ErrorContains(t, err, "network_mode")
}

// TestDriver_NetworkFiles checks that a container of a group with
// network.dns and network.hostname reads the allocation's resolv.conf and
// hosts file at /etc and has the group's host name, not the engine's.
func TestDriver_NetworkFiles(t *testing.T) {
	d := newTestDriver(t)
	path := filepath.Join("/var/run/netns", fmt.Sprintf("docker-files-%d", os.Getpid()))
	must.NoError(t, netns.Create(path))
	t.Cleanup(func() { _ = netns.Remove(path) })
	files := t.TempDir()
	must.NoError(t, os.Chmod(files, 0o755))
	resolv, hosts := filepath.Join(files, "resolv.conf"), filepath.Join(files, "hosts")
	must.NoError(t, os.WriteFile(resolv, []byte("nameserver 10.0.0.53\n"), 0o644))
	must.NoError(t, os.WriteFile(hosts, []byte("172.26.64.9 web-1\n"), 0o644))

	cfg := newTaskConfig(t, sh(`cat /etc/resolv.conf /etc/hosts; hostname`))
	cfg.NetNSPath, cfg.ResolvConfPath, cfg.HostsPath, cfg.Hostname = path, resolv, hosts, "web-1"
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	res := waitExit(t, d, cfg.ID)
	must.True(t, res.Successful(), must.Sprintf("result: %s", res))
	readFileUntil(t, cfg.StdoutPath, "nameserver 10.0.0.53\n172.26.64.9 web-1\nweb-1\n")
}
