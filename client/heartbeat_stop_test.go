package client

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var allMethods = []string{methodNodeRegister, methodNodeUpdateStatus, methodGetClientAllocs, methodGetAllocs, methodUpdateAlloc}

// cutOff makes every call to the fake server fail, as a dropped link does.
func cutOff(srv *clienttest.FakeServer) {
	for _, m := range allMethods {
		srv.SetError(m, errors.New("network is unreachable"))
	}
}

func reconnect(srv *clienttest.FakeServer) {
	for _, m := range allMethods {
		srv.SetError(m, nil)
	}
}

// stopAfterAlloc returns a forever-running allocation whose group stops on
// the client after stop, with a 5s kill timeout that the task uses up (it
// ignores its SIGINT for longer), so that the kill's timing is visible.
func stopAfterAlloc(nodeID string, stop time.Duration) *structs.Allocation {
	a := clienttest.MockAlloc(nodeID, map[string]any{"run_for": "0s", "kill_after": "30s"})
	a.Job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{StopOnClientAfter: &stop}
	task := a.Job.TaskGroups[0].Tasks[0]
	task.KillTimeout = 5 * time.Second
	task.KillSignal = "SIGINT"
	return a
}

// localAlloc returns the client's own view of an allocation.
func localAlloc(t *testing.T, c *Client, id string) *structs.Allocation {
	t.Helper()
	for _, a := range c.Allocs() {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("client has no allocation %s", id)
	return nil
}

// TestClient_StopOnClientAfter checks "stop_on_client_after"
// (docs/concepts/disconnected-clients.md): a client cut off from the
// servers stops the allocations of a group with stop_on_client_after once
// that long has passed since its last successful heartbeat, not a moment
// before, killing them as a server stop would and saying why on each task;
// groups without the setting keep running; the complete status reaches the
// servers once the link is back; and nothing is restarted afterwards. The
// servers count on this stop when they place the replacement, so a late or
// missing stop means two copies.
func TestClient_StopOnClientAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		stops := stopAfterAlloc(c.NodeID(), time.Minute)
		legacy := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "0s"})
		ninety := 90 * time.Second
		legacy.Job.TaskGroups[0].StopAfterClientDisconnect = &ninety
		keeps := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "0s"})
		srv.UpsertAllocs(stops, legacy, keeps)
		ids := []string{stops.ID, legacy.ID, keeps.ID}
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			return v.AllocsWithStatus(ids, structs.AllocClientStatusRunning)
		})

		cutOff(srv)
		synctest.Wait()
		lastOK := c.LastHeartbeat()
		deadline := lastOK.Add(time.Minute)

		time.Sleep(time.Until(deadline) - time.Millisecond)
		synctest.Wait()
		for _, id := range ids {
			a := localAlloc(t, c, id)
			must.Eq(t, structs.AllocClientStatusRunning, a.ClientStatus, must.Sprint(clienttest.DescribeAlloc(a)))
			must.Eq(t, 0, countEvents(a.TaskStates["web"], structs.TaskKilling))
		}

		// At the minute the kill starts, with the task's signal and timeout.
		time.Sleep(time.Millisecond)
		synctest.Wait()
		ts := localAlloc(t, c, stops.ID).TaskStates["web"]
		must.Eq(t, structs.TaskStateRunning, ts.State, must.Sprint("the kill timeout is not up yet"))
		killing := ts.Events[len(ts.Events)-1]
		must.Eq(t, structs.TaskKilling, killing.Type)
		must.Eq(t, 5*time.Second, killing.KillTimeout)
		must.Eq(t, deadline.UnixNano(), killing.Time)
		must.Eq(t, "Client lost contact with the servers for longer than stop_on_client_after (1m0s)", killing.KillReason)
		must.StrContains(t, killing.DisplayMessage, "stop_on_client_after (1m0s). Sent interrupt. Waiting 5s before force killing")

		time.Sleep(5 * time.Second)
		synctest.Wait()
		got := localAlloc(t, c, stops.ID)
		must.Eq(t, structs.AllocClientStatusComplete, got.ClientStatus, must.Sprint(clienttest.DescribeAlloc(got)))
		ts = got.TaskStates["web"]
		must.False(t, ts.Failed)
		must.Eq(t, structs.TaskKilled, ts.Events[len(ts.Events)-1].Type)
		must.Eq(t, deadline.Add(5*time.Second), ts.FinishedAt.Round(0), must.Sprint("killed at the kill timeout"))
		must.Eq(t, structs.AllocClientStatusRunning, localAlloc(t, c, legacy.ID).ClientStatus, must.Sprint("90s not up yet"))
		must.Eq(t, structs.AllocClientStatusRunning, localAlloc(t, c, keeps.ID).ClientStatus)
		must.Eq(t, structs.AllocClientStatusRunning, srv.Alloc(stops.ID).ClientStatus, must.Sprint("nothing delivered while cut off"))
		must.Positive(t, c.updater.numPending())

		time.Sleep(time.Until(lastOK.Add(ninety + 5*time.Second)))
		synctest.Wait()
		must.Eq(t, structs.AllocClientStatusComplete, localAlloc(t, c, legacy.ID).ClientStatus,
			must.Sprint("the legacy spelling stops too"))
		must.Eq(t, structs.AllocClientStatusRunning, localAlloc(t, c, keeps.ID).ClientStatus)

		// The link returns: the queued reports land, nothing restarts.
		reconnect(srv)
		waitAllocStatus(t, srv, stops.ID, structs.AllocClientStatusComplete)
		waitAllocStatus(t, srv, legacy.ID, structs.AllocClientStatusComplete)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		for _, id := range []string{stops.ID, legacy.ID} {
			a := localAlloc(t, c, id)
			must.Eq(t, structs.AllocClientStatusComplete, a.ClientStatus, must.Sprint(clienttest.DescribeAlloc(a)))
			must.Eq(t, 1, countEvents(a.TaskStates["web"], structs.TaskStarted))
			must.Eq(t, structs.AllocClientStatusComplete, srv.Alloc(id).ClientStatus)
		}
		must.Eq(t, structs.AllocClientStatusRunning, srv.Alloc(keeps.ID).ClientStatus)
		must.Eq(t, 1, countEvents(localAlloc(t, c, keeps.ID).TaskStates["web"], structs.TaskStarted))
	})
}

// TestClient_StopOnClientAfterShorterThanTTL checks that a stop_on_client_after
// shorter than the heartbeat TTL does not stop allocations between healthy
// heartbeats (which come every half to three quarters of the TTL), and that
// once cut off the client waits the TTL, which is when the servers can
// first find the node missing.
func TestClient_StopOnClientAfterShorterThanTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		a := stopAfterAlloc(c.NodeID(), 2*time.Second)
		srv.UpsertAllocs(a)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		must.Eq(t, structs.AllocClientStatusRunning, localAlloc(t, c, a.ID).ClientStatus)

		cutOff(srv)
		synctest.Wait()
		lastOK := c.LastHeartbeat()
		time.Sleep(time.Until(lastOK.Add(clienttest.DefaultHeartbeatTTL)) - time.Millisecond)
		synctest.Wait()
		must.Eq(t, 0, countEvents(localAlloc(t, c, a.ID).TaskStates["web"], structs.TaskKilling))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		must.Eq(t, 1, countEvents(localAlloc(t, c, a.ID).TaskStates["web"], structs.TaskKilling))
	})
}

// TestClient_StopOnClientAfterRestartedWhileCutOff checks that a client
// restarted while it cannot reach any server still stops such allocations,
// counting from the last heartbeat the previous process persisted, not from
// its own start: the servers count from that heartbeat too, and a stop
// later than they expect means two copies running.
func TestClient_StopOnClientAfterRestartedWhileCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		db := state.NewMemDB()
		allocDir := t.TempDir()
		c1 := newTestClient(t, srv, testClientOpts{db: db, allocDir: allocDir})
		waitReady(t, c1)
		a := stopAfterAlloc(c1.NodeID(), time.Minute)
		srv.UpsertAllocs(a)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)
		must.NoError(t, c1.Shutdown())
		hb, err := db.GetHeartbeat()
		must.NoError(t, err)
		lastBeat := hb.Wall

		cutOff(srv)
		time.Sleep(10 * time.Second)
		c2 := newTestClient(t, srv, testClientOpts{db: db, allocDir: allocDir})
		defer c2.Destroy()
		time.Sleep(time.Until(lastBeat.Add(time.Minute)) - time.Millisecond)
		synctest.Wait()
		got := localAlloc(t, c2, a.ID)
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus, must.Sprint(clienttest.DescribeAlloc(got)))
		must.Eq(t, 1, countEvents(got.TaskStates["web"], structs.TaskStarted), must.Sprint("re-attached, not restarted"))

		time.Sleep(5*time.Second + time.Millisecond)
		synctest.Wait()
		got = localAlloc(t, c2, a.ID)
		must.Eq(t, structs.AllocClientStatusComplete, got.ClientStatus, must.Sprint(clienttest.DescribeAlloc(got)))
		must.Eq(t, lastBeat.Add(time.Minute+5*time.Second), got.TaskStates["web"].FinishedAt.Round(0))
	})
}
