package autoscaler

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// meterJob is two allocations of 100 MHz, one per node, replaced when
// their node is cut off, with a policy whose checks are nomad-apm's
// node-pool queries, by datacenter and by node class (the selectors a
// cluster policy uses). min = max = count: the autoscaler computes, and
// never changes the count.
const meterJob = `
job "meter" {
  datacenters = ["dc1"]
  group "g" {
    count = 2
    spread {
      attribute = "${node.unique.name}"
    }
    disconnect {
      lost_after = "1h"
      replace    = true
    }
    scaling {
      min = 2
      max = 2
      policy {
        evaluation_interval = "2s"
        cooldown            = "2s"
        check "class" {
          source = "nomad-apm"
          query  = "node_percentage-allocated_cpu/edge/node_class"
          strategy "target-value" {
            target = 50
          }
        }
      }
    }
    task "idle" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }
  }
}
`

// poolData is one "collected node pool resource data" line of nomad-apm.
type poolData struct{ allocated, allocatable int }

var poolLine = regexp.MustCompile(`collected node pool resource data: (?:query=(\S+) )?allocated_cpu=(\d+) allocated_memory=\d+ allocatable_cpu=(\d+)`)

// poolQueries is what nomad-apm last collected for each node-pool query
// in log (from offset on), and every error the autoscaler logged there.
func poolQueries(log string) (map[string]poolData, []string) {
	out := map[string]poolData{}
	var errs []string
	for _, line := range strings.Split(log, "\n") {
		if m := poolLine.FindStringSubmatch(line); m != nil {
			a, _ := strconv.Atoi(m[2])
			b, _ := strconv.Atoi(m[3])
			// 0.5.0 does not name the query in the line: the meter
			// job's one check is the one query.
			out["node_percentage-allocated_cpu/edge/node_class"] = poolData{allocated: a, allocatable: b}
		}
		if strings.Contains(line, "[ERROR]") && !strings.Contains(line, "monitoring policy IDs") {
			errs = append(errs, line)
		}
	}
	return out, errs
}

// nomad-apm's node-pool queries, as a cluster policy's checks run them,
// against a pool one of whose nodes is disconnected: the autoscaler
// leaves the disconnected node out of the pool (only ready, eligible,
// undrained nodes count), both its capacity and its allocations, so the
// pool reads as the reachable node with the replacement placed on it,
// with no error (allocations carry the Resources the query sums), before,
// during and after the cut.
func TestAutoscaler_NodePoolQueriesDisconnected(t *testing.T) {
	e := edgeCluster(t)
	runJob(t, e.server, meterJob)
	perNode := runningPerNode(t, e.server, "meter", 2)
	must.Eq(t, map[string]int{"c1": 1, "c2": 1}, perNode)

	capacity := map[string]int{}
	nodes, _, err := e.server.API().Nodes().List(nil)
	must.NoError(t, err)
	for _, stub := range nodes {
		n, _, err := e.server.API().Nodes().Info(stub.ID, nil)
		must.NoError(t, err)
		capacity[n.Name] = int(n.NodeResources.Cpu.CpuShares) - int(n.ReservedResources.Cpu.CpuShares)
	}
	queries := []string{"node_percentage-allocated_cpu/edge/node_class"}
	// waitPool waits until every query reads want in the log after from.
	waitPool := func(what string, from int, want poolData) {
		t.Helper()
		wait.Poll(t, 60*time.Second, what, func() (bool, string) {
			got, errs := poolQueries(as(t, e).Log()[from:])
			if len(errs) > 0 {
				t.Fatalf("the autoscaler logged errors: %s", strings.Join(errs, "\n"))
			}
			for _, q := range queries {
				if got[q] != want {
					return false, fmt.Sprintf("want %+v for each query, got %+v", want, got)
				}
			}
			return true, ""
		})
		got, _ := poolQueries(as(t, e).Log()[from:])
		t.Logf("%s: %+v = %.1f %%", what, got[queries[0]], float64(want.allocated)*100/float64(want.allocatable))
	}

	startAutoscaler(t, e.ags, e.server.HTTPAddr())
	waitPool("both nodes ready", 0, poolData{allocated: 200, allocatable: capacity["c1"] + capacity["c2"]})

	from := len(as(t, e).Log())
	heal := e.fab.Apply("c1", harness.LinkDown)
	wait.Poll(t, 60*time.Second, "c1 disconnected, its allocation replaced on c2", func() (bool, string) {
		g := groupStatus(t, e.server, "meter")
		nd, _, err := e.server.API().Nodes().Info(nodeID(t, e, "c1"), nil)
		if err != nil {
			return false, err.Error()
		}
		return nd.Status == "disconnected" && g.Unknown == 1 && g.Running == 2, fmt.Sprintf("node %s, %+v", nd.Status, g)
	})
	waitPool("c1 disconnected", from, poolData{allocated: 200, allocatable: capacity["c2"]})

	from = len(as(t, e).Log())
	heal()
	waitPool("c1 back, the reconnect resolved", from, poolData{allocated: 200, allocatable: capacity["c1"] + capacity["c2"]})
	must.Eq(t, 2, groupStatus(t, e.server, "meter").Desired)
}

// as is the test's autoscaler, the agent startAutoscaler added.
func as(t *testing.T, e *edge) *harness.Agent {
	t.Helper()
	for _, a := range e.ags.All() {
		if a.Name == "autoscaler" {
			return a
		}
	}
	t.Fatal("no autoscaler started")
	return nil
}

// nodeID is the ID of the node named name.
func nodeID(t *testing.T, e *edge, name string) string {
	t.Helper()
	nodes, _, err := e.server.API().Nodes().List(nil)
	must.NoError(t, err)
	for _, n := range nodes {
		if n.Name == name {
			return n.ID
		}
	}
	t.Fatalf("no node %s", name)
	return ""
}

// 0.5.0's nomad-apm reads the value of a `datacenter` (or `node_pool`)
// selector as a node class, against upstream servers too (checked behind
// a logging proxy; upstream autoscaler issues 599 and 938): on a node of
// class "edge" in dc1, `.../edge/datacenter` collects the node's pool.
// Our docs tell users to select by node_class because of it; this test
// says when an autoscaler fixture no longer behaves so.
func TestAutoscaler_DatacenterSelectorReadsClass(t *testing.T) {
	ags, dev := startDevAgent(t, "client {\n  node_class = \"edge\"\n}\n")
	runJob(t, dev, strings.Replace(meterJob, "/edge/node_class", "/edge/datacenter", 1))
	startAutoscaler(t, ags, dev.HTTPAddr())
	wait.Poll(t, 60*time.Second, "nomad-apm to collect the pool of .../edge/datacenter", func() (bool, string) {
		log := as(t, &edge{ags: ags}).Log()
		got, errs := poolQueries(log)
		p, ok := got["node_percentage-allocated_cpu/edge/node_class"]
		return ok && p.allocated == 200 && p.allocatable > 0, fmt.Sprintf("%+v; %d errors; log tail: %s", got, len(errs), lastLines(log, 5))
	})
}
