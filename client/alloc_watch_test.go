package client

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestClient_StaleWatchNeverGoesBack checks the allocation watch's stale
// reads: a server that lags behind what the client has seen (its wait
// ran out before it caught up) is not acted on. The client asks the
// leader instead, and the allocation placed since keeps running, not
// destroyed and started again.
func TestClient_StaleWatchNeverGoesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)
		before := srv.Checkpoint()

		alloc := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "1h"})
		srv.UpsertAllocs(alloc)
		got := waitAllocStatus(t, srv, alloc.ID, structs.AllocClientStatusRunning)
		started := got.TaskStates["web"].StartedAt
		stale0, consistent0 := srv.WatchReads()
		must.Positive(t, stale0)

		// A follower that stopped applying before the placement now
		// holds the client's watch. Its wait runs out with its own,
		// older list.
		srv.LagStaleReads(before)
		time.Sleep(structs.MaxBlockingQueryTime + time.Minute)
		synctest.Wait()

		must.Eq(t, 1, c.NumAllocs(), must.Sprint("the allocation's runner was destroyed"))
		got = srv.Alloc(alloc.ID)
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
		ts := got.TaskStates["web"]
		must.Eq(t, started, ts.StartedAt)
		must.Eq(t, []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted}, eventTypes(ts))
		_, consistent := srv.WatchReads()
		must.Greater(t, consistent0, consistent, must.Sprint("the client did not ask the leader"))

		// Caught up, the follower's stale reads carry changes again.
		srv.CatchUp()
		srv.StopAlloc(alloc.ID)
		waitAllocStatus(t, srv, alloc.ID, structs.AllocClientStatusComplete)
	})
}

// TestClient_StaleWatchOfANodeTheServerLacks checks that a client whose
// stale list fails on a server that has not applied its registration yet
// (it does not know the node, or its secret) asks the leader at once
// rather than backing off, as every node of a fleet starting up meets.
func TestClient_StaleWatchOfANodeTheServerLacks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		srv.LagStaleReads(srv.Checkpoint()) // before the node registers
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)
		time.Sleep(time.Minute) // the watch's first round is long past
		synctest.Wait()

		alloc := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "1h"})
		placed := time.Now()
		srv.UpsertAllocs(alloc)
		waitAllocStatus(t, srv, alloc.ID, structs.AllocClientStatusRunning)
		took := time.Since(placed)
		stale, consistent := srv.WatchReads()
		t.Logf("running %v after its placement; watch reads: %d stale, %d consistent", took, stale, consistent)
		must.Less(t, watchRetryBase, took, must.Sprint("the client backed off instead of asking the leader"))
	})
}
