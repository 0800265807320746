package autoscaler

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// edgeCluster is a server agent with short heartbeats and two client
// agents, c1 and c2, on this host.
func edgeCluster(t *testing.T) (server, c1, c2 *harness.Agent) {
	t.Helper()
	ags := harness.NewAgents(t)
	sp := harness.Ports{HTTP: harness.FreePort(t), RPC: harness.FreePort(t), Serf: harness.FreeSerfPort(t)}
	server = ags.Add(harness.AgentConfig{
		Name:  "server",
		Ports: sp,
		Config: fmt.Sprintf(`
ports {
  http = %d
  rpc  = %d
  serf = %d
}
server {
  min_heartbeat_ttl = "2s"
  heartbeat_grace   = "1s"
}
`, sp.HTTP, sp.RPC, sp.Serf),
		Args: []string{"-server", "-bootstrap-expect", "1", "-bind", "127.0.0.1", "-data-dir", harness.DataDirVar},
	})
	client := func(name string) *harness.Agent {
		p := harness.Ports{HTTP: harness.FreePort(t)}
		return ags.Add(harness.AgentConfig{
			Name:  name,
			Ports: p,
			Config: fmt.Sprintf(`
ports {
  http = %d
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`, p.HTTP),
			Args: []string{"-client", "-servers", server.RPCAddr(), "-bind", "127.0.0.1", "-node", name, "-data-dir", harness.DataDirVar},
		})
	}
	c1, c2 = client("c1"), client("c2")
	server.Start()
	c1.Start()
	c2.Start()
	waitNodes(t, server, 2)
	return server, c1, c2
}

// One of three allocations goes unknown when its client stops answering
// (SIGSTOP: the task keeps running, the agent misses its heartbeats). The
// autoscaler reads Running (2) with no load and asks for min (1): the
// servers refuse it while the allocation is unknown, so the group keeps 3,
// and the scale status names why. Once the client is back and the group
// is stable, the same request goes through: the refusal meant "not now".
// The count never grows above 3 on the way.
func TestAutoscaler_UnknownNotShrunk(t *testing.T) {
	server, c1, c2 := edgeCluster(t)
	load := t.TempDir() + "/load" // never created: no load
	runJob(t, server, burnJob("edge", load, 3, 1, 4, `
    spread {
      attribute = "${node.unique.name}"
    }
    disconnect {
      lost_after = "1h"
      replace    = false
    }
`+shortUpdate))
	perNode := map[string]int{}
	wait.Poll(t, 60*time.Second, "three allocations running on both nodes, the deployment done", func() (bool, string) {
		allocs, _, err := server.API().Jobs().Allocations("edge", false, nil)
		if err != nil {
			return false, err.Error()
		}
		clear(perNode)
		for _, a := range allocs {
			if a.ClientStatus == "running" {
				perNode[a.NodeName]++
			}
		}
		d, _, err := server.API().Jobs().LatestDeployment("edge", nil)
		if err != nil || d == nil {
			return false, fmt.Sprint(err)
		}
		return len(perNode) == 2 && d.Status == "successful", fmt.Sprintf("running per node %v, deployment %s", perNode, d.Status)
	})
	cut := c1
	if perNode["c2"] < perNode["c1"] {
		cut = c2
	}
	unknown := perNode[cut.Name]

	cut.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { cut.Signal(syscall.SIGCONT) })
	wait.Poll(t, 30*time.Second, cut.Name+"'s allocations unknown", func() (bool, string) {
		g := groupStatus(t, server, "edge")
		return g.Unknown == unknown, fmt.Sprintf("%+v", g)
	})
	g := groupStatus(t, server, "edge")
	must.Eq(t, 3-unknown, g.Running)
	must.StrContains(t, g.Unstable, fmt.Sprintf("%d allocations unknown", unknown))

	as := startAutoscaler(t, server.HTTPAddr())
	wait.Poll(t, 60*time.Second, "the autoscaler's scale-in refused", func() (bool, string) {
		return strings.Contains(as.Log(), "job scaling blocked while allocations are disconnected or reconnecting"),
			"no refusal in its log yet: " + lastLines(as.Log(), 3)
	})
	harness.Hold(t, 10*time.Second, "the group is not shrunk while allocations are unknown", func() error {
		if d := groupStatus(t, server, "edge").Desired; d != 3 {
			return fmt.Errorf("desired %d", d)
		}
		return nil
	})
	t.Logf("autoscaler on the refusal:\n%s", grepLines(as.Log(), "ERROR", "metrics found", "calculating scaling target", 6))

	cut.Signal(syscall.SIGCONT)
	took := wait.Poll(t, 90*time.Second, "scaled in once the group is stable", func() (bool, string) {
		g := groupStatus(t, server, "edge")
		if g.Desired > 3 {
			t.Fatalf("the group grew on reconnect: %+v", g)
		}
		return g.Desired == 1, fmt.Sprintf("%+v", g)
	})
	t.Logf("scaled in %v after the client came back", took)
}

// grepLines returns up to n lines of s that contain any of the words
// (the last n), for the test log.
func grepLines(s string, words ...any) string {
	n := words[len(words)-1].(int)
	var out []string
	for _, line := range strings.Split(s, "\n") {
		for _, w := range words[:len(words)-1] {
			if strings.Contains(line, w.(string)) {
				out = append(out, line)
				break
			}
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}
