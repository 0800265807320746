package agent

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"
)

// `nomad agent -dev` with a config file starts, prints the banner, and
// stops cleanly on shutdown, removing nothing it was not asked to.
func TestCommand_DevAgentRunsAndStops(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "agent.hcl")
	must.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(`
ports {
  http = %d
  rpc  = %d
}
`, freePort(t), freePort(t))), 0o600))

	ui := cli.NewMockUi()
	shutdown := make(chan struct{})
	started := make(chan *Agent, 1)
	cmd := &Command{Ui: ui, ShutdownCh: shutdown, started: func(a *Agent) { started <- a }}

	code := make(chan int, 1)
	go func() {
		code <- cmd.Run([]string{"-dev", "-config", cfgPath, "-data-dir", filepath.Join(dir, "data"), "-node", "laptop", "-log-level", "WARN"})
	}()
	var a *Agent
	select {
	case a = <-started:
	case c := <-code:
		t.Fatalf("agent exited with %d before starting:\n%s%s", c, ui.OutputWriter.String(), ui.ErrorWriter.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("agent did not start within 30s; output so far:\n%s", ui.OutputWriter.String())
	}
	must.Eq(t, "laptop", a.Config().NodeName)
	must.True(t, a.Config().DevMode)

	out := ui.OutputWriter.String()
	must.StrContains(t, out, "==> Loaded configuration from "+cfgPath)
	must.StrContains(t, out, "==> Nomad agent configuration:")
	must.StrContains(t, out, "Region: global (DC: dc1)")
	must.StrContains(t, out, "==> Nomad agent started! Log data will stream in below:")

	close(shutdown)
	select {
	case c := <-code:
		must.Eq(t, 0, c, must.Sprintf("stderr: %s", ui.ErrorWriter.String()))
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop within 30s of shutdown")
	}
	must.StrContains(t, ui.OutputWriter.String(), "==> Gracefully shutting down agent...")
	// An explicit -data-dir survives a dev agent.
	_, err := os.Stat(filepath.Join(dir, "data"))
	must.NoError(t, err)
}

// Unknown flags and bad config files print the problem and exit 1.
func TestCommand_BadInput(t *testing.T) {
	ui := cli.NewMockUi()
	must.Eq(t, 1, (&Command{Ui: ui}).Run([]string{"-dve"}))
	must.StrContains(t, ui.ErrorWriter.String(), "flag provided but not defined: -dve")
	must.StrContains(t, ui.ErrorWriter.String(), "Usage: nomad agent")

	cfgPath := filepath.Join(t.TempDir(), "bad.hcl")
	must.NoError(t, os.WriteFile(cfgPath, []byte("server {\n  enabeld = true\n}\n"), 0o600))
	ui = cli.NewMockUi()
	must.Eq(t, 1, (&Command{Ui: ui}).Run([]string{"-dev", "-config", cfgPath}))
	must.StrContains(t, ui.ErrorWriter.String(), cfgPath+":2:3: Unsupported argument")
}

// A -dev agent without -data-dir keeps its state in a temporary directory
// and removes it on shutdown: nothing of a dev agent outlives it.
func TestAgent_DevTempDataDirRemoved(t *testing.T) {
	cfg := DevConfig()
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	a, err := NewAgent(cfg, nil)
	must.NoError(t, err)
	dir := a.DataDir()
	must.StrContains(t, filepath.Base(dir), "nomad-dev-")
	_, err = os.Stat(dir)
	must.NoError(t, err)

	must.NoError(t, a.Shutdown())
	_, err = os.Stat(dir)
	must.True(t, os.IsNotExist(err), must.Sprintf("dev data dir %s still exists: %v", dir, err))
}

// freePort returns a loopback port that was free a moment ago. A port of
// 0 in a config file means "unset" (as upstream's), so tests of the
// agent command name real ports.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
