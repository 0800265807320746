package nomad

import (
	"context"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The tests of this file guard single lines of the disconnect rules that
// every other test left free to change (issue 18: each was mutated and the
// suite stayed green). Each names the mutation it catches.

// guardServer is a leading server on a manual clock with no scheduling
// workers: the tests write the scheduler's decisions themselves, so that
// only the rule under test moves.
func guardServer(t *testing.T) (*Server, *clocktest.Manual) {
	t.Helper()
	clock := newManualClock()
	s := testServer(t, func(c *Config) {
		c.Clock = clock
		c.MinHeartbeatTTL = 10 * time.Second
		c.HeartbeatGrace = 10 * time.Second
		c.NumSchedulers = 0
	})
	return s, clock
}

// guardNode registers a node whose client advertises version, and returns
// it with its heartbeat TTL.
func guardNode(t *testing.T, s *Server, version string) (*structs.Node, time.Duration) {
	t.Helper()
	node := mock.Node()
	node.Attributes["nomad.version"] = version
	var resp structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node.Copy()}, &resp))
	return node, resp.HeartbeatTTL
}

// windowAlloc places a running allocation with a one-hour disconnect
// window on node, written at index as the scheduler and client would.
func windowAlloc(t *testing.T, s *Server, node *structs.Node, index uint64) *structs.Allocation {
	t.Helper()
	a := mock.AllocForNode(node)
	window := time.Hour
	a.Job.TaskGroups[0].MaxClientDisconnect = &window
	must.NoError(t, s.State().UpsertJob(index, 0, a.Job))
	must.NoError(t, s.State().UpsertAllocs(index+1, []*structs.Allocation{a}))
	must.NoError(t, s.State().UpdateAllocsFromClient(index+2, []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning}}))
	return a
}

// markUnknown writes what the scheduler writes for an allocation on a
// disconnected node: unknown, with followup as its max-disconnect-timeout
// evaluation.
func markUnknown(t *testing.T, s *Server, index uint64, id, followup string) {
	t.Helper()
	stored, err := s.State().AllocByID(nil, id)
	must.NoError(t, err)
	u := stored.CopySkipJob()
	u.ClientStatus, u.ClientDescription = structs.AllocClientStatusUnknown, structs.AllocUnknown
	u.FollowupEvalID = followup
	u.AppendState(structs.AllocStateFieldClientStatus, u.ClientStatus, time.Unix(1_700_000_000, 0))
	must.NoError(t, s.State().UpsertAllocs(index, []*structs.Allocation{u}))
	got, err := s.State().AllocByID(nil, id)
	must.NoError(t, err)
	must.Eq(t, structs.AllocClientStatusUnknown, got.ClientStatus, must.Sprint("the node must be disconnected for the marking"))
}

// finishEvals takes every ready evaluation out of the broker as a worker
// that finished it would, so that a later change's evaluation is not left
// to one still waiting (coalesceWaiting).
func finishEvals(t *testing.T, s *Server) {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		ev, token, err := s.evalBroker.DequeueCtx(ctx, []string{structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem, structs.JobTypeSysBatch}, 0)
		cancel()
		if ev == nil || err != nil {
			return
		}
		must.NoError(t, s.evalBroker.Ack(ev.ID, token))
	}
}

func nodeStatus(t *testing.T, s *Server, id string) string {
	t.Helper()
	n, err := s.State().NodeByID(nil, id)
	must.NoError(t, err)
	return n.Status
}

func heartbeatOf(t *testing.T, s *Server, node *structs.Node) *structs.NodeUpdateResponse {
	t.Helper()
	var resp structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, Status: structs.NodeStatusReady,
		WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &resp))
	return &resp
}

func reportAllocs(t *testing.T, s *Server, node *structs.Node, status string, ids ...string) {
	t.Helper()
	req := &structs.AllocUpdateRequest{NodeID: node.ID, WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}
	for _, id := range ids {
		req.Alloc = append(req.Alloc, &structs.Allocation{ID: id, ClientStatus: status})
	}
	must.NoError(t, s.RPC("Node.UpdateAlloc", req, &structs.GenericResponse{}))
}

// A max-disconnect-timeout evaluation shared by allocations of two nodes
// is not canceled when only one node's allocation reports again: the other
// is still unknown, and its window's end must still be acted on. Once both
// have reported it is canceled. Catches: cancelableTimeoutEvals canceling
// whatever the reporting allocations waited on (the `waiting` check
// removed).
func TestGuard_SharedTimeoutEvalKeptWhileAnotherIsUnknown(t *testing.T) {
	s, clock := guardServer(t)
	back, ttl1 := guardNode(t, s, "0.1.0")
	away, ttl2 := guardNode(t, s, "0.1.0")
	ttl := max(ttl1, ttl2)
	a1 := windowAlloc(t, s, back, 1000)
	a2 := windowAlloc(t, s, away, 1010)
	// Unreported throughout, it holds back initializing: a node made ready
	// gets a node-update evaluation, which would supersede the timeout
	// evaluation in the broker and hide what this test looks at.
	held := windowAlloc(t, s, back, 1015)

	clock.Advance(ttl + 10*time.Second)
	must.Eq(t, structs.NodeStatusDisconnected, nodeStatus(t, s, back.ID))
	must.Eq(t, structs.NodeStatusDisconnected, nodeStatus(t, s, away.ID))
	timeout := a1.Job.NewEval(structs.EvalTriggerMaxDisconnectTimeout, clock.Now())
	timeout.Status = structs.EvalStatusPending
	timeout.WaitUntil = clock.Now().Add(time.Hour)
	must.NoError(t, s.State().UpsertEvals(1020, []*structs.Evaluation{timeout}))
	markUnknown(t, s, 1021, a1.ID, timeout.ID)
	markUnknown(t, s, 1022, a2.ID, timeout.ID)
	markUnknown(t, s, 1023, held.ID, "")

	heartbeatOf(t, s, back)
	must.Eq(t, structs.NodeStatusInit, nodeStatus(t, s, back.ID))
	reportAllocs(t, s, back, structs.AllocClientStatusRunning, a1.ID)
	ev, err := s.State().EvalByID(nil, timeout.ID)
	must.NoError(t, err)
	must.NotEq(t, structs.EvalStatusCancelled, ev.Status, must.Sprint("canceled while another allocation on it is still unknown"))

	heartbeatOf(t, s, away)
	reportAllocs(t, s, away, structs.AllocClientStatusRunning, a2.ID)
	ev, err = s.State().EvalByID(nil, timeout.ID)
	must.NoError(t, err)
	must.Eq(t, structs.EvalStatusCancelled, ev.Status, must.Sprint("every allocation on it has reported"))
}

// A node whose client is too old for the reconnect path goes down, not
// disconnected, when it misses its heartbeats, even with an allocation in
// a disconnect window (spec, "Mixed versions and upgrades"); a current one
// with the same allocation goes disconnected. Catches: the client-version
// check in missedHeartbeatStatus removed, or clientSupportsDisconnect
// answering true.
func TestGuard_OldClientGoesDown(t *testing.T) {
	s, clock := guardServer(t)
	old, ttl1 := guardNode(t, s, "0.0.9")
	current, ttl2 := guardNode(t, s, MinDisconnectVersion.String())
	ttl := max(ttl1, ttl2)
	windowAlloc(t, s, old, 1000)
	windowAlloc(t, s, current, 1010)

	clock.Advance(ttl + 10*time.Second)
	must.Eq(t, structs.NodeStatusDown, nodeStatus(t, s, old.ID))
	must.Eq(t, structs.NodeStatusDisconnected, nodeStatus(t, s, current.ID))

	unversioned := mock.Node()
	delete(unversioned.Attributes, "nomad.version")
	must.False(t, clientSupportsDisconnect(unversioned), must.Sprint("a client that says nothing is taken to be old"))
}

// A returning node whose only unknown allocation left unreported is
// desired stop (an operator stopped it while the node was away) becomes
// ready once the rest has reported: the stopped allocation's report is
// not needed to decide anything, and its momentary "running" is not
// recorded. Catches: heartbeatStatus counting desired-stop unknown
// allocations (the ServerTerminalStatus check removed), which keeps the
// node initializing until the client's final report.
func TestGuard_StoppedUnknownDoesNotHoldInitializing(t *testing.T) {
	s, clock := guardServer(t)
	node, ttl := guardNode(t, s, "0.1.0")
	kept := windowAlloc(t, s, node, 1000)
	stopped := windowAlloc(t, s, node, 1010)

	clock.Advance(ttl + 10*time.Second)
	must.Eq(t, structs.NodeStatusDisconnected, nodeStatus(t, s, node.ID))
	markUnknown(t, s, 1020, kept.ID, "")
	markUnknown(t, s, 1021, stopped.ID, "")
	must.NoError(t, s.State().UpsertPlanResults(1022, &structs.ApplyPlanResultsRequest{
		AllocsStopped: []*structs.Allocation{{ID: stopped.ID, DesiredDescription: "alloc was stopped by an operator"}},
	}))

	heartbeatOf(t, s, node)
	must.Eq(t, structs.NodeStatusInit, nodeStatus(t, s, node.ID))
	reportAllocs(t, s, node, structs.AllocClientStatusRunning, kept.ID, stopped.ID)
	got, err := s.State().AllocByID(nil, stopped.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocClientStatusUnknown, got.ClientStatus, must.Sprint("a stopped allocation's running is not recorded"))
	heartbeatOf(t, s, node)
	must.Eq(t, structs.NodeStatusReady, nodeStatus(t, s, node.ID))
}

// A node leaving disconnected (back in contact: initializing) gets a
// node-update evaluation for every job with allocations on it, in the
// entry of the change, so the scheduler looks at the returning node's
// work at once. Catches: transitionNeedsEvals without its
// "old status disconnected" clause.
func TestGuard_LeavingDisconnectedCreatesNodeEvals(t *testing.T) {
	s, clock := guardServer(t)
	node, ttl := guardNode(t, s, "0.1.0")
	a := windowAlloc(t, s, node, 1000)

	clock.Advance(ttl + 10*time.Second)
	must.Eq(t, structs.NodeStatusDisconnected, nodeStatus(t, s, node.ID))
	finishEvals(t, s) // the disconnect's own node-update evaluation
	resp := heartbeatOf(t, s, node)
	must.Eq(t, structs.NodeStatusInit, nodeStatus(t, s, node.ID))
	must.Len(t, 1, resp.EvalIDs, must.Sprint("one node-update evaluation for the job on the node"))
	ev, err := s.State().EvalByID(nil, resp.EvalIDs[0])
	must.NoError(t, err)
	must.NotNil(t, ev)
	must.Eq(t, structs.EvalTriggerNodeUpdate, ev.TriggeredBy)
	must.Eq(t, a.JobID, ev.JobID)
	must.Eq(t, node.ID, ev.NodeID)
	must.Eq(t, resp.EvalCreateIndex, ev.NodeModifyIndex, must.Sprint("in the entry of the node's change"))
}

// A returning node is ready as soon as the push that reports the last of
// its unknown allocations is committed, not at its next heartbeat, a TTL
// later (200 s in a fleet of 10,000); a push that leaves one unknown
// leaves it initializing. Catches: readyOnceReported not called, or
// deciding otherwise than heartbeatStatus.
func TestGuard_ReadyOnceTheLastUnknownIsReported(t *testing.T) {
	s, clock := guardServer(t)
	node, ttl := guardNode(t, s, "0.1.0")
	first := windowAlloc(t, s, node, 1000)
	second := windowAlloc(t, s, node, 1010)

	clock.Advance(ttl + 10*time.Second)
	must.Eq(t, structs.NodeStatusDisconnected, nodeStatus(t, s, node.ID))
	markUnknown(t, s, 1020, first.ID, "")
	markUnknown(t, s, 1021, second.ID, "")

	heartbeatOf(t, s, node)
	must.Eq(t, structs.NodeStatusInit, nodeStatus(t, s, node.ID))
	reportAllocs(t, s, node, structs.AllocClientStatusRunning, first.ID)
	must.Eq(t, structs.NodeStatusInit, nodeStatus(t, s, node.ID), must.Sprint("one allocation still unknown"))
	reportAllocs(t, s, node, structs.AllocClientStatusRunning, second.ID)
	must.Eq(t, structs.NodeStatusReady, nodeStatus(t, s, node.ID), must.Sprint("ready without another heartbeat"))
	got, err := s.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, structs.NodeEventNodeReady, got.Events[len(got.Events)-1].Message)
}
