package nomad

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/shoenig/test/must"
)

// testServer starts a dev-mode server on a free loopback port and waits
// until it leads.
func testServer(t *testing.T, mutate func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DevMode = true
	cfg.NodeName = t.Name()
	cfg.RPCAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 0}
	cfg.NumSchedulers = 2
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Warn, Output: hclog.DefaultOutput})
	if mutate != nil {
		mutate(cfg)
	}
	s, err := NewServer(cfg)
	must.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })
	waitFor(t, 5*time.Second, func() (bool, string) {
		return s.IsLeader(), "server is not leader"
	})
	return s
}

// waitFor polls cond until it holds or the deadline passes, then fails with
// the last thing cond reported.
func waitFor(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("condition not met after %v: %s", d, last)
}

func registerNode(t *testing.T, s *Server) *structs.Node {
	t.Helper()
	node := mock.Node()
	var resp structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp))
	must.Positive(t, resp.HeartbeatTTL)
	return node
}

// A job registered over RPC is placed on a ready node by the real broker,
// worker, scheduler and plan applier: the whole server path end to end.
func TestServer_JobRegister_PlacesAllocations(t *testing.T) {
	s := testServer(t, nil)
	node := registerNode(t, s)

	job := mock.Job()
	job.TaskGroups[0].Count = 3
	var resp structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp))
	must.NotEq(t, "", resp.EvalID)

	waitFor(t, 5*time.Second, func() (bool, string) {
		var out structs.JobAllocationsResponse
		if err := s.RPC("Job.Allocations", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{Namespace: job.Namespace}}, &out); err != nil {
			return false, err.Error()
		}
		return len(out.Allocations) == 3, fmt.Sprintf("%d allocations", len(out.Allocations))
	})

	var ev structs.SingleEvalResponse
	must.NoError(t, s.RPC("Eval.GetEval", &structs.EvalSpecificRequest{EvalID: resp.EvalID}, &ev))
	waitFor(t, 5*time.Second, func() (bool, string) {
		must.NoError(t, s.RPC("Eval.GetEval", &structs.EvalSpecificRequest{EvalID: resp.EvalID}, &ev))
		return ev.Eval.Status == structs.EvalStatusComplete, ev.Eval.Status
	})

	// Placements carry the node scores that reconnect decisions need later.
	allocs, err := s.State().AllocsByNode(nil, node.ID)
	must.NoError(t, err)
	must.Len(t, 3, allocs)
	for _, a := range allocs {
		must.NotNil(t, a.Metrics)
		_, ok := a.Metrics.NodeScore(node.ID)
		must.True(t, ok, must.Sprint("placement score recorded for the chosen node"))
	}
}

// Invalid jobs are refused with every problem listed, and nothing is written.
func TestServer_JobRegister_InvalidWritesNothing(t *testing.T) {
	s := testServer(t, nil)
	job := mock.Job()
	job.TaskGroups[0].Count = -1
	job.TaskGroups[0].Tasks[0].Driver = ""
	var resp structs.JobRegisterResponse
	err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp)
	must.ErrorContains(t, err, "count can't be negative")
	must.ErrorContains(t, err, "Missing task driver")
	got, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Nil(t, got)
}

// A node that stops heartbeating is marked down, and its allocations of a
// group without a disconnect window are replaced on another node.
func TestServer_MissedHeartbeat_NodeDown(t *testing.T) {
	s := testServer(t, func(c *Config) {
		c.MinHeartbeatTTL = 50 * time.Millisecond
		c.HeartbeatGrace = 50 * time.Millisecond
	})
	node := registerNode(t, s)
	waitFor(t, 5*time.Second, func() (bool, string) {
		n, err := s.State().NodeByID(nil, node.ID)
		must.NoError(t, err)
		return n.Status == structs.NodeStatusDown, n.Status
	})
	n, err := s.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, structs.NodeEventHeartbeatMissed, n.Events[len(n.Events)-1].Message)
}
