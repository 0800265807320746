package agent

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
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

	a, ui, stop := runCommand(t, "-dev", "-config", cfgPath, "-data-dir", filepath.Join(dir, "data"), "-node", "laptop", "-log-level", "WARN")
	must.Eq(t, "laptop", a.Config().NodeName)
	must.True(t, a.Config().DevMode)

	out := ui.OutputWriter.String()
	must.StrContains(t, out, "==> Loaded configuration from "+cfgPath)
	must.StrContains(t, out, "==> Nomad agent configuration:")
	must.StrContains(t, out, "Region: global (DC: dc1)")
	must.StrContains(t, out, "==> Nomad agent started! Log data will stream in below:")

	stop()
	must.StrContains(t, ui.OutputWriter.String(), "==> Gracefully shutting down agent...")
	// An explicit -data-dir survives a dev agent.
	_, err := os.Stat(filepath.Join(dir, "data"))
	must.NoError(t, err)
}

// runCommand runs `nomad agent` with args until it has started and
// returns the agent, its UI and a stop that shuts it down and checks it
// exits 0.
func runCommand(t *testing.T, args ...string) (*Agent, *cli.MockUi, func()) {
	t.Helper()
	ui := cli.NewMockUi()
	shutdown := make(chan struct{})
	started := make(chan *Agent, 1)
	cmd := &Command{Ui: ui, ShutdownCh: shutdown, started: func(a *Agent) { started <- a }}
	code := make(chan int, 1)
	go func() { code <- cmd.Run(args) }()
	var a *Agent
	select {
	case a = <-started:
	case c := <-code:
		t.Fatalf("agent exited with %d before starting:\n%s%s", c, ui.OutputWriter.String(), ui.ErrorWriter.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("agent did not start within 30s; output so far:\n%s", ui.OutputWriter.String())
	}
	stopped := false
	stop := func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		close(shutdown)
		select {
		case c := <-code:
			must.Eq(t, 0, c, must.Sprintf("stderr: %s", ui.ErrorWriter.String()))
		case <-time.After(30 * time.Second):
			t.Fatal("agent did not stop within 30s of shutdown")
		}
	}
	t.Cleanup(stop)
	return a, ui, stop
}

// log_file with log_json: the agent's log lines land in nomad.log in the
// named directory as JSON objects with hclog's keys, rotated by
// log_rotate_bytes into nomad-<unix ns>.log files (each within the limit
// unless it holds one longer line), at most
// log_rotate_max_files of them, while the terminal still gets the log.
func TestCommand_LogFile(t *testing.T) {
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs") + string(os.PathSeparator)
	cfgPath := filepath.Join(dir, "agent.hcl")
	must.NoError(t, os.WriteFile(cfgPath, []byte(fmt.Sprintf(`
ports {
  http = %d
  rpc  = %d
}
log_file             = %q
log_json             = true
log_rotate_bytes     = 400
log_rotate_max_files = 2
`, freePort(t), freePort(t), logs)), 0o600))

	_, ui, stop := runCommand(t, "-dev", "-config", cfgPath, "-log-level", "DEBUG")
	stop()
	b, err := os.ReadFile(filepath.Join(logs, "nomad.log"))
	must.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var first map[string]any
	must.NoError(t, json.Unmarshal([]byte(lines[0]), &first), must.Sprint(lines[0]))
	must.MapContainsKeys(t, first, []string{"@level", "@message", "@timestamp"})
	rotated, err := filepath.Glob(filepath.Join(logs, "nomad-*.log"))
	must.NoError(t, err)
	must.SliceLen(t, 2, rotated, must.Sprint("a debug-level dev agent logs well past 3 files of 400 bytes"))
	for _, r := range rotated {
		b, err := os.ReadFile(r)
		must.NoError(t, err)
		if len(b) > 400 {
			must.Eq(t, 1, strings.Count(string(b), "\n"), must.Sprintf("%s: %d bytes", r, len(b)))
		}
	}
	must.StrContains(t, ui.OutputWriter.String(), `"@level"`)
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

// Flags win over config files, which merge in the order given (a directory
// in lexical order); a relative -data-dir is made absolute.
func TestCommand_FlagsOverFiles(t *testing.T) {
	dir := t.TempDir()
	confDir := filepath.Join(dir, "nomad.d")
	must.NoError(t, os.Mkdir(confDir, 0o700))
	write := func(path, src string) {
		must.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	}
	write(filepath.Join(dir, "base.hcl"), `
region     = "base"
datacenter = "base"
data_dir   = "/srv/base"
server {
  enabled          = true
  bootstrap_expect = 3
  server_join {
    retry_join = ["10.0.0.1", "10.0.0.2"]
  }
}
`)
	write(filepath.Join(confDir, "10-dc.hcl"), `datacenter = "from-dir"`)
	write(filepath.Join(confDir, "20-client.json"), `{"client": {"enabled": true, "servers": ["10.0.0.1"], "meta": {"a": "file"}}}`)

	cmd := &Command{Ui: cli.NewMockUi()}
	cfg, code := cmd.readConfig([]string{
		"-config", filepath.Join(dir, "base.hcl"), "-config", confDir,
		"-region", "flag", "-data-dir", "rel/data", "-node", "n1", "-bind", "10.1.2.3",
		"-bootstrap-expect", "5", "-retry-join", "10.0.0.7", "-retry-join", "10.0.0.8:4648",
		"-retry-interval", "2s", "-retry-max", "4", "-raft-protocol", "3",
		"-servers", "10.0.0.2, 10.0.0.3:5647", "-meta", "a=flag", "-meta", "b=x=y",
		"-node-class", "lte", "-network-interface", "eth1",
	})
	must.Eq(t, 0, code, must.Sprint(cmd.Ui.(*cli.MockUi).ErrorWriter.String()))
	wd, err := os.Getwd()
	must.NoError(t, err)
	must.Eq(t, "flag", cfg.Region)
	must.Eq(t, "from-dir", cfg.Datacenter)
	must.Eq(t, filepath.Join(wd, "rel/data"), cfg.DataDir)
	must.Eq(t, "n1", cfg.NodeName)
	must.Eq(t, "10.1.2.3", cfg.BindAddr)
	must.True(t, cfg.Server.Enabled)
	must.True(t, cfg.Client.Enabled)
	must.Eq(t, 5, cfg.Server.BootstrapExpect)
	must.Eq(t, &ServerJoin{RetryJoin: []string{"10.0.0.7", "10.0.0.8:4648"}, RetryInterval: 2 * time.Second, RetryMax: 4}, cfg.Server.ServerJoin)
	// Servers accumulate across files and the flag, as upstream.
	must.Eq(t, []string{"10.0.0.1:4647", "10.0.0.2:4647", "10.0.0.3:5647"}, cfg.Client.Servers)
	must.Eq(t, map[string]string{"a": "flag", "b": "x=y"}, cfg.Client.Meta)
	must.Eq(t, "lte", cfg.Client.NodeClass)
	must.Eq(t, "eth1", cfg.Client.NetworkInterface)
}

// Upstream flags this version lacks are refused by name, and bad flag
// values name the flag.
func TestCommand_FlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-rejoin", "-dev"}, "-rejoin is not supported by this version"},
		{[]string{"-dev", "-encrypt", "abc"}, "server.encrypt must be base64"},
		{[]string{"-dev", "--consul-address", "1.2.3.4:8500"}, "-consul-address is not supported by this version"},
		{[]string{"-dev", "-meta", "novalue"}, `-meta "novalue" must be KEY=VALUE`},
		{[]string{"-dev", "-raft-protocol", "2"}, "server.raft_protocol 2 is not supported by this version"},
		{[]string{"-client", "-bootstrap-expect", "3", "-data-dir", "/tmp"}, "server.bootstrap_expect (-bootstrap-expect) requires the server"},
		{[]string{"-server"}, "must specify a data directory (data_dir or -data-dir)"},
		{[]string{"-dev", "-retry-join", "provider=aws tag_key=x"}, "cloud auto-join"},
		{[]string{"-dev", "-retry-interval", "soon"}, `invalid value "soon" for flag -retry-interval`},
	} {
		ui := cli.NewMockUi()
		_, code := (&Command{Ui: ui}).readConfig(tc.args)
		must.Eq(t, 1, code, must.Sprintf("%v", tc.args))
		must.StrContains(t, ui.ErrorWriter.String(), tc.want, must.Sprintf("%v", tc.args))
	}
}
