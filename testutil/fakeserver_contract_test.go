package testutil_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// contractServer is one side of clienttest.FakeServer's contract: what a
// client reaches, and what the test needs besides to act as the rest of
// the cluster.
type contractServer struct {
	// rpc is what a client calls.
	rpc client.RPCHandler
	// place puts one allocation of a job with a one-hour disconnect
	// window on node, as a committed plan does, and returns it.
	place func(t *testing.T, node *structs.Node) *structs.Allocation
	// status is the node's status as the servers hold it.
	status func(t *testing.T, nodeID string) string
}

// fakeContractServer is the fake server, as a client's tests use it.
func fakeContractServer(t *testing.T) contractServer {
	srv := clienttest.NewFakeServer()
	t.Cleanup(srv.Close)
	return contractServer{
		rpc: srv,
		place: func(t *testing.T, node *structs.Node) *structs.Allocation {
			job := disconnectJob()
			a := mock.AllocForNode(node)
			a.Job, a.JobID, a.TaskGroup = job, job.ID, job.TaskGroups[0].Name
			a.Name = structs.AllocName(job.ID, a.TaskGroup, 0)
			srv.UpsertAllocs(a)
			return srv.Alloc(a.ID)
		},
		status: func(t *testing.T, nodeID string) string { return srv.Node(nodeID).Status },
	}
}

// realContractServer is one real server on a MemNet, reached over the
// wire as a client reaches it, with upstream's timings.
func realContractServer(t *testing.T) contractServer {
	c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1})
	remote, err := client.NewServerRPC([]string{c.ServerAddr(0)}, c.Net.Dialer(testutil.ClientHost(0)))
	must.NoError(t, err)
	t.Cleanup(remote.Shutdown)
	return contractServer{
		rpc: remote,
		place: func(t *testing.T, node *structs.Node) *structs.Allocation {
			job := disconnectJob()
			job.Constraints = []*structs.Constraint{{LTarget: "${node.unique.id}", RTarget: node.ID, Operand: "="}}
			var reg structs.JobRegisterResponse
			must.NoError(t, c.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
			var placed *structs.Allocation
			wait.Eventually(t, time.Minute, "the allocation placed", func() (bool, string) {
				allocs, err := c.Leader().State().AllocsByJob(nil, job.Namespace, job.ID, true)
				must.NoError(t, err)
				if len(allocs) == 1 {
					placed = allocs[0]
				}
				return placed != nil, describe(allocs)
			})
			return placed
		},
		status: func(t *testing.T, nodeID string) string {
			n, err := c.Leader().State().NodeByID(nil, nodeID)
			must.NoError(t, err)
			return n.Status
		},
	}
}

// contract is one run of the suite: a node the test plays the client of,
// and what the steps have learned so far.
type contract struct {
	s     contractServer
	node  *structs.Node
	alloc *structs.Allocation
	// ttl is the TTL of the last heartbeat, lastOK when it was answered.
	ttl    time.Duration
	lastOK time.Time
	// index is the highest index each method's answers carried.
	index map[string]uint64
}

// sawIndex checks that an answer of method carries an index, and none
// below the method's answers before it: a client blocks on the last one.
// (Each method answers its own index: the real servers' is the table's
// the call reads or the entry it wrote, not one index for all.)
func (c *contract) sawIndex(t *testing.T, method string, index uint64) {
	t.Helper()
	must.Positive(t, index, must.Sprintf("%s answered no index", method))
	must.GreaterEq(t, c.index[method], index, must.Sprintf("%s answered index %d after %d: indexes only grow", method, index, c.index[method]))
	c.index[method] = index
}

func (c *contract) heartbeat(t *testing.T, token string) (*structs.NodeUpdateResponse, error) {
	t.Helper()
	var resp structs.NodeUpdateResponse
	err := c.s.rpc.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
		NodeID: c.node.ID, Status: structs.NodeStatusReady, WriteRequest: structs.WriteRequest{AuthToken: token},
	}, &resp)
	if err == nil {
		c.ttl, c.lastOK = resp.HeartbeatTTL, time.Now()
		c.sawIndex(t, "Node.UpdateStatus", resp.Index)
	}
	return &resp, err
}

// clientAllocs is Node.GetClientAllocs, blocking past index min for at
// most maxWait when min is not zero.
func (c *contract) clientAllocs(t *testing.T, min uint64, maxWait time.Duration) *structs.NodeClientAllocsResponse {
	t.Helper()
	resp, err := c.callClientAllocs(min, maxWait)
	must.NoError(t, err)
	c.sawIndex(t, "Node.GetClientAllocs", resp.Index)
	return resp
}

// callClientAllocs is the bare call, for a goroutine of the test's.
func (c *contract) callClientAllocs(min uint64, maxWait time.Duration) (*structs.NodeClientAllocsResponse, error) {
	var resp structs.NodeClientAllocsResponse
	err := c.s.rpc.RPC("Node.GetClientAllocs", &structs.NodeSpecificRequest{
		NodeID: c.node.ID, QueryOptions: structs.QueryOptions{AuthToken: c.node.SecretID, MinQueryIndex: min, MaxQueryTime: maxWait},
	}, &resp)
	return &resp, err
}

func (c *contract) updateAlloc(t *testing.T, status string) error {
	t.Helper()
	u := &structs.Allocation{ID: c.alloc.ID, NodeID: c.node.ID, ClientStatus: status}
	var resp structs.GenericResponse
	err := c.s.rpc.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{
		NodeID: c.node.ID, Alloc: []*structs.Allocation{u}, WriteRequest: structs.WriteRequest{AuthToken: c.node.SecretID},
	}, &resp)
	if err == nil {
		c.sawIndex(t, "Node.UpdateAlloc", resp.Index)
	}
	return err
}

// checkTTL checks ttl is the real servers' default: min_heartbeat_ttl, plus up to
// a quarter of it as stagger.
func checkTTL(t *testing.T, ttl time.Duration) {
	t.Helper()
	min := nomad.DefaultConfig().MinHeartbeatTTL
	must.Between(t, min, ttl, min+min/4, must.Sprintf("TTL %v", ttl))
}

// contractSteps are the behaviours, in the order a client meets them; each
// builds on the ones before.
var contractSteps = []struct {
	name string
	run  func(t *testing.T, c *contract)
}{
	{"register: initializing, with upstream's TTL", func(t *testing.T, c *contract) {
		var resp structs.NodeUpdateResponse
		must.NoError(t, c.s.rpc.RPC("Node.Register", &structs.NodeRegisterRequest{Node: c.node.Copy()}, &resp))
		must.Positive(t, resp.Index)
		c.sawIndex(t, "Node.Register", resp.Index)
		checkTTL(t, resp.HeartbeatTTL)
		must.Eq(t, structs.NodeStatusInit, c.s.status(t, c.node.ID))
	}},
	{"a wrong or missing node secret is refused", func(t *testing.T, c *contract) {
		other := c.node.Copy()
		other.SecretID = structs.GenerateUUID()
		var resp structs.NodeUpdateResponse
		must.ErrorIs(t, c.s.rpc.RPC("Node.Register", &structs.NodeRegisterRequest{Node: other}, &resp),
			structs.ErrNodeSecretMismatch, must.Sprint("re-registering takes the same secret"))
		_, err := c.heartbeat(t, other.SecretID)
		must.ErrorIs(t, err, structs.ErrNodeSecretMismatch)
		_, err = c.heartbeat(t, "")
		must.ErrorIs(t, err, structs.ErrNodeSecretMissing)
		var allocs structs.NodeClientAllocsResponse
		must.ErrorIs(t, c.s.rpc.RPC("Node.GetClientAllocs", &structs.NodeSpecificRequest{
			NodeID: c.node.ID, QueryOptions: structs.QueryOptions{AuthToken: other.SecretID},
		}, &allocs), structs.ErrNodeSecretMismatch)
	}},
	{"a client cannot set disconnected", func(t *testing.T, c *contract) {
		var resp structs.NodeUpdateResponse
		must.ErrorIs(t, c.s.rpc.RPC("Node.UpdateStatus", &structs.NodeUpdateStatusRequest{
			NodeID: c.node.ID, Status: structs.NodeStatusDisconnected, WriteRequest: structs.WriteRequest{AuthToken: c.node.SecretID},
		}, &resp), structs.ErrServerOnlyStatus)
		must.Eq(t, structs.NodeStatusInit, c.s.status(t, c.node.ID))
	}},
	{"a heartbeat makes it ready, with upstream's TTL", func(t *testing.T, c *contract) {
		resp, err := c.heartbeat(t, c.node.SecretID)
		must.NoError(t, err)
		checkTTL(t, resp.HeartbeatTTL)
		must.Eq(t, structs.NodeStatusReady, c.s.status(t, c.node.ID))
	}},
	{"a blocking query with nothing new waits out its time and answers no lower index", func(t *testing.T, c *contract) {
		c.clientAllocs(t, 0, 0)
		start := time.Now()
		// Shorter than the TTL: the node must not time out meanwhile.
		allocs := c.clientAllocs(t, c.index["Node.GetClientAllocs"], 5*time.Second)
		must.GreaterEq(t, 5*time.Second, time.Since(start))
		must.MapEmpty(t, allocs.Allocs)
	}},
	{"a placement wakes the blocking query; the allocation takes its status", func(t *testing.T, c *contract) {
		since := c.index["Node.GetClientAllocs"]
		type answer struct {
			resp *structs.NodeClientAllocsResponse
			err  error
		}
		woken := make(chan answer, 1)
		go func() {
			resp, err := c.callClientAllocs(since, 5*time.Minute)
			woken <- answer{resp, err}
		}()
		c.alloc = c.s.place(t, c.node)
		got := <-woken
		must.NoError(t, got.err)
		c.sawIndex(t, "Node.GetClientAllocs", got.resp.Index)
		must.MapContainsKey(t, got.resp.Allocs, c.alloc.ID)
		must.Greater(t, since, got.resp.Index, must.Sprint("woken by a change, past the index it waited on"))
		_, err := c.heartbeat(t, c.node.SecretID)
		must.NoError(t, err)
		placed := got.resp.Allocs[c.alloc.ID]
		var pulled structs.AllocsGetResponse
		must.NoError(t, c.s.rpc.RPC("Alloc.GetAllocs", &structs.AllocsGetRequest{
			AllocIDs: []string{c.alloc.ID}, QueryOptions: structs.QueryOptions{AuthToken: c.node.SecretID},
		}, &pulled))
		c.sawIndex(t, "Alloc.GetAllocs", pulled.Index)
		must.SliceLen(t, 1, pulled.Allocs)
		must.Eq(t, c.alloc.ID, pulled.Allocs[0].ID)
		must.NotNil(t, pulled.Allocs[0].Job, must.Sprint("the allocation comes with the job it runs"))
		must.Eq(t, placed, pulled.Allocs[0].AllocModifyIndex)
		must.NoError(t, c.updateAlloc(t, structs.AllocClientStatusRunning))
		after := c.clientAllocs(t, 0, 0)
		must.Eq(t, placed, after.Allocs[c.alloc.ID], must.Sprint("a client's own update does not move AllocModifyIndex: it would pull its allocation again"))
		must.ErrorIs(t, c.updateAlloc(t, structs.AllocClientStatusLost), structs.ErrServerOnlyStatus,
			must.Sprint("lost is the servers' to set"))
		must.ErrorIs(t, c.updateAlloc(t, "sleeping"), structs.ErrInvalidRequest, must.Sprint("not a status"))
		var resp structs.GenericResponse
		withHistory := &structs.Allocation{ID: c.alloc.ID, NodeID: c.node.ID, ClientStatus: structs.AllocClientStatusRunning,
			AllocStates: []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusRunning}}}
		must.ErrorIs(t, c.s.rpc.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{
			NodeID: c.node.ID, Alloc: []*structs.Allocation{withHistory}, WriteRequest: structs.WriteRequest{AuthToken: c.node.SecretID},
		}, &resp), structs.ErrInvalidRequest, must.Sprint("the history of observations is the servers' own"))
	}},
	{"silent past its TTL and grace, it is disconnected (its allocation has a window)", func(t *testing.T, c *contract) {
		deadline := c.ttl + nomad.DefaultConfig().HeartbeatGrace
		wait.Eventually(t, deadline+time.Minute, "node disconnected", func() (bool, string) {
			s := c.s.status(t, c.node.ID)
			return s == structs.NodeStatusDisconnected, s
		})
		must.GreaterEq(t, deadline, time.Since(c.lastOK), must.Sprint("not given up on before its TTL and grace"))
	}},
	{"an allocation update from a disconnected node is refused", func(t *testing.T, c *contract) {
		must.ErrorIs(t, c.updateAlloc(t, structs.AllocClientStatusRunning), structs.ErrNodeNotReady)
	}},
	{"back, it is initializing, not ready", func(t *testing.T, c *contract) {
		_, err := c.heartbeat(t, c.node.SecretID)
		must.NoError(t, err)
		must.Eq(t, structs.NodeStatusInit, c.s.status(t, c.node.ID))
	}},
	{"another node may not report this one's allocation; without allocations, silent, it goes down and is refused", func(t *testing.T, c *contract) {
		lone := &contract{s: c.s, node: contractNode(), index: map[string]uint64{}}
		var resp structs.NodeUpdateResponse
		must.NoError(t, c.s.rpc.RPC("Node.Register", &structs.NodeRegisterRequest{Node: lone.node.Copy()}, &resp))
		lone.sawIndex(t, "Node.Register", resp.Index)
		_, err := lone.heartbeat(t, lone.node.SecretID)
		must.NoError(t, err)
		update := func(allocs ...*structs.Allocation) error {
			var resp structs.GenericResponse
			return c.s.rpc.RPC("Node.UpdateAlloc", &structs.AllocUpdateRequest{
				NodeID: lone.node.ID, Alloc: allocs, WriteRequest: structs.WriteRequest{AuthToken: lone.node.SecretID},
			}, &resp)
		}
		foreign := &structs.Allocation{ID: c.alloc.ID, NodeID: lone.node.ID, ClientStatus: structs.AllocClientStatusComplete}
		must.ErrorIs(t, update(foreign), structs.ErrForeignAlloc, must.Sprint("a node reports only on its own allocations"))
		wait.Eventually(t, lone.ttl+nomad.DefaultConfig().HeartbeatGrace+time.Minute, "node down", func() (bool, string) {
			s := c.s.status(t, lone.node.ID)
			return s == structs.NodeStatusDown, s
		})
		must.ErrorIs(t, update(), structs.ErrMissingField, must.Sprint("an update of nothing"))
		gone := &structs.Allocation{ID: structs.GenerateUUID(), NodeID: lone.node.ID, ClientStatus: structs.AllocClientStatusComplete}
		must.ErrorIs(t, update(gone), structs.ErrNodeNotReady)
	}},
}

// contractNode is a node as a client registers it.
func contractNode() *structs.Node {
	n := mock.Node()
	n.Status = structs.NodeStatusInit
	return n
}

// runContract runs every step against s, in order.
func runContract(t *testing.T, s contractServer) {
	c := &contract{s: s, node: contractNode(), index: map[string]uint64{}}
	for _, step := range contractSteps {
		// Subtests cannot run in a bubble: the last step logged is the
		// one that failed.
		t.Logf("step: %s", step.name)
		step.run(t, c)
	}
}

// clienttest.FakeServer answers a client as the real server does, step for
// step: register, refused secrets, the TTL it hands out, a silent node
// disconnected (with a window) or down (without), initializing on its
// return, refused allocation updates and indexes that only grow. The
// client's own tests run against the fake; they are only as true as it.
func TestFakeServerContract(t *testing.T) {
	for name, server := range map[string]func(*testing.T) contractServer{
		"fake": fakeContractServer,
		"real": realContractServer,
	} {
		t.Run(name, func(t *testing.T) {
			testutil.Bubble(t, func(t *testing.T) { runContract(t, server(t)) })
		})
	}
}
