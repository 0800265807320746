package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// longTTL is the heartbeat TTL of a fleet of 10,000 nodes at 50
// heartbeats a second: what detection by the TTL alone would wait.
const longTTL = 200 * time.Second

// sessionCluster starts three servers whose TTL is longTTL and n clients,
// and waits until server 0 holds every client's session: the clients try
// their servers in the order given. Server 0 may lead or follow; the
// tests hold either way (a follower's digests go to the leader over RPC,
// the leader's own are applied in place).
func sessionCluster(t *testing.T, n int) *testutil.MemCluster {
	c := testutil.NewMemCluster(t, testutil.MemClusterConfig{
		Servers: 3, Clients: n,
		Server: func(_ int, c *nomad.Config) { c.MinHeartbeatTTL = longTTL },
	})
	wait.Eventually(t, time.Minute, "every client's session held by server 0", func() (bool, string) {
		for i, cl := range c.Clients {
			if !c.Servers[0].HoldsNodeSession(cl.NodeID()) {
				return false, fmt.Sprintf("client %d holds none there", i)
			}
		}
		return true, ""
	})
	testutil.Settle(3 * time.Second) // server 0's digest reaches the leader
	t.Logf("server 0 leads: %v", c.Servers[0].IsLeader())
	return c
}

// nodeStatus is the node's status as the leader has it, among the
// servers other than skip (-1: none skipped).
func nodeStatus(t *testing.T, c *testutil.MemCluster, skip int, nodeID string) string {
	t.Helper()
	n, err := c.Servers[c.WaitForLeaderExcept(skip)].State().NodeByID(nil, nodeID)
	must.NoError(t, err)
	return n.Status
}

// stayReady checks every second for d that every client's node is ready
// on the leader among the servers other than skip: a node that went down
// and came back by itself in between is a false disconnect too.
func stayReady(t *testing.T, c *testutil.MemCluster, skip int, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); {
		testutil.Settle(time.Second)
		for i, cl := range c.Clients {
			must.Eq(t, structs.NodeStatusReady, nodeStatus(t, c, skip, cl.NodeID()), must.Sprintf("client %d", i))
		}
	}
}

// TestNodeSession_SilentNodeDisconnectedWithinGrace checks that a node
// whose link goes dead is disconnected within heartbeat_grace + 10 s
// although its TTL is 200 s: its session, held by a follower, falls
// silent, the follower tells the leader, and the leader brings the
// node's timer in. Without it, a cut node of a large fleet keeps its
// allocations out of `unknown` for minutes.
func TestNodeSession_SilentNodeDisconnectedWithinGrace(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := sessionCluster(t, 2)
		alloc, i := runOne(t, c, disconnectJob())
		cut := time.Now()
		c.Net.Isolate(testutil.ClientHost(i), fault.Blackhole)
		wait.Eventually(t, longTTL, "node disconnected", func() (bool, string) {
			s := nodeStatus(t, c, -1, alloc.NodeID)
			return s == structs.NodeStatusDisconnected, s
		})
		took := time.Since(cut)
		t.Logf("disconnected %v after the cut (TTL %v)", took, longTTL)
		must.LessEq(t, nomad.DefaultConfig().HeartbeatGrace+10*time.Second, took)
		must.Eq(t, structs.NodeStatusReady, nodeStatus(t, c, -1, c.Clients[1-i].NodeID()), must.Sprint("the other node is not cut"))
	})
}

// TestNodeSession_ServerGoneNoFalseDisconnect checks that when the
// server holding every node's session goes away, the sessions move to
// the others and no node is marked disconnected, though the leader
// counts the gone server's sessions as lost: a server restart must not
// look like a fleet outage.
func TestNodeSession_ServerGoneNoFalseDisconnect(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := sessionCluster(t, 3)
		must.NoError(t, c.Servers[0].Shutdown())
		wait.Eventually(t, time.Minute, "sessions moved to servers 1 and 2", func() (bool, string) {
			for i, cl := range c.Clients {
				if !c.Servers[1].HoldsNodeSession(cl.NodeID()) && !c.Servers[2].HoldsNodeSession(cl.NodeID()) {
					return false, fmt.Sprintf("client %d holds none", i)
				}
			}
			return true, ""
		})
		// Well past the sweep of server 0 and the grace after it.
		stayReady(t, c, 0, 2*time.Minute)
	})
}

// TestNodeSession_LinkBlipNoFalseDisconnect checks that a node whose link
// resets for a moment, so that its session is lost and reported lost
// before it is back, is not marked disconnected: the session is held
// again well within the grace, and the leader sets its timer back.
func TestNodeSession_LinkBlipNoFalseDisconnect(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := sessionCluster(t, 2)
		id := c.Clients[0].NodeID()
		c.Net.Isolate(testutil.ClientHost(0), fault.Reset)
		wait.Eventually(t, 20*time.Second, "session lost", func() (bool, string) {
			return !c.Servers[0].HoldsNodeSession(id), "still held"
		})
		testutil.Settle(1100 * time.Millisecond) // the loss reaches the leader
		c.Net.Heal(testutil.ClientHost(0))
		stayReady(t, c, -1, 5*time.Minute)
	})
}
