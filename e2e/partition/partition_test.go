// Package partition cuts a client off the network for real: a dev server
// and a client agent run each in a network namespace of its own on the
// harness's fabric, and the test takes the client's link down and up
// again, or makes it drop every packet with iptables. It needs root and
// iproute2 (and iptables for the packet-drop cut); elsewhere it skips and
// says why.
package partition

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func TestMain(m *testing.M) { harness.Main(m) }

type nodeStub struct{ ID, Name, Status string }

type allocStub struct {
	ID, NodeID, ClientStatus, DesiredStatus string
	TaskGroup                               string
	TaskStates                              map[string]struct {
		Restarts  uint64
		StartedAt time.Time
	}
}

// edge is a dev server and a client agent, each in its own namespace on
// a fabric; startEdgeWith runs one allocation of a group with a disconnect
// window on the client.
type edge struct {
	t      *testing.T
	fab    *harness.Fabric
	agents *harness.Agents
	server *harness.Agent
	client *harness.Agent
	nodeID string
	alloc  allocStub // as first seen running
}

func (e *edge) allocs() []allocStub {
	var list []allocStub
	_ = e.server.GetJSON("/v1/job/edge/allocations", &list)
	return list
}

func (e *edge) nodeStatus() string {
	var nd nodeStub
	_ = e.server.GetJSON("/v1/node/"+e.nodeID, &nd)
	return nd.Status
}

// mockTask is the edge job's task unless a test says otherwise.
const mockTask = `
    task "app" {
      driver = "mock_driver"
      config {
        run_for = "1h"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }`

// edgeOptions vary the edge.
type edgeOptions struct {
	// task is the edge job's task (startEdgeWith).
	task string
	// netOnly gives the client the host's mounts (AgentConfig.NetOnly).
	netOnly bool
	// clientConfig is the client agent's config file (plugins).
	clientConfig string
	// fault is how the test cuts the client off: the fabric skips the
	// test where it cannot.
	fault harness.Fault
}

// newEdge starts the server, with the short TTLs fast heal is measured
// with (docs/benchmarks.md), and the client, and waits for its node.
func newEdge(t *testing.T, opts edgeOptions) *edge {
	t.Helper()
	fab := harness.NewFabric(t, opts.fault) // first: its teardown runs after the agents die
	e := &edge{t: t, fab: fab, agents: harness.NewAgents(t)}
	sm, cm := fab.Add("server", 10), fab.Add("client", 20)
	e.server = e.agents.Add(harness.AgentConfig{
		Name: "server", IP: sm.IP, Netns: sm.NS, NetOnly: true,
		Ports: harness.Ports{HTTP: 4646, RPC: 4647},
		Config: `
ports {
  http = 4646
  rpc  = 4647
}
server {
  min_heartbeat_ttl = "2s"
  heartbeat_grace   = "1s"
}
`,
		Args: []string{"-dev", "-bind", sm.IP, "-data-dir", harness.DataDirVar},
	})
	e.client = e.agents.Add(harness.AgentConfig{
		Name: "client", IP: cm.IP, Netns: cm.NS, NetOnly: opts.netOnly,
		Ports:  harness.Ports{HTTP: 4646},
		Config: opts.clientConfig,
		Args: []string{"-client", "-servers", e.server.RPCAddr(), "-bind", cm.IP,
			"-node", "edge-ns", "-data-dir", harness.DataDirVar},
	})
	e.server.Start()
	wait.Poll(t, 30*time.Second, "server up", func() (bool, string) {
		var nodes []nodeStub
		err := e.server.GetJSON("/v1/nodes", &nodes)
		return err == nil, fmt.Sprint(err)
	})
	e.client.Start()
	wait.Poll(t, 30*time.Second, "edge node ready", func() (bool, string) {
		var nodes []nodeStub
		if err := e.server.GetJSON("/v1/nodes", &nodes); err != nil {
			return false, err.Error()
		}
		for _, nd := range nodes {
			if nd.Name == "edge-ns" && nd.Status == "ready" {
				e.nodeID = nd.ID
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", nodes)
	})
	return e
}

// runJob registers the job file through the CLI.
func (e *edge) runJob(hcl string) {
	e.t.Helper()
	job := filepath.Join(e.agents.Dir, "edge.nomad.hcl")
	must.NoError(e.t, os.WriteFile(job, []byte(hcl), 0o644))
	out, code := e.server.Nomad("job", "run", job)
	must.Eq(e.t, 0, code, must.Sprint(out))
}

// startEdge is the edge with the mock task, for a test that cuts it off
// with fault.
func startEdge(t *testing.T, fault harness.Fault) *edge {
	return startEdgeWith(t, edgeOptions{task: mockTask, fault: fault})
}

// startEdgeWith starts the edge and its job, and waits for the allocation
// to run on the client.
func startEdgeWith(t *testing.T, opts edgeOptions) *edge {
	t.Helper()
	e := newEdge(t, opts)
	e.runJob(`
job "edge" {
  datacenters = ["dc1"]
  constraint {
    attribute = "${node.unique.name}"
    value     = "edge-ns"
  }
  group "app" {
    max_client_disconnect = "1h"
` + opts.task + `
  }
}
`)
	wait.Poll(t, 30*time.Second, "allocation running on the edge node", func() (bool, string) {
		list := e.allocs()
		if len(list) == 1 && list[0].ClientStatus == "running" && list[0].NodeID == e.nodeID {
			e.alloc = list[0]
			return true, ""
		}
		return false, fmt.Sprintf("%+v", list)
	})
	return e
}

// healTimes is how long after the link worked again the servers saw the
// node ready and the allocation running.
type healTimes struct{ ready, running time.Duration }

// cutAndHeal cuts the client off, waits until the servers have given the
// node up (disconnected, allocation unknown) and the cut has lasted cutFor,
// heals it, and measures, polling the HTTP API every wait.PollInterval.
func (e *edge) cutAndHeal(t *testing.T, fault harness.Fault, cutFor time.Duration) healTimes {
	t.Helper()
	heal := e.fab.Apply("client", fault)
	cutAt := time.Now()
	wait.Poll(t, 30*time.Second, "node disconnected, allocation unknown", func() (bool, string) {
		st, list := e.nodeStatus(), e.allocs()
		return st == "disconnected" && len(list) == 1 && list[0].ClientStatus == "unknown" && list[0].DesiredStatus == "run",
			fmt.Sprintf("node %s; %+v", st, list)
	})
	time.Sleep(time.Until(cutAt.Add(cutFor))) // the outage itself, not a wait for logic

	heal()
	healed := time.Now()
	var got healTimes
	wait.Poll(t, 60*time.Second, fault.Name+": node ready and allocation running after the heal", func() (bool, string) {
		st, list := e.nodeStatus(), e.allocs()
		now := time.Since(healed)
		if got.ready == 0 && st == "ready" {
			got.ready = now
		}
		if got.running == 0 && len(list) == 1 && list[0].ClientStatus == "running" {
			got.running = now
		}
		return got.ready > 0 && got.running > 0, fmt.Sprintf("node %s; %+v", st, list)
	})
	return got
}

// stats returns min, median and max.
func stats(ds []time.Duration) (lo, med, hi time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}

// Fast heal on a real network ("Heal latency" in
// docs/concepts/disconnected-clients.md): a client in its own namespace
// runs a task of a group with a disconnect window; its link is cut long
// enough for the servers to mark the node disconnected and the allocation
// unknown (not lost), then healed. Every time, the same allocation is
// running again without its task having restarted, and the node ready,
// within 3s of the link working again, and 1.5s in the median of
// harness.MedianRuns runs or more.
//
// NOMAD_E2E_HEAL_RUNS sets the number of cuts (default 2; the figures in
// docs/benchmarks.md are from 10), NOMAD_E2E_CUT_SECONDS their length
// (default 12).
func testHeal(t *testing.T, c harness.Fault) {
	e := startEdge(t, c)
	runs := harness.EnvInt(t, "NOMAD_E2E_HEAL_RUNS", 2)
	cutFor := time.Duration(harness.EnvInt(t, "NOMAD_E2E_CUT_SECONDS", 12)) * time.Second
	var ready, running []time.Duration
	for i := range runs {
		got := e.cutAndHeal(t, c, cutFor)
		t.Logf("%s run %d: heal → node ready %v, → allocation running %v", c.Name, i+1, got.ready, got.running)
		ready, running = append(ready, got.ready), append(running, got.running)
	}
	final := e.allocs()
	must.SliceLen(t, 1, final)
	must.Eq(t, e.alloc.ID, final[0].ID)
	must.Eq(t, uint64(0), final[0].TaskStates["app"].Restarts, must.Sprint("the task was not restarted"))
	must.Eq(t, e.alloc.TaskStates["app"].StartedAt, final[0].TaskStates["app"].StartedAt)

	for _, m := range []struct {
		what string
		ds   []time.Duration
	}{{"node ready", ready}, {"allocation running", running}} {
		lo, med, hi := stats(m.ds)
		t.Logf("%s, %d runs of %v: heal → %s min %v median %v max %v", c.Name, runs, cutFor, m.what,
			lo.Round(time.Millisecond), med.Round(time.Millisecond), hi.Round(time.Millisecond))
		if runs >= harness.MedianRuns {
			must.LessEq(t, 1500*time.Millisecond, med, must.Sprintf("median heal → %s", m.what))
		}
		must.LessEq(t, 3*time.Second, hi, must.Sprintf("slowest heal → %s", m.what))
	}
}

func TestPartition_HealLatency_LinkDown(t *testing.T) { testHeal(t, harness.LinkDown) }

func TestPartition_HealLatency_PacketDrop(t *testing.T) { testHeal(t, harness.SilentDrop) }

// execTask is an exec task that runs until stopped.
const execTask = `
    task "app" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }`

// An isolated exec task of a group with a disconnect window runs on through
// a real partition: after the heal the same allocation is running, its task
// never restarted, and it is the same process.
func TestPartition_ExecTaskResumes(t *testing.T) {
	harness.NeedExecDriver(t)
	e := startEdgeWith(t, edgeOptions{task: execTask, netOnly: true, fault: harness.LinkDown})
	e.agents.KillAtEnd(harness.AllocMark(e.alloc.ID))
	pids := harness.AllocPIDs(e.alloc.ID)
	must.SliceLen(t, 1, pids, must.Sprint("the exec task is one real process"))

	got := e.cutAndHeal(t, harness.LinkDown, 12*time.Second)
	t.Logf("heal → node ready %v, → allocation running %v", got.ready, got.running)

	final := e.allocs()
	must.SliceLen(t, 1, final)
	must.Eq(t, e.alloc.ID, final[0].ID)
	must.Eq(t, uint64(0), final[0].TaskStates["app"].Restarts, must.Sprint("the task was not restarted"))
	must.Eq(t, e.alloc.TaskStates["app"].StartedAt, final[0].TaskStates["app"].StartedAt)
	must.Eq(t, pids, harness.AllocPIDs(e.alloc.ID), must.Sprint("the same process"))
}
