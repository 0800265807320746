// Package devagent tests the README's promise with the real binary: the dev
// agent starts, `job run` of the README's example runs a real process, and
// `job stop` kills it.
package devagent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func TestMain(m *testing.M) { harness.Main(m) }

// startAgent runs `nomad agent -dev` on free ports and waits for its node.
func startAgent(t *testing.T) *harness.Agent {
	t.Helper()
	p := harness.Ports{HTTP: harness.FreePort(t), RPC: harness.FreePort(t)}
	a := harness.NewAgents(t).Add(harness.AgentConfig{
		Name:   "dev",
		Ports:  p,
		Config: fmt.Sprintf("ports {\n  http = %d\n  rpc = %d\n}\n", p.HTTP, p.RPC),
		Args:   []string{"-dev", "-data-dir", harness.DataDirVar},
	})
	a.Start()
	waitNodeReady(t, a)
	return a
}

// waitNodeReady waits until the agent's own node is ready.
func waitNodeReady(t *testing.T, a *harness.Agent) {
	t.Helper()
	wait.Poll(t, 20*time.Second, "dev agent node ready", func() (bool, string) {
		a.MustNotHaveDied()
		var nodes []struct{ Status string }
		if err := a.GetJSON("/v1/nodes", &nodes); err != nil {
			return false, err.Error()
		}
		return len(nodes) == 1 && nodes[0].Status == "ready", fmt.Sprintf("nodes: %+v", nodes)
	})
}

type allocStub struct {
	ID, ClientStatus, DesiredStatus string
}

// The README's tour: the example job's raw_exec task really runs, shows as
// running, and `job stop` kills the process.
func TestDevAgent_ReadmeExample(t *testing.T) {
	a := startAgent(t)

	out, code := a.Nomad("job", "run", "../../example.nomad.hcl")
	must.Eq(t, 0, code, must.Sprint(out))
	must.StrContains(t, out, `finished with status "complete"`)

	var allocs []allocStub
	took := wait.Poll(t, 10*time.Second, "example allocation running", func() (bool, string) {
		if err := a.GetJSON("/v1/job/example/allocations", &allocs); err != nil {
			return false, err.Error()
		}
		return len(allocs) == 1 && allocs[0].ClientStatus == "running", fmt.Sprintf("%+v", allocs)
	})
	t.Logf("allocation running %v after job run returned (README promises within 2s)", took)

	pids := harness.AllocPIDs(allocs[0].ID)
	must.Len(t, 1, pids, must.Sprint("the sleep task is a real process"))
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[0]))
	must.NoError(t, err)
	must.StrContains(t, string(cmdline), "sleep")

	status, code := a.Nomad("job", "status", "example")
	must.Eq(t, 0, code, must.Sprint(status))
	must.StrContains(t, status, "Task Group  Queued  Starting  Running  Failed  Complete  Lost  Unknown")

	alloc, code := a.Nomad("alloc", "status", allocs[0].ID[:8])
	must.Eq(t, 0, code, must.Sprint(alloc))
	must.StrContains(t, alloc, "Client Status       = running")

	out, code = a.Nomad("job", "stop", "example")
	must.Eq(t, 0, code, must.Sprint(out))
	wait.Poll(t, 15*time.Second, "task process gone after job stop", func() (bool, string) {
		left := harness.AllocPIDs(allocs[0].ID)
		return len(left) == 0, fmt.Sprintf("pids still running: %v", left)
	})
	wait.Poll(t, 10*time.Second, "allocation complete", func() (bool, string) {
		if err := a.GetJSON("/v1/job/example/allocations", &allocs); err != nil {
			return false, err.Error()
		}
		return allocs[0].ClientStatus == "complete" && allocs[0].DesiredStatus == "stop", fmt.Sprintf("%+v", allocs)
	})
}

// Bad input reaches the operator as a clear error and registers nothing.
func TestDevAgent_BadJobFile(t *testing.T) {
	a := startAgent(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.nomad.hcl")
	must.NoError(t, os.WriteFile(bad, []byte(`job "bad" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      vault {
        policies = ["web"]
      }
    }
  }
}
`), 0o644))
	out, code := a.Nomad("job", "run", bad)
	must.Eq(t, 1, code, must.Sprint(out))
	must.StrContains(t, out, "bad.nomad.hcl:5:7")
	must.StrContains(t, out, `"vault"`)

	var jobs []struct{ ID string }
	must.NoError(t, a.GetJSON("/v1/jobs", &jobs))
	must.SliceEmpty(t, jobs)

	negative := filepath.Join(dir, "negative.nomad.hcl")
	must.NoError(t, os.WriteFile(negative, []byte(strings.ReplaceAll(`job "neg" {
  group "g" {
    count = -1
    task "t" {
      driver = "mock_driver"
    }
  }
}
`, "\t", "  ")), 0o644))
	out, code = a.Nomad("job", "run", negative)
	must.NotEq(t, 0, code, must.Sprint(out))
	must.StrContains(t, out, "count can't be negative")
	must.NoError(t, a.GetJSON("/v1/jobs", &jobs))
	must.SliceEmpty(t, jobs)
}
