package nomad

import (
	"errors"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// authTestServer is a leader with no scheduling workers, so nothing but
// the test writes allocations.
func authTestServer(t *testing.T) *Server {
	return testServer(t, func(c *Config) { c.NumSchedulers = 0 })
}

// runningAllocOn stores a running allocation on node, as if placed and
// reported.
func runningAllocOn(t *testing.T, s *Server, node *structs.Node, index uint64) *structs.Allocation {
	t.Helper()
	a := mock.AllocForNode(node)
	must.NoError(t, s.State().UpsertAllocs(index, []*structs.Allocation{a}))
	must.NoError(t, s.State().UpdateAllocsFromClient(index+1, []*structs.Allocation{{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning}}))
	return a
}

func storedAlloc(t *testing.T, s *Server, id string) *structs.Allocation {
	t.Helper()
	a, err := s.State().AllocByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, a)
	return a
}

func storedNode(t *testing.T, s *Server, id string) *structs.Node {
	t.Helper()
	n, err := s.State().NodeByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, n)
	return n
}

// Whoever can reach a server's RPC port must not be able to speak for a
// node: heartbeat for it, mark it down, read its work list or report on
// its allocations. Each node RPC refuses a missing and a wrong secret with
// its own sentinel (an ErrPermissionDenied, 403 over HTTP), changes
// nothing, and takes the right one.
func TestNodeRPCs_RefuseMissingOrWrongSecret(t *testing.T) {
	s := authTestServer(t)
	node := registerNode(t, s)
	alloc := runningAllocOn(t, s, node, 1000)
	status := storedNode(t, s, node.ID).Status

	calls := map[string]func(token string) error{
		"Node.UpdateStatus": func(token string) error {
			var resp structs.NodeUpdateResponse
			return s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
				NodeID: node.ID, Status: structs.NodeStatusDown,
				WriteRequest: structs.WriteRequest{AuthToken: token}}, &resp)
		},
		"Node.UpdateAlloc": func(token string) error {
			var resp structs.GenericResponse
			return s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{
				NodeID: node.ID, Alloc: []*structs.Allocation{{ID: alloc.ID, ClientStatus: structs.AllocClientStatusFailed}},
				WriteRequest: structs.WriteRequest{AuthToken: token}}, &resp)
		},
		"Node.GetClientAllocs": func(token string) error {
			var resp structs.NodeClientAllocsResponse
			return s.RPC("Node.GetClientAllocs", &structs.NodeSpecificRequest{
				NodeID: node.ID, QueryOptions: structs.QueryOptions{AuthToken: token}}, &resp)
		},
		"Node.Register": func(token string) error {
			fake := node.Copy()
			fake.SecretID = token
			fake.Status = structs.NodeStatusDown
			var resp structs.NodeUpdateResponse
			return s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: fake}, &resp)
		},
	}
	for method, call := range calls {
		t.Run(method, func(t *testing.T) {
			missing := call("")
			must.Error(t, missing)
			if method == "Node.Register" {
				// A registration without a secret is malformed before it
				// is unauthorised: a new node must bring one.
				must.ErrorIs(t, missing, structs.ErrMissingField)
			} else {
				must.ErrorIs(t, missing, structs.ErrNodeSecretMissing)
				must.ErrorIs(t, missing, structs.ErrPermissionDenied)
			}
			wrong := call(structs.GenerateUUID())
			must.ErrorIs(t, wrong, structs.ErrNodeSecretMismatch)
			must.ErrorIs(t, wrong, structs.ErrPermissionDenied)
			must.StrContains(t, wrong.Error(), node.ID)

			must.Eq(t, status, storedNode(t, s, node.ID).Status, must.Sprint("a refused call changed the node"))
			must.Eq(t, structs.AllocClientStatusRunning, storedAlloc(t, s, alloc.ID).ClientStatus, must.Sprint("a refused call changed the allocation"))
		})
	}
	// The node itself is heard; GetClientAllocs last, as the others would
	// change what it lists.
	must.NoError(t, calls["Node.GetClientAllocs"](node.SecretID))
	must.NoError(t, calls["Node.UpdateAlloc"](node.SecretID))
	must.Eq(t, structs.AllocClientStatusFailed, storedAlloc(t, s, alloc.ID).ClientStatus)
	must.NoError(t, calls["Node.UpdateStatus"](node.SecretID))
	must.Eq(t, structs.NodeStatusDown, storedNode(t, s, node.ID).Status)
}

// A node's secret never leaves the servers in a read: Node.GetNode returns
// the node without it, while the servers keep it to check the node's
// calls.
func TestNodeGetNode_NeverReturnsSecret(t *testing.T) {
	s := authTestServer(t)
	node := registerNode(t, s)

	var resp structs.SingleNodeResponse
	must.NoError(t, s.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: node.ID}, &resp))
	must.NotNil(t, resp.Node)
	must.Eq(t, node.ID, resp.Node.ID)
	must.Eq(t, "", resp.Node.SecretID)
	must.Eq(t, node.SecretID, storedNode(t, s, node.ID).SecretID)

	// Blocking reads too: the reply of a query woken by a change.
	var blocked structs.SingleNodeResponse
	must.NoError(t, s.RPC("Node.GetNode", &structs.NodeSpecificRequest{NodeID: node.ID,
		QueryOptions: structs.QueryOptions{MinQueryIndex: resp.Index - 1}}, &blocked))
	must.Eq(t, "", blocked.Node.SecretID)
}

// Only the servers decide that an allocation is unknown (its node cannot
// be heard) or lost (it is gone for good). A client writing unknown could
// hide a failed task from rescheduling; writing lost would make the
// scheduler replace a task that still runs. Both are refused, naming the
// allocation and the status, and nothing of the batch is written.
func TestNodeUpdateAlloc_RefusesServerOnlyStatuses(t *testing.T) {
	s := authTestServer(t)
	node := registerNode(t, s)
	alloc := runningAllocOn(t, s, node, 1000)
	other := runningAllocOn(t, s, node, 1010)

	update := func(status string) error {
		var resp structs.GenericResponse
		return s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{
			NodeID: node.ID,
			Alloc: []*structs.Allocation{
				{ID: other.ID, ClientStatus: structs.AllocClientStatusComplete},
				{ID: alloc.ID, ClientStatus: status},
			},
			WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &resp)
	}
	for _, status := range []string{structs.AllocClientStatusUnknown, structs.AllocClientStatusLost} {
		err := update(status)
		must.ErrorIs(t, err, structs.ErrServerOnlyStatus)
		must.StrContains(t, err.Error(), alloc.ID)
		must.StrContains(t, err.Error(), `"`+status+`"`)
	}
	for _, status := range []string{"", "evicted"} {
		err := update(status)
		must.ErrorIs(t, err, structs.ErrInvalidRequest)
		must.StrContains(t, err.Error(), alloc.ID)
	}
	must.Eq(t, structs.AllocClientStatusRunning, storedAlloc(t, s, alloc.ID).ClientStatus)
	must.Eq(t, structs.AllocClientStatusRunning, storedAlloc(t, s, other.ID).ClientStatus,
		must.Sprint("the valid half of a refused batch must not be written"))

	// AllocStates are the servers' record of what they saw; a client that
	// appended "unknown" there would fake a reconnect.
	var resp structs.GenericResponse
	err := s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{
		NodeID: node.ID,
		Alloc: []*structs.Allocation{{ID: alloc.ID, ClientStatus: structs.AllocClientStatusRunning,
			AllocStates: []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown}}}},
		WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &resp)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.False(t, storedAlloc(t, s, alloc.ID).NeedsToReconnect())
}

// A node reports only on its own allocations: with its own secret it
// cannot change another node's, whether it names itself or the other node.
func TestNodeUpdateAlloc_RefusesAnotherNodesAllocation(t *testing.T) {
	s := authTestServer(t)
	mine, theirs := registerNode(t, s), registerNode(t, s)
	theirAlloc := runningAllocOn(t, s, theirs, 1000)

	send := func(nodeID string) error {
		var resp structs.GenericResponse
		return s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{
			NodeID:       nodeID,
			Alloc:        []*structs.Allocation{{ID: theirAlloc.ID, ClientStatus: structs.AllocClientStatusFailed}},
			WriteRequest: structs.WriteRequest{AuthToken: mine.SecretID}}, &resp)
	}
	err := send(mine.ID)
	must.ErrorIs(t, err, structs.ErrForeignAlloc)
	must.StrContains(t, err.Error(), theirAlloc.ID)
	must.ErrorIs(t, send(theirs.ID), structs.ErrNodeSecretMismatch)

	var resp structs.GenericResponse
	err = s.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{
		Alloc: []*structs.Allocation{{ID: theirAlloc.ID, ClientStatus: structs.AllocClientStatusFailed}}}, &resp)
	must.ErrorIs(t, err, structs.ErrMissingField)

	must.Eq(t, structs.AllocClientStatusRunning, storedAlloc(t, s, theirAlloc.ID).ClientStatus)
}

// Disconnected is the servers' verdict on a node they cannot hear; a node
// that calls is heard, so it cannot claim that status, neither in a
// heartbeat nor in a registration.
func TestNodeRPCs_RefuseDisconnectedFromClient(t *testing.T) {
	s := authTestServer(t)
	node := registerNode(t, s)
	status := storedNode(t, s, node.ID).Status

	var resp structs.NodeUpdateResponse
	err := s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
		NodeID: node.ID, Status: structs.NodeStatusDisconnected,
		WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &resp)
	must.ErrorIs(t, err, structs.ErrServerOnlyStatus)

	again := node.Copy()
	again.Status = structs.NodeStatusDisconnected
	err = s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: again}, &resp)
	must.ErrorIs(t, err, structs.ErrServerOnlyStatus)
	must.Eq(t, status, storedNode(t, s, node.ID).Status)

	err = s.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
		NodeID: node.ID, Status: "sleepy", WriteRequest: structs.WriteRequest{AuthToken: node.SecretID}}, &resp)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.False(t, errors.Is(err, structs.ErrPermissionDenied))
}

// The secret is checked and then dropped: it does not travel into the
// raft log with the update, where every snapshot would carry it.
func TestNodeUpdateAlloc_KeepsTheSecretOutOfRaft(t *testing.T) {
	s := authTestServer(t)
	node := registerNode(t, s)
	alloc := runningAllocOn(t, s, node, 1000)
	args := &structs.AllocUpdateRequest{
		NodeID:       node.ID,
		Alloc:        []*structs.Allocation{{ID: alloc.ID, ClientStatus: structs.AllocClientStatusComplete}},
		WriteRequest: structs.WriteRequest{AuthToken: node.SecretID},
	}
	var resp structs.GenericResponse
	must.NoError(t, (&Node{srv: s}).UpdateAlloc(args, &resp))
	must.Eq(t, "", args.AuthToken)
}

// A stranger on the network, who knows a node's ID from any read, can
// neither mark it down nor read its work list; the refusal arrives as the
// sentinel on the caller's side of a real connection.
func TestNodeRPCs_StrangerOnTheNetworkIsRefused(t *testing.T) {
	s := authTestServer(t)
	node := registerNode(t, s)
	p := pool.NewPool(pool.Config{})
	t.Cleanup(p.Shutdown)
	addr := s.RPCAddr().String()

	var got structs.SingleNodeResponse
	must.NoError(t, p.RPC(addr, "Node.GetNode", &structs.NodeSpecificRequest{NodeID: node.ID}, &got, 0))
	must.Eq(t, "", got.Node.SecretID)

	var resp structs.NodeUpdateResponse
	err := p.RPC(addr, "Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
		NodeID: node.ID, Status: structs.NodeStatusDown,
		WriteRequest: structs.WriteRequest{AuthToken: got.Node.SecretID}}, &resp, 0)
	must.ErrorIs(t, err, structs.ErrNodeSecretMissing)
	var allocs structs.NodeClientAllocsResponse
	err = p.RPC(addr, "Node.GetClientAllocs", &structs.NodeSpecificRequest{NodeID: node.ID,
		QueryOptions: structs.QueryOptions{AuthToken: "guess"}}, &allocs, 0)
	must.ErrorIs(t, err, structs.ErrNodeSecretMismatch)
	must.NotEq(t, structs.NodeStatusDown, storedNode(t, s, node.ID).Status)
}
