package upstream

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/internal/sim"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// simNodes sizes the fleet of the side-by-side run, one allocation a node:
// 50 in CI, NOMAD_SIM_SIDE_NODES for a larger measurement.
var simNodes = func() int {
	if n, err := strconv.Atoi(os.Getenv("NOMAD_SIM_SIDE_NODES")); err == nil && n > 0 {
		return n
	}
	return 50
}()

// TestSimulatorSideBySide drives three upstream 1.6.5 servers, then three
// of ours, with the same simulated fleet (internal/sim: our client's code
// on each node; upstream's client protocol for upstream's servers,
// upstreamrpc.Client) and the same scenario, on this machine in one run:
// the fleet registers, a job of one allocation on each node
// (distinct_hosts) with a one-hour disconnect window is placed and runs, every node is cut off until the
// servers mark it disconnected and its allocations unknown, then all come
// back at once. Each side must end with every allocation running,
// nothing restarted and nothing placed beyond the originals; the times of
// each phase are logged side by side (website/content/docs/benchmarks.md).
// Both sides get the same heartbeat settings and no liveness sessions
// (upstream has none), so the disconnect detection is the heartbeat TTL on
// both. One allocation a node keeps the scenario exact: a node cut off
// with none goes down, not disconnected, and replacements of the first
// nodes marked would go to nodes cut off but not marked yet; with
// distinct_hosts there is no node for a replacement.
func TestSimulatorSideBySide(t *testing.T) {
	upstreamBin := harness.UnpackTool(t, upstreamGz, t.TempDir())
	results := map[string]simPhases{}
	for _, side := range []struct {
		name     string
		bin      string
		upstream bool
	}{{"upstream 1.6.5", upstreamBin, true}, {"ours", "", false}} {
		t.Run(strings.Fields(side.name)[0], func(t *testing.T) {
			results[side.name] = runSimScenario(t, side.bin, side.upstream)
		})
	}
	for name, r := range results {
		t.Logf("%-15s ready %5.1fs  placed+running %5.1fs  all disconnected %5.1fs  healed %5.1fs (%d nodes, one allocation each)",
			name, r.ready.Seconds(), r.running.Seconds(), r.disconnected.Seconds(), r.healed.Seconds(), simNodes)
	}
}

// simPhases are the durations of the scenario's phases on one side.
type simPhases struct{ ready, running, disconnected, healed time.Duration }

// simServerConfig is server i of three (ours or upstream's) with short
// heartbeat TTLs and grace, so that a cut node shows in seconds; not
// shorter, or a loaded machine (CI runs packages side by side) misses
// heartbeats of nodes that are not cut, which then go down.
func simServerConfig(i int, p harness.Ports, join []string, upstream bool) string {
	return agentHead(harness.DataDirVar, fmt.Sprintf("sim-server-%d", i), p, upstream) + fmt.Sprintf(`server {
  enabled           = true
  bootstrap_expect  = 3
  heartbeat_grace   = "5s"
  min_heartbeat_ttl = "5s"
  server_join {
    retry_join     = [%s]
    retry_interval = "1s"
  }
}
`, strings.Join(join, ", "))
}

func runSimScenario(t *testing.T, bin string, upstream bool) simPhases {
	ags := harness.NewAgents(t)
	ports := []harness.Ports{harness.FreePorts(t), harness.FreePorts(t), harness.FreePorts(t)}
	var servers []*harness.Agent
	var rpcAddrs []string
	for i, p := range ports {
		servers = append(servers, ags.Add(harness.AgentConfig{
			Name: fmt.Sprintf("sim-server-%d", i+1), Bin: bin, Ports: p,
			Config: simServerConfig(i+1, p, serfAddrs(ports, i), upstream),
		}))
		rpcAddrs = append(rpcAddrs, fmt.Sprintf("127.0.0.1:%d", p.RPC))
	}
	for _, s := range servers {
		s.Start()
	}
	waitLeader(t, servers, "the")
	api := servers[0].API()

	start := time.Now()
	fleet, err := sim.Start(sim.Config{
		Count: simNodes, Servers: rpcAddrs, DataDir: t.TempDir(), Upstream: upstream, NoSessions: true,
		NodesPerConn: 50,
	})
	must.NoError(t, err)
	t.Cleanup(fleet.Shutdown)
	select {
	case <-fleet.Ready():
	case <-time.After(60 * time.Second):
		t.Fatalf("the fleet did not get ready within 60s: %+v", fleet.Stats())
	}
	var out simPhases
	out.ready = time.Since(start)

	job := nomadapi.NewServiceJob("fleet", "fleet", "global", 50)
	job.Datacenters = []string{"dc1"}
	job.Constrain(nomadapi.NewConstraint("${attr.sim}", "=", "true"))
	job.Constrain(nomadapi.NewConstraint("", "distinct_hosts", "true"))
	tg := nomadapi.NewTaskGroup("g", simNodes)
	//lint:ignore SA1019 upstream 1.6.5 knows only max_client_disconnect (disconnect blocks came in 1.8)
	tg.MaxClientDisconnect = new(time.Hour)
	tg.Update = &nomadapi.UpdateStrategy{MaxParallel: new(0)}
	task := nomadapi.NewTask("t", "mock_driver").SetConfig("run_for", "1h")
	task.Require(&nomadapi.Resources{CPU: new(50), MemoryMB: new(16)})
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	start = time.Now()
	_, _, err = api.Jobs().Register(job, nil)
	must.NoError(t, err)
	want := simNodes
	// Running as the servers know it: an allocation whose client has not
	// reported it running yet is pending there, and a node cut off with
	// only pending ones goes down, not disconnected.
	wait.Poll(t, 60*time.Second, "every allocation running, as the servers know", func() (bool, string) {
		_, allocs, line := simView(t, api)
		return allocs["running"] == want, line
	})
	out.running = time.Since(start)

	start = time.Now()
	_, err = fleet.Silence(sim.Selection{})
	must.NoError(t, err)
	wait.Poll(t, 90*time.Second, "every node disconnected and every allocation unknown", func() (bool, string) {
		nodes, allocs, line := simView(t, api)
		return nodes["disconnected"] == simNodes && allocs["unknown"] == want, line
	})
	out.disconnected = time.Since(start)

	start = time.Now()
	fleet.Return(0)
	wait.Poll(t, 60*time.Second, "every node ready and every allocation running again", func() (bool, string) {
		nodes, allocs, line := simView(t, api)
		return nodes["ready"] == simNodes && allocs["running"] == want, line
	})
	out.healed = time.Since(start)

	s := fleet.Stats()
	must.Eq(t, 0, s.Restarts, must.Sprintf("nothing restarted: %+v", s))
	must.Eq(t, want, s.Tasks, must.Sprintf("no task started beyond the originals: %+v", s))
	_, allocs, line := simView(t, api)
	must.Eq(t, want, allocs["total"], must.Sprintf("nothing placed beyond the originals: %s", line))
	return out
}

// simView counts the simulated nodes by status and the job's allocations
// by client status, as the servers see them, and says so in a line.
func simView(t *testing.T, api *nomadapi.Client) (nodes, allocs map[string]int, line string) {
	t.Helper()
	nodes, allocs = map[string]int{}, map[string]int{}
	list, _, err := api.Nodes().List(nil)
	if err != nil {
		return nodes, allocs, err.Error()
	}
	for _, n := range list {
		if strings.HasPrefix(n.Name, "sim-") && !strings.HasPrefix(n.Name, "sim-server") {
			nodes[n.Status]++
		}
	}
	al, _, err := api.Jobs().Allocations("fleet", true, nil)
	if err != nil {
		return nodes, allocs, err.Error()
	}
	for _, a := range al {
		allocs[a.ClientStatus]++
		allocs["total"]++
	}
	return nodes, allocs, fmt.Sprintf("nodes %v, allocations %v", nodes, allocs)
}
