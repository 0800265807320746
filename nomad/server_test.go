package nomad

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
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
	if _, manual := cfg.Clock.(*clocktest.Manual); manual {
		// Nothing advances a manual clock while an RPC waits for its
		// batch's window: commit at once.
		cfg.NodeStatusBatchWindow, cfg.AllocUpdateBatchWindow = 0, 0
	}
	s, err := NewServer(cfg)
	must.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must.NoError(t, s.WaitForLeader(ctx))
	return s
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

	// Wait with blocking queries, as a client would: each returns when the
	// job's allocations change.
	waitJobAllocs(t, s, job, "3 allocations", func(a []*structs.AllocListStub) bool { return len(a) >= 3 })
	waitEvalComplete(t, s, resp.EvalID)

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

// A node that stops heartbeating is marked down once its TTL and the
// grace period pass, and not a moment before: time is the test's to move.
func TestServer_MissedHeartbeat_NodeDown(t *testing.T) {
	clock := newManualClock()
	s := testServer(t, func(c *Config) {
		c.Clock = clock
		c.MinHeartbeatTTL = 10 * time.Second
		c.HeartbeatGrace = 10 * time.Second
	})
	node := mock.Node()
	var resp structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp))
	must.Between(t, 10*time.Second, resp.HeartbeatTTL, 13*time.Second)

	// Just before TTL + grace: still as registered.
	clock.Advance(resp.HeartbeatTTL + 10*time.Second - time.Millisecond)
	n, err := s.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, structs.NodeStatusReady, n.Status)

	clock.Advance(time.Millisecond)
	n, err = s.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, structs.NodeStatusDown, n.Status, must.Sprint("a node without disconnect-capable allocations goes down"))
	must.Eq(t, structs.NodeEventHeartbeatMissed, n.Events[len(n.Events)-1].Message)
}

// A down node that comes back gets upstream's node events, which
// integrations key on: "Node reregistered by heartbeat" when its heartbeat
// brings it back, "Node re-registered" when it registers again.
func TestServer_DownNodeBack_UpstreamEvents(t *testing.T) {
	clock := newManualClock()
	s := testServer(t, func(c *Config) {
		c.Clock = clock
		c.MinHeartbeatTTL = 10 * time.Second
		c.HeartbeatGrace = 10 * time.Second
	})
	node := mock.Node()
	var resp structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node.Copy()}, &resp))
	lastEvent := func(wantStatus string) string {
		t.Helper()
		n, err := s.State().NodeByID(nil, node.ID)
		must.NoError(t, err)
		must.Eq(t, wantStatus, n.Status)
		return n.Events[len(n.Events)-1].Message
	}

	clock.Advance(resp.HeartbeatTTL + 10*time.Second)
	must.Eq(t, structs.NodeEventHeartbeatMissed, lastEvent(structs.NodeStatusDown))
	must.NoError(t, s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
		NodeID: node.ID, Status: structs.NodeStatusReady, WriteRequest: structs.WriteRequest{AuthToken: node.SecretID},
	}, &resp))
	must.Eq(t, "Node reregistered by heartbeat", lastEvent(structs.NodeStatusReady))

	clock.Advance(resp.HeartbeatTTL + 10*time.Second)
	must.Eq(t, structs.NodeEventHeartbeatMissed, lastEvent(structs.NodeStatusDown))
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node.Copy()}, &resp))
	must.Eq(t, "Node re-registered", lastEvent(structs.NodeStatusReady))
}

// A valid job asking for what this server cannot do yet is refused with the
// setting named, instead of being accepted and never (or wrongly) run.
func TestServer_JobRegister_UnsupportedNamed(t *testing.T) {
	s := testServer(t, nil)
	job := mock.Job()
	job.Region = "eu"
	job.TaskGroups[0].ReschedulePolicy = nil
	job.TaskGroups[0].Tasks[0].Resources.Cores = 2
	job.NodePool = "nowhere"
	var resp structs.JobRegisterResponse
	err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, `no path to region "eu"`)
	must.ErrorContains(t, err, `resources.cores is not supported yet`)
	must.ErrorContains(t, err, `nonexistent node pool "nowhere"`)

	var v structs.JobValidateResponse
	must.NoError(t, s.RPC("Job.Validate", &structs.JobValidateRequest{Job: job}, &v))
	must.Len(t, 3, v.ValidationErrors)
}

// A node hosting a running allocation with a lost window is disconnected,
// not down; once the window has passed without the scheduler marking the
// allocation unknown, the next expiry takes the node down — a running
// allocation must not keep a node disconnected forever.
func TestServer_MissedHeartbeat_DisconnectWindowEnds(t *testing.T) {
	clock := newManualClock()
	s := testServer(t, func(c *Config) {
		c.Clock = clock
		c.MinHeartbeatTTL = 10 * time.Second
		c.HeartbeatGrace = 10 * time.Second
		c.NumSchedulers = 0 // keep the scheduler from marking the alloc unknown
	})
	node := mock.Node()
	var resp structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &resp))

	alloc := mock.AllocForNode(node)
	window := time.Minute
	alloc.Job.TaskGroups[0].MaxClientDisconnect = &window
	alloc.ClientStatus = structs.AllocClientStatusRunning
	must.NoError(t, s.State().UpsertAllocs(1000, []*structs.Allocation{alloc}))
	must.NoError(t, s.State().UpdateAllocsFromClient(1001, []*structs.Allocation{{ID: alloc.ID, ClientStatus: structs.AllocClientStatusRunning}}))

	status := func() string {
		n, err := s.State().NodeByID(nil, node.ID)
		must.NoError(t, err)
		return n.Status
	}
	clock.Advance(resp.HeartbeatTTL + 10*time.Second)
	must.Eq(t, structs.NodeStatusDisconnected, status())

	// The node's timer keeps firing while it is disconnected; within the
	// window it stays disconnected, after it the node goes down.
	clock.Advance(20 * time.Second)
	must.Eq(t, structs.NodeStatusDisconnected, status())
	clock.Advance(window)
	must.Eq(t, structs.NodeStatusDown, status())
}

// waitEvalComplete follows an evaluation with blocking queries until it is
// complete, and fails with the last version seen.
func waitEvalComplete(t *testing.T, s *Server, evalID string) *structs.Evaluation {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var ev structs.SingleEvalResponse
	for ev.Eval == nil || ev.Eval.Status != structs.EvalStatusComplete {
		if time.Now().After(deadline) {
			t.Fatalf("eval not complete; last saw %+v", ev.Eval)
		}
		req := &structs.EvalSpecificRequest{EvalID: evalID, QueryOptions: structs.QueryOptions{
			MinQueryIndex: ev.Index, MaxQueryTime: time.Second}}
		must.NoError(t, s.RPC("Eval.GetEval", req, &ev))
	}
	return ev.Eval
}
