package command

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/hashicorp/cli"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// edgeServer is a server-only dev agent with one client-only agent that
// dialled it and advertises an HTTP address nothing listens on: the CLI,
// talking to the server, reaches the node only through the session the
// node opened.
func edgeServer(t *testing.T) *agenttest.Agent {
	t.Helper()
	srv := agenttest.NewDevAgent(t, func(c *agent.Config) { c.Client.Enabled = false })
	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.AdvertiseAddrs.HTTP = "127.0.0.1:1"
	cfg.DataDir = t.TempDir()
	cfg.NodeName = "edge-cli"
	cfg.Client.Enabled = true
	cfg.Client.Servers = []string{srv.Server().RPCAddr().String()}
	cfg.Plugins = []*agent.PluginConfig{{Name: "raw_exec", Config: map[string]any{"enabled": true}}}
	edge, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = edge.Client().Destroy(); _ = edge.Shutdown() })
	wait.Poll(t, 30*time.Second, "the edge node's session", func() (bool, string) {
		return srv.Server().HasNodeConn(edge.Client().NodeID()), "none yet"
	})
	return srv
}

func runRawJob(t *testing.T, a *agenttest.Agent, id, script string) string {
	t.Helper()
	cfg := fmt.Sprintf("        command = \"/bin/sh\"\n        args = [\"-c\", %q]\n", script)
	code, _, errOut := run(t, a, jobRun, "-detach", writeJob(t, id, "raw_exec", cfg))
	must.Eq(t, 0, code, must.Sprint(errOut))
	return waitRunning(t, a, id, 1)[0].ID
}

// The alloc commands an operator reaches a task with work through a
// server for a node the server cannot dial: logs (whole, tail, follow to
// the end of a batch-like task), fs, signal, restart and exec.
func TestAllocClientCommands_ThroughNodeSession(t *testing.T) {
	a := edgeServer(t)
	id := runRawJob(t, a, "cli-edge", `trap 'echo hup' HUP; for i in 1 2 3 4 5; do echo "line $i"; done; echo to-stderr >&2; while true; do sleep 0.1; done`)
	prefix := id[:8]
	logs := func(args ...string) (int, string, string) {
		var out bytes.Buffer
		ui := cli.NewMockUi()
		c := &AllocLogsCommand{Meta: Meta{Ui: ui}, stdout: &out}
		code := c.Run(append([]string{"-address=" + a.HTTPAddr}, args...))
		return code, out.String(), ui.ErrorWriter.String()
	}
	wait.Poll(t, 30*time.Second, "the task's output", func() (bool, string) {
		_, out, errOut := logs(prefix)
		return strings.Contains(out, "line 5\n"), out + errOut
	})
	code, out, errOut := logs(prefix, "web")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrHasPrefix(t, "line 1\nline 2\n", out)
	_, out, _ = logs("-tail", "-n", "2", prefix)
	must.Eq(t, "line 4\nline 5\n", out)
	_, out, _ = logs("-tail", "-c", "3", prefix)
	must.Eq(t, " 5\n", out)
	_, out, _ = logs("-stderr", prefix)
	must.Eq(t, "to-stderr\n", out)
	code, _, errOut = logs(prefix, "nope")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Could not find task named "nope"`)

	var fsOut bytes.Buffer
	ui := cli.NewMockUi()
	code = (&AllocFSCommand{Meta: Meta{Ui: ui}, stdout: &fsOut}).Run([]string{"-address=" + a.HTTPAddr, prefix, "alloc/logs"})
	must.Eq(t, 0, code, must.Sprint(ui.ErrorWriter.String()))
	must.StrContains(t, fsOut.String(), "web.stdout.0")
	must.StrContains(t, fsOut.String(), "Mode")
	fsOut.Reset()
	code = (&AllocFSCommand{Meta: Meta{Ui: ui}, stdout: &fsOut}).Run([]string{"-address=" + a.HTTPAddr, prefix, "alloc/logs/web.stderr.0"})
	must.Eq(t, 0, code)
	must.Eq(t, "to-stderr\n", fsOut.String())
	code = (&AllocFSCommand{Meta: Meta{Ui: ui}}).Run([]string{"-address=" + a.HTTPAddr, prefix, "../../etc/passwd"})
	must.Eq(t, 1, code)
	must.StrContains(t, ui.ErrorWriter.String(), "400")

	code, _, errOut = run(t, a, func(m Meta) cli.Command { return &AllocSignalCommand{Meta: m} }, "-s", "HUP", prefix)
	must.Eq(t, 0, code, must.Sprint(errOut))
	wait.Poll(t, 30*time.Second, "the trap's echo", func() (bool, string) {
		_, out, _ := logs(prefix)
		return strings.Contains(out, "hup\n"), out
	})

	code, _, errOut = run(t, a, func(m Meta) cli.Command { return &AllocRestartCommand{Meta: m} }, prefix)
	must.Eq(t, 0, code, must.Sprint(errOut))
	wait.Poll(t, 30*time.Second, "the restarted task's output", func() (bool, string) {
		_, out, _ := logs(prefix)
		return strings.Count(out, "line 5\n") == 2, out
	})
	wait.Poll(t, 30*time.Second, "the restarted task running", func() (bool, string) {
		al, _, err := apiClient(t, a).Allocations().Info(id, nil)
		if err != nil {
			return false, err.Error()
		}
		ts := al.TaskStates["web"]
		return ts != nil && ts.State == "running" && ts.Restarts == 1, fmt.Sprintf("%+v", ts)
	})

	var stdout, stderr bytes.Buffer
	ui = cli.NewMockUi()
	ex := &AllocExecCommand{Meta: Meta{Ui: ui}, stdin: strings.NewReader("hi\n"), stdout: &stdout, stderr: &stderr}
	code = ex.Run([]string{"-address=" + a.HTTPAddr, prefix, "/bin/sh", "-c", `read x; echo "got $x"; exit 3`})
	must.Eq(t, 3, code, must.Sprint(ui.ErrorWriter.String()))
	must.Eq(t, "got hi\n", stdout.String())
}

// `alloc logs -f` follows a task's output as it is written and ends when
// the allocation does.
func TestAllocLogs_FollowEndsWithAllocation(t *testing.T) {
	a := edgeServer(t)
	src := `job "cli-follow" {
  type = "batch"
  group "web" {
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "for i in 1 2 3; do echo tick $i; sleep 0.3; done; sleep 1"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`
	path := filepath.Join(t.TempDir(), "follow.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	code, _, errOut := run(t, a, jobRun, "-detach", path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	id := waitRunning(t, a, "cli-follow", 1)[0].ID
	var out bytes.Buffer
	ui := cli.NewMockUi()
	done := make(chan int, 1)
	go func() {
		done <- (&AllocLogsCommand{Meta: Meta{Ui: ui}, stdout: &out}).Run([]string{"-address=" + a.HTTPAddr, "-f", id[:8]})
	}()
	select {
	case code := <-done:
		must.Eq(t, 0, code, must.Sprint(ui.ErrorWriter.String()))
	case <-time.After(60 * time.Second):
		t.Fatal("alloc logs -f did not end with the allocation")
	}
	must.StrContains(t, out.String(), "tick 1\ntick 2\ntick 3\n")
}
