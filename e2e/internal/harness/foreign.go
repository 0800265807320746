package harness

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/mounts"
)

// UpstreamOnLoopback is the config the upstream agent of ../shared/tools
// needs to run bound to 127.0.0.1 on a machine without Consul or internet
// access (see its README): advertise addresses, no update check, no
// Consul. A test adds it to the rest of the agent's config.
const UpstreamOnLoopback = `disable_update_check = true
advertise {
  http = "127.0.0.1"
  rpc  = "127.0.0.1"
  serf = "127.0.0.1"
}
consul {
  server_auto_join = false
  client_auto_join = false
  auto_advertise   = false
}
`

// binary is what the agent runs: its own Bin, ours with the faultclock
// tag, or the nomad binary Main built.
func (a *Agent) binary() string {
	switch {
	case a.bin != "":
		return a.bin
	case a.faultBin != "":
		return a.faultBin
	}
	return bin
}

// UnpackTool unpacks a gzipped reference binary of ../shared/tools (see
// its README) into dir and returns its path. It skips the test, saying
// where the file was looked for, when the file is absent: a clone without
// the tools still passes.
func UnpackTool(t testing.TB, gzPath, dir string) string {
	t.Helper()
	gz, err := os.Open(gzPath)
	if err != nil {
		t.Skipf("reference binary %s is not here (%v): see ../shared/tools/README.md", gzPath, err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	must.NoError(t, err)
	out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(gzPath), ".gz"))
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	must.NoError(t, err)
	_, err = io.Copy(f, zr)
	must.NoError(t, err)
	must.NoError(t, f.Close())
	return out
}

// cleanupForeign kills what an agent of another binary left: the helper
// processes it starts from its own binary (upstream's executor and
// logmon outlive their agent, as ours are meant to for re-attaching), and
// the mounts it made under its data dir (upstream mounts a tmpfs on every
// task's secrets dir), which would keep the test's directory from being
// removed.
func (ags *Agents) cleanupForeign() {
	for _, a := range ags.All() {
		if a.bin == "" {
			continue
		}
		for _, pid := range pidsWithCmdline(a.bin) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = mounts.UnmountUnder(a.DataDir)
	}
}
