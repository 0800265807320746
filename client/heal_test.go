package client

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/testutil/fault"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// recordingRPC notes when each call starts, then passes it on.
type recordingRPC struct {
	inner RPCHandler
	mu    sync.Mutex
	calls map[string][]time.Time
}

func (r *recordingRPC) RPC(method string, args, reply any) error {
	r.mu.Lock()
	if r.calls == nil {
		r.calls = map[string][]time.Time{}
	}
	r.calls[method] = append(r.calls[method], time.Now())
	r.mu.Unlock()
	return r.inner.RPC(method, args, reply)
}

func (r *recordingRPC) since(method string, t time.Time) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Time
	for _, c := range r.calls[method] {
		if !c.Before(t) {
			out = append(out, c)
		}
	}
	return out
}

// While no server answers, the client retries its heartbeat about once a
// second, jittered by ±25%, for as long as the outage lasts: never a
// growing backoff (the first attempt after the link returns decides how
// fast the node heals) and never in step with other nodes (no thundering
// herd when a cell tower comes back).
func TestClient_UnreachableRetryIsFlatAndJittered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		rec := &recordingRPC{inner: srv}
		c := newTestClient(t, rec, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		srv.Cut(fault.Reset)
		cut := time.Now()
		time.Sleep(10 * time.Minute)
		attempts := rec.since(methodNodeUpdateStatus, cut)
		must.Greater(t, 400, len(attempts))
		var gaps []time.Duration
		for i := 2; i < len(attempts); i++ { // the first gap is the regular interval
			gaps = append(gaps, attempts[i].Sub(attempts[i-1]))
		}
		must.GreaterEq(t, 750*time.Millisecond, slices.Min(gaps))
		must.Less(t, 1250*time.Millisecond, slices.Max(gaps))
		must.Greater(t, 100*time.Millisecond, slices.Max(gaps)-slices.Min(gaps), must.Sprint("the retries are jittered"))
	})
}

// The heal path of "Reconnect" (docs/concepts/disconnected-clients.md):
// the servers marked the node disconnected and its allocation unknown
// while the link was down. Once the link works again, the node is ready
// and the allocation running within about one retry interval, because the
// client retries every second, pushes the allocation's true state as soon
// as the servers answer, and heartbeats again right after that push
// instead of waiting a heartbeat interval for initializing → ready.
func TestClient_HealsWithinOneRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		srv.SetHeartbeatTTL(2 * time.Second)
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)
		a := windowedAlloc(c.NodeID())
		srv.UpsertAllocs(a)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)

		worst := cutAndHeal{
			rounds: 20,
			cutFor: 3 * time.Second, // TTL + grace: the servers give up on the node
			awayFor: func(round int) time.Duration {
				return time.Duration(10+round) * time.Second
			},
		}.run(t, srv, c.NodeID(), a.ID)
		t.Logf("slowest of 20 heals: %v", worst)
		must.LessEq(t, 1500*time.Millisecond, worst, must.Sprintf("slowest heal %v", worst))
		must.Eq(t, 0, srv.Alloc(a.ID).TaskStates["web"].Restarts)
	})
}

// A link that drops packets instead of refusing them (silent loss, TCP
// retransmitting into a blackhole) fails no call: the heartbeat in flight
// waits out the outage and then goes through. The servers meanwhile went
// a TTL without hearing the node and marked it disconnected. The client
// must notice the gap itself and heal as after a failed call: push, then
// heartbeat at once, so the node is ready within about a second, not a
// heartbeat interval (5-7.5 s at this TTL) later.
func TestClient_HealsAfterAStalledLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		srv.SetHeartbeatTTL(10 * time.Second)
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)
		a := windowedAlloc(c.NodeID())
		srv.UpsertAllocs(a)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)

		for range 5 {
			srv.Cut(fault.Stall)
			time.Sleep(15 * time.Second) // past TTL + grace
			srv.SetNodeStatus(c.NodeID(), structs.NodeStatusDisconnected)
			srv.MarkUnknown(a.ID)
			time.Sleep(20 * time.Second)

			srv.Heal()
			healed := time.Now()
			srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
				n, al := v.Node(c.NodeID()), v.Alloc(a.ID)
				return n.Status == structs.NodeStatusReady && al.ClientStatus == structs.AllocClientStatusRunning,
					"node " + n.Status + ", " + clienttest.DescribeAlloc(al)
			})
			took := time.Since(healed)
			must.LessEq(t, 1500*time.Millisecond, took, must.Sprintf("heal after a stalled link took %v", took))
		}
	})
}

// A server that lost its state (no data dir, a fresh cluster) answers the
// next heartbeat with "node not found". The client registers again at
// once and lists its allocations from scratch rather than from an index
// those servers may not reach for minutes, so it kills what they no longer
// know of within one heartbeat interval: a task nobody schedules must not
// keep running beside the replacement the operator will submit.
func TestClient_ServerLostState_StopsUnknownAllocsWithinAHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		ttl := 10 * time.Second
		srv.SetHeartbeatTTL(ttl)
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)
		a := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "10h"})
		srv.UpsertAllocs(a)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)
		synctest.Wait() // the watch blocks on the index that listed it

		srv.LoseState()
		lost := time.Now()
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			n := v.Node(c.NodeID())
			return n != nil && n.Status == structs.NodeStatusReady, "node not registered again"
		})
		for c.NumAllocs() > 0 && time.Since(lost) < time.Hour {
			time.Sleep(100 * time.Millisecond)
		}
		must.LessEq(t, ttl, time.Since(lost), must.Sprint("allocation still running"))
		c.destroyWG.Wait()
		_, err := c.drivers["mock_driver"].InspectTask(a.ID + "/web")
		must.Error(t, err, must.Sprint("the task was killed"))
		must.Eq(t, 2, srv.Registrations())
	})
}

// failingDialer refuses every dial and counts them by address.
type failingDialer struct {
	mu    sync.Mutex
	dials map[string]int
}

func (d *failingDialer) DialContext(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dials == nil {
		d.dials = map[string]int{}
	}
	d.dials[addr]++
	return nil, errors.New("connection refused")
}

// A call whose link fails tries each server once, up to three, and then
// fails with a transport error (which the client's loops retry about once
// a second): one dead server costs a client one dial, not a stall, and a
// client with a dead link of its own does not walk a long server list.
func TestServerRPC_FailsOverOncePerServer(t *testing.T) {
	d := &failingDialer{}
	s, err := NewServerRPC([]string{"10.0.0.1:4647"}, d)
	must.NoError(t, err)
	defer s.Shutdown()
	s.SetServers([]string{"10.0.0.1:4647", "10.0.0.2:4647", "10.0.0.3:4647", "10.0.0.4:4647"})

	err = s.RPC(methodNodeUpdateStatus, &structs.NodeUpdateStatusRequest{}, &structs.NodeUpdateResponse{})
	must.ErrorIs(t, err, pool.ErrTransport)
	must.True(t, unreachable(err))
	must.MapLen(t, 3, d.dials)
	for addr, n := range d.dials {
		must.Eq(t, 1, n, must.Sprintf("dials to %s", addr))
	}
	must.MapContainsKey(t, d.dials, "10.0.0.1:4647", must.Sprint("the server in use is tried first"))
}

// The servers a heartbeat reports replace the configured ones as the first
// choice: the server in use stays first (learning the list moves no
// connection), the configured servers nobody reported come last as a
// fallback, and rebalancing reorders without losing any.
func TestServerRPC_LearnsServers(t *testing.T) {
	seed := []string{"10.0.0.1:4647", "10.0.9.9:4647"}
	s, err := NewServerRPC(seed, &failingDialer{})
	must.NoError(t, err)
	defer s.Shutdown()

	learned := []string{"10.0.0.3:4647", "10.0.0.2:4647", "10.0.0.1:4647"}
	s.SetServers(learned)
	got := s.Servers()
	must.Eq(t, "10.0.0.1:4647", got[0])
	must.Eq(t, "10.0.9.9:4647", got[3], must.Sprint("the unreported seed server comes last"))
	must.SliceContainsAll(t, append(slices.Clone(learned), seed[1]), got)

	s.SetServers(nil) // a response without servers changes nothing
	must.Eq(t, got, s.Servers())

	for range 20 {
		s.Rebalance()
		got = s.Servers()
		must.SliceContainsAll(t, append(slices.Clone(learned), seed[1]), got)
		must.Eq(t, "10.0.9.9:4647", got[3])
	}
}

// A site returning at once: the leader gathers the heartbeats of a short
// window into one raft entry, so the heartbeat that ends a node's outage
// is answered only once the node is initializing, some milliseconds after
// the link came back. The client's allocation watch, meanwhile, already
// sees its allocations unknown and wants to push their true state. Pushed
// before that heartbeat is written, the update is refused (the node is
// still disconnected) and waits out a retry backoff; pushed after it was
// written but before its answer was read, it opened no "heartbeat after
// the push" window, and ready waited a whole heartbeat interval. The
// client holds its pushes while the servers have not heard it for a TTL,
// and the heartbeat that ends the silence opens the window: no push is
// refused and each heal takes about one retry interval.
func TestClient_ReturnWithBatchedHeartbeat_NoRefusedPushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		srv.SetHeartbeatTTL(10 * time.Second)
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)
		a := windowedAlloc(c.NodeID())
		srv.UpsertAllocs(a)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)
		srv.SetHeartbeatCommitDelay(300 * time.Millisecond)

		worst := cutAndHeal{
			rounds: 10,
			cutFor: 25 * time.Second, // past TTL + grace
			awayFor: func(round int) time.Duration {
				return time.Duration(5+round) * time.Second
			},
		}.run(t, srv, c.NodeID(), a.ID)
		t.Logf("slowest of 10 heals: %v, %d pushes refused", worst, srv.RefusedUpdates())
		must.Eq(t, 0, srv.RefusedUpdates(), must.Sprint("pushes sent while the node was still disconnected"))
		must.LessEq(t, 2*time.Second, worst, must.Sprintf("slowest heal %v", worst))
		must.Eq(t, 0, srv.Alloc(a.ID).TaskStates["web"].Restarts)
	})
}

// windowedAlloc is a running-for-hours allocation whose group has a
// one-hour disconnect window: what keeps the servers' view of a silent
// node disconnected (and its allocation unknown) rather than down, as in
// the heal scenarios here; the fake server applies that rule as the real
// ones do.
func windowedAlloc(nodeID string) *structs.Allocation {
	a := clienttest.MockAlloc(nodeID, map[string]any{"run_for": "10h"})
	a.Job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour}
	return a
}

// cutAndHeal cuts a client's link rounds times. After cutFor the servers
// mark its node disconnected and the allocation unknown, as they would
// once TTL and grace ran out; awayFor(round) later the link heals, and the
// node must be ready and the allocation running again.
type cutAndHeal struct {
	rounds  int
	cutFor  time.Duration
	awayFor func(round int) time.Duration
}

// run runs the rounds and returns the slowest heal.
func (h cutAndHeal) run(t *testing.T, srv *clienttest.FakeServer, nodeID, allocID string) time.Duration {
	t.Helper()
	var worst time.Duration
	for round := range h.rounds {
		srv.Cut(fault.Reset)
		time.Sleep(h.cutFor)
		srv.SetNodeStatus(nodeID, structs.NodeStatusDisconnected)
		srv.MarkUnknown(allocID)
		time.Sleep(h.awayFor(round))

		srv.Heal()
		healed := time.Now()
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			n, al := v.Node(nodeID), v.Alloc(allocID)
			return n.Status == structs.NodeStatusReady && al.ClientStatus == structs.AllocClientStatusRunning,
				"node " + n.Status + ", " + clienttest.DescribeAlloc(al)
		})
		worst = max(worst, time.Since(healed))
	}
	return worst
}
