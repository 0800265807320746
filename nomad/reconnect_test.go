package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// waitAllocUntil follows an allocation with blocking queries until cond
// holds; it fails with the last version seen.
func waitAllocUntil(t *testing.T, s *Server, id string, what string, cond func(*structs.Allocation) bool) *structs.Allocation {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var out structs.SingleAllocResponse
	for {
		req := &structs.AllocSpecificRequest{AllocID: id, QueryOptions: structs.QueryOptions{MinQueryIndex: out.Index, MaxQueryTime: time.Second}}
		must.NoError(t, s.RPC("Alloc.GetAlloc", req, &out))
		if out.Alloc != nil && cond(out.Alloc) {
			return out.Alloc
		}
		if time.Now().After(deadline) {
			t.Fatalf("allocation %s: %s not reached; last saw %+v", id, what, out.Alloc)
		}
	}
}

// The mission in one test, on the server side: a client that misses its
// heartbeats leaves its allocation unknown (not lost) within the group's
// window; when it comes back and reports the allocation running, the node
// passes through initializing, the allocation is kept without a restart,
// the disconnect timeout is canceled and the job counts one running
// allocation again.
func TestServer_DisconnectAndReconnect(t *testing.T) {
	clock := newManualClock()
	s := testServer(t, func(c *Config) {
		c.Clock = clock
		c.MinHeartbeatTTL = 10 * time.Second
		c.HeartbeatGrace = 10 * time.Second
	})
	node := mock.Node()
	var nodeResp structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &nodeResp))

	job := mock.Job()
	job.TaskGroups[0].Count = 1
	window := time.Hour
	job.TaskGroups[0].MaxClientDisconnect = &window
	var reg structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))

	var allocs structs.JobAllocationsResponse
	for len(allocs.Allocations) == 0 {
		req := &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{
			Namespace: job.Namespace, MinQueryIndex: allocs.Index, MaxQueryTime: time.Second}}
		must.NoError(t, s.RPC("Job.Allocations", req, &allocs))
	}
	allocID := allocs.Allocations[0].ID
	report := func(status string) {
		t.Helper()
		var out structs.GenericResponse
		must.NoError(t, s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{
			NodeID: node.ID, Alloc: []*structs.Allocation{{ID: allocID, ClientStatus: status}},
			WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &out))
	}
	report(structs.AllocClientStatusRunning)

	// The link drops: no heartbeat within TTL + grace.
	clock.Advance(nodeResp.HeartbeatTTL + 10*time.Second)
	n, err := s.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, structs.NodeStatusDisconnected, n.Status)
	unknown := waitAllocUntil(t, s, allocID, "unknown", func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusUnknown
	})
	must.Eq(t, structs.AllocDesiredStatusRun, unknown.DesiredStatus)
	must.Eq(t, structs.AllocUnknown, unknown.ClientDescription)
	must.False(t, unknown.TerminalStatus())
	must.NotEq(t, "", unknown.FollowupEvalID, must.Sprint("a max-disconnect-timeout evaluation waits for the window's end"))
	timeoutEval, err := s.State().EvalByID(nil, unknown.FollowupEvalID)
	must.NoError(t, err)
	must.Eq(t, structs.EvalTriggerMaxDisconnectTimeout, timeoutEval.TriggeredBy)

	// Updates from a disconnected node are refused: its word comes after
	// its heartbeat.
	var out structs.GenericResponse
	err = s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{NodeID: node.ID,
		Alloc:        []*structs.Allocation{{ID: allocID, ClientStatus: structs.AllocClientStatusRunning}},
		WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &out)
	must.ErrorIs(t, err, structs.ErrNodeNotReady)

	// The link returns. The heartbeat makes the node initializing, not ready.
	heartbeat := func() string {
		t.Helper()
		var resp structs.NodeUpdateResponse
		must.NoError(t, s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, Status: structs.NodeStatusReady,
			WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &resp))
		n, err := s.State().NodeByID(nil, node.ID)
		must.NoError(t, err)
		return n.Status
	}
	must.Eq(t, structs.NodeStatusInit, heartbeat())
	must.Eq(t, structs.NodeStatusInit, heartbeat(), must.Sprint("still initializing until the client has reported"))

	report(structs.AllocClientStatusRunning)
	kept := waitAllocUntil(t, s, allocID, "reconnect resolved", func(a *structs.Allocation) bool {
		return !a.NeedsToReconnect()
	})
	must.Eq(t, structs.AllocDesiredStatusRun, kept.DesiredStatus)
	must.Eq(t, structs.AllocClientStatusRunning, kept.ClientStatus)
	must.Eq(t, structs.NodeStatusReady, heartbeat())

	canceled, err := s.State().EvalByID(nil, timeoutEval.ID)
	must.NoError(t, err)
	must.Eq(t, structs.EvalStatusCancelled, canceled.Status)
	// The canceled evaluation is unlinked in the entry that cancels it (as
	// upstream since 1.10.2): the allocation names no follow-up that never runs.
	current, err := s.State().AllocByID(nil, allocID)
	must.NoError(t, err)
	must.Eq(t, "", current.FollowupEvalID, must.Sprintf("timeout eval %s canceled at %d; alloc modified at %d", timeoutEval.ID, canceled.ModifyIndex, current.ModifyIndex))

	evals, err := s.State().EvalsByJob(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	var reconnects int
	for _, e := range evals {
		if e.TriggeredBy == structs.EvalTriggerReconnect {
			reconnects++
		}
	}
	must.Eq(t, 1, reconnects)

	all, err := s.State().AllocsByJob(nil, job.Namespace, job.ID, true)
	must.NoError(t, err)
	running := 0
	for _, a := range all {
		if a.DesiredStatus == structs.AllocDesiredStatusRun {
			running++
		}
	}
	must.Eq(t, 1, running, must.Sprint("exactly count allocations desired running after the reconnect"))
	summary, err := s.State().JobSummaryByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, structs.TaskGroupSummary{Running: 1}, summary.Summary["web"])
}
