//go:build linux

package rawexec

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/netns"
)

// TestStartTask_JoinsNetNS checks that a task given the allocation's
// network namespace (bridge mode) runs in it and the agent's threads do
// not stay there: a task on the host's network would bypass its port
// mappings, and an agent thread left inside would send the agent's own
// traffic through the allocation.
func TestStartTask_JoinsNetNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	d := newTestDriver(t)
	must.True(t, drivers.CapabilitiesOf(d).NetNamespace)
	path := filepath.Join(t.TempDir(), "alloc-ns")
	must.NoError(t, netns.Create(path))
	t.Cleanup(func() { _ = netns.Remove(path) })
	var st syscall.Stat_t
	must.NoError(t, syscall.Stat(path, &st))
	hostNS, err := os.Readlink("/proc/self/ns/net")
	must.NoError(t, err)

	cfg := newTaskConfig(t, "readlink", "/proc/self/ns/net")
	cfg.NetNSPath = path
	_, err = d.StartTask(cfg)
	must.NoError(t, err)
	res := waitExit(t, d, cfg.ID)
	must.True(t, res.Successful(), must.Sprint(res))
	out, err := os.ReadFile(cfg.StdoutPath)
	must.NoError(t, err)
	must.Eq(t, fmt.Sprintf("net:[%d]\n", st.Ino), string(out))
	after, err := os.Readlink("/proc/self/ns/net")
	must.NoError(t, err)
	must.Eq(t, hostNS, after)
}
