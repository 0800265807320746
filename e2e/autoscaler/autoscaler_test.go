// Package autoscaler runs the real Nomad Autoscaler (v0.5.0, unmodified,
// from ../shared/tools) against the real nomad binary: it discovers a
// group's scaling block from our API, scales the group up under CPU load
// and back down, does nothing while a deployment is active, and does not
// shrink a group whose allocations are unknown. Each test skips, with a
// message, when the autoscaler binary is absent.
package autoscaler

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

// autoscalerTool is the reference binary in ../shared/tools.
const autoscalerTool = "nomad-autoscaler-0.5.0"

// startAutoscaler runs the autoscaler, as one of ags, against the nomad
// HTTP API at addr with the built-in nomad-apm, target-value and
// nomad-target plugins and short default intervals, at debug level. The
// harness kills it at the end of the test and keeps its log when the test
// failed; it skips the test when the binary is absent.
func startAutoscaler(t *testing.T, ags *harness.Agents, addr string) *harness.Agent {
	t.Helper()
	port := harness.FreePort(t)
	as := ags.Add(harness.AgentConfig{
		Name:    "autoscaler",
		Program: harness.Tool(t, autoscalerTool),
		Ports:   harness.Ports{HTTP: port},
		Config: fmt.Sprintf(`
log_level  = "debug"
plugin_dir = %q
http {
  bind_address = "127.0.0.1"
  bind_port    = %d
}
nomad {
  address = %q
}
policy {
  default_evaluation_interval = "2s"
  default_cooldown            = "4s"
}
apm "nomad-apm" {
  driver = "nomad-apm"
}
strategy "target-value" {
  driver = "target-value"
}
target "nomad-target" {
  driver = "nomad-target"
}
`, harness.DataDirVar, port, addr),
		Args: []string{"agent", "-config", harness.ConfigVar},
	})
	as.Start()
	return as
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// startDevAgent runs `nomad agent -dev` on free ports, as the first of
// the test's agents, and waits for its node.
func startDevAgent(t *testing.T, config string) (*harness.Agents, *harness.Agent) {
	t.Helper()
	p := harness.Ports{HTTP: harness.FreePort(t), RPC: harness.FreePort(t)}
	ags := harness.NewAgents(t)
	a := ags.Add(harness.AgentConfig{
		Name:   "dev",
		Ports:  p,
		Config: fmt.Sprintf("ports {\n  http = %d\n  rpc = %d\n}\n%s", p.HTTP, p.RPC, config),
		Args:   []string{"-dev", "-data-dir", harness.DataDirVar},
	})
	a.Start()
	waitNodes(t, a, 1)
	return ags, a
}

// waitNodes waits until n nodes are ready.
func waitNodes(t *testing.T, a *harness.Agent, n int) {
	t.Helper()
	wait.Poll(t, 30*time.Second, fmt.Sprintf("%d nodes ready", n), func() (bool, string) {
		a.MustNotHaveDied()
		var nodes []struct{ Name, Status string }
		if err := a.GetJSON("/v1/nodes", &nodes); err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, nd := range nodes {
			if nd.Status == "ready" {
				ready++
			}
		}
		return ready == n, fmt.Sprintf("nodes: %+v", nodes)
	})
}

// burnJob is a service job whose task spins the CPU while loadFile exists
// and sleeps otherwise, with a scaling block for nomad-apm's avg_cpu and
// the target-value strategy at 30. extra goes into the group.
func burnJob(id, loadFile string, count, min, max int, extra string) string {
	return burnJobAt(id, loadFile, count, min, max, 30, extra)
}

// burnJobAt is burnJob with the strategy's target (percent of a core:
// nomad-apm's cpu is the allocations' CpuStats.Percent).
func burnJobAt(id, loadFile string, count, min, max, target int, extra string) string {
	return fmt.Sprintf(`
job %q {
  datacenters = ["dc1"]
  group "g" {
    count = %d
%s
    scaling {
      min = %d
      max = %d
      policy {
        evaluation_interval = "2s"
        cooldown            = "4s"
        check "cpu" {
          source = "nomad-apm"
          query  = "avg_cpu"
          strategy "target-value" {
            target = %d
          }
        }
      }
    }
    task "burn" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "while :; do if [ -e %s ]; then i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; else sleep 0.5; fi; done"]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }
  }
}
`, id, count, extra, min, max, target, loadFile)
}

// runJob registers a job file through the CLI.
func runJob(t *testing.T, a *harness.Agent, src string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "job.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	out, code := a.Nomad("job", "run", "-detach", path)
	must.Eq(t, 0, code, must.Sprint(out))
}

// scaleGroup is a group in /v1/job/:id/scale, with our fields (Unknown,
// Reconnecting, Unstable) the official client does not know.
type scaleGroup struct {
	Desired, Running, Unknown, Reconnecting int
	Unstable                                string
	Events                                  []struct {
		Error   bool
		Message string
	}
}

// groupStatus is the job's "g" group in /v1/job/:id/scale.
func groupStatus(t *testing.T, a *harness.Agent, job string) scaleGroup {
	t.Helper()
	var st struct{ TaskGroups map[string]scaleGroup }
	must.NoError(t, a.GetJSON("/v1/job/"+job+"/scale", &st))
	return st.TaskGroups["g"]
}

// waitCount waits until the group's count (Desired) satisfies ok.
func waitCount(t *testing.T, a *harness.Agent, job, what string, timeout time.Duration, ok func(int) bool) time.Duration {
	t.Helper()
	return wait.Poll(t, timeout, what, func() (bool, string) {
		g := groupStatus(t, a, job)
		return ok(g.Desired), fmt.Sprintf("desired %d running %d events %d", g.Desired, g.Running, len(g.Events))
	})
}

// update keeps deployments short, so that the deployment each scaling
// action starts does not hold the next one back for long.
const shortUpdate = `
    update {
      min_healthy_time  = "1s"
      healthy_deadline  = "30s"
      progress_deadline = "1m"
    }
`

// The autoscaler finds the group's policy through /v1/scaling/policies,
// reads CPU through nomad-apm, and scales the group up while its task
// spins and back down to min once it stops: the whole loop an operator
// sets up with nothing but a scaling block.
func TestAutoscaler_ScalesUpAndDown(t *testing.T) {
	harness.Tool(t, autoscalerTool) // skip before starting anything
	ags, a := startDevAgent(t, "")
	load := filepath.Join(t.TempDir(), "load")
	runJob(t, a, burnJob("burn", load, 1, 1, 3, shortUpdate))
	as := startAutoscaler(t, ags, a.HTTPAddr())

	policies, _, err := a.API().Scaling().ListPolicies(nil)
	must.NoError(t, err)
	must.Len(t, 1, policies)
	wait.Poll(t, 30*time.Second, "autoscaler evaluating the job's policy", func() (bool, string) {
		return strings.Contains(as.Log(), "policy_id="+policies[0].ID), "no log line names the policy yet"
	})

	must.NoError(t, os.WriteFile(load, nil, 0o644))
	took := waitCount(t, a, "burn", "scaled up under load", 90*time.Second, func(n int) bool { return n >= 2 })
	t.Logf("scaled up %v after the load started", took)

	must.NoError(t, os.Remove(load))
	took = waitCount(t, a, "burn", "scaled back down to min", 90*time.Second, func(n int) bool { return n == 1 })
	t.Logf("scaled down %v after the load stopped", took)

	out, code := a.Nomad("job", "scaling-events", "burn")
	must.Eq(t, 0, code, must.Sprint(out))
	must.StrContains(t, out, "Task Group  Count  PrevCount  Date")
}

// While the job's deployment is active, the autoscaler's scale-up is
// refused with upstream's words, which it treats as a no-op: the count
// does not change, and the refusal is in the job's scaling events.
func TestAutoscaler_NothingDuringDeployment(t *testing.T) {
	harness.Tool(t, autoscalerTool)
	ags, a := startDevAgent(t, "")
	load := filepath.Join(t.TempDir(), "load")
	must.NoError(t, os.WriteFile(load, nil, 0o644))
	// The first version's deployment waits min_healthy_time before it
	// can succeed: longer than the test watches. A target of 1 % of a
	// core: any burning at all asks for more, however loaded the machine
	// (at load average 100 the burner got less than the usual 30 %, and
	// the autoscaler rightly asked for nothing).
	runJob(t, a, burnJobAt("burn", load, 1, 1, 3, 1, `
    update {
      min_healthy_time  = "5m"
      healthy_deadline  = "10m"
      progress_deadline = "15m"
    }
`))
	as := startAutoscaler(t, ags, a.HTTPAddr())

	wait.Poll(t, 60*time.Second, "autoscaler tried to scale up and was refused", func() (bool, string) {
		g := groupStatus(t, a, "burn")
		for _, ev := range g.Events {
			if ev.Error && ev.Message == "job scaling blocked due to active deployment" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(g.Events))
	})
	harness.Hold(t, 6*time.Second, "count stays 1 during the deployment", func() error {
		if d := groupStatus(t, a, "burn").Desired; d != 1 {
			return fmt.Errorf("desired %d", d)
		}
		return nil
	})
	must.StrContains(t, as.Log(), "due to active deployment")
}
