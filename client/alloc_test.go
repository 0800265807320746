package client

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// waitAllocStatus waits until the server holds alloc id with the client
// status want.
func waitAllocStatus(t testing.TB, srv *clienttest.FakeServer, id, want string) *structs.Allocation {
	t.Helper()
	srv.WaitFor(t, 5*time.Minute, func(v *clienttest.View) (bool, string) {
		a := v.Alloc(id)
		return a != nil && a.ClientStatus == want, clienttest.DescribeAlloc(a)
	})
	return srv.Alloc(id)
}

// eventTypes lists a task's event types in order.
func eventTypes(ts *structs.TaskState) []string {
	out := make([]string, len(ts.Events))
	for i, e := range ts.Events {
		out[i] = e.Type
	}
	return out
}

// TestClient_AllocRunsAndStops checks the basic contract with the servers:
// an allocation placed on the node runs and is reported running; stopping
// it kills the task with its kill signal and reports it complete.
func TestClient_AllocRunsAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		allocDir := t.TempDir()
		c := newTestClient(t, srv, testClientOpts{allocDir: allocDir})
		defer c.Destroy()
		waitReady(t, c)

		alloc := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "0s"})
		srv.UpsertAllocs(alloc)
		got := waitAllocStatus(t, srv, alloc.ID, structs.AllocClientStatusRunning)
		ts := got.TaskStates["web"]
		must.Eq(t, structs.TaskStateRunning, ts.State)
		must.Eq(t, []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted}, eventTypes(ts))
		must.Eq(t, "Task started by client", ts.Events[2].DisplayMessage)
		must.False(t, ts.StartedAt.IsZero())
		must.Eq(t, 1, c.NumAllocs())

		for _, p := range []string{"alloc/logs/web.stdout.0", "alloc/logs/web.stderr.0", "web/local", "alloc/data"} {
			_, err := os.Stat(filepath.Join(allocDir, alloc.ID, p))
			must.NoError(t, err)
		}

		srv.StopAlloc(alloc.ID)
		got = waitAllocStatus(t, srv, alloc.ID, structs.AllocClientStatusComplete)
		ts = got.TaskStates["web"]
		must.Eq(t, structs.TaskStateDead, ts.State)
		must.False(t, ts.Failed)
		must.Eq(t, []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted,
			structs.TaskKilling, structs.TaskKilled}, eventTypes(ts))
		must.Eq(t, time.Second, ts.Events[3].KillTimeout)
		must.False(t, ts.FinishedAt.IsZero())
	})
}

// TestClient_RestartPolicy checks that a failing task is restarted in place
// as often as its policy allows, with the delay between attempts, and then
// fails the allocation, so that the servers can reschedule it.
func TestClient_RestartPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		alloc := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "3s", "exit_code": 1})
		start := time.Now()
		srv.UpsertAllocs(alloc)
		got := waitAllocStatus(t, srv, alloc.ID, structs.AllocClientStatusFailed)

		ts := got.TaskStates["web"]
		must.Eq(t, structs.TaskStateDead, ts.State)
		must.True(t, ts.Failed)
		must.Eq(t, 2, ts.Restarts)
		must.False(t, ts.LastRestart.IsZero())
		must.Eq(t, []string{
			structs.TaskReceived, structs.TaskSetup, structs.TaskStarted, structs.TaskTerminated,
			structs.TaskRestarting, structs.TaskStarted, structs.TaskTerminated,
			structs.TaskRestarting, structs.TaskStarted, structs.TaskTerminated, structs.TaskNotRestarting,
		}[1:], eventTypes(ts), must.Sprint("events are capped at 10: the oldest went first"))
		last := ts.Events[len(ts.Events)-1]
		must.True(t, last.FailsTask)
		must.Eq(t, 1, ts.Events[len(ts.Events)-2].ExitCode)

		// Three runs of 3s and two delays of 1s to 1.25s each.
		took := time.Since(start)
		must.True(t, took >= 11*time.Second && took <= 12*time.Second, must.Sprintf("took %s", took))
		must.SliceContains(t, srv.Received(alloc.ID), structs.AllocClientStatusRunning)
	})
}

// TestClient_BatchCompletes checks that a batch task that exits 0 completes
// the allocation instead of being restarted.
func TestClient_BatchCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		alloc := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "5s"})
		alloc.Job.Type = structs.JobTypeBatch
		srv.UpsertAllocs(alloc)
		got := waitAllocStatus(t, srv, alloc.ID, structs.AllocClientStatusComplete)
		ts := got.TaskStates["web"]
		must.Eq(t, 0, ts.Restarts)
		must.False(t, ts.Failed)
		must.Eq(t, structs.TaskTerminated, ts.Events[len(ts.Events)-1].Type)
	})
}

// TestClient_UpdatesSurviveRPCFailures checks "Client while disconnected"
// (docs/concepts/disconnected-clients.md): while the servers
// cannot be reached, status updates are queued and retried, never dropped;
// when the link is back every allocation's newest state arrives, including
// those that finished during the outage.
func TestClient_UpdatesSurviveRPCFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		srv.SetError(methodUpdateAlloc, errors.New("connection reset by peer"))
		var running, finishing []*structs.Allocation
		for range 10 {
			running = append(running, clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "0s"}))
			a := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "30s"})
			a.Job.Type = structs.JobTypeBatch
			finishing = append(finishing, a)
		}
		srv.UpsertAllocs(append(running, finishing...)...)

		time.Sleep(5 * time.Minute)
		must.Eq(t, 0, srv.UpdateCalls())
		must.Eq(t, 20, c.updater.numPending())
		for _, a := range c.Allocs() {
			must.NotEq(t, structs.AllocClientStatusPending, a.ClientStatus)
		}

		srv.SetError(methodUpdateAlloc, nil)
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			return v.AllocsWithStatus(clienttest.AllocIDs(running), structs.AllocClientStatusRunning)
		})
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			return v.AllocsWithStatus(clienttest.AllocIDs(finishing), structs.AllocClientStatusComplete)
		})
		must.Eq(t, 0, c.updater.numPending())
	})
}

// TestClient_UpdatesRefusedWhileDisconnected checks that updates the
// servers refuse because the node is marked disconnected stay queued and
// land once the node is back, as step 2 of "Reconnect"
// (docs/concepts/disconnected-clients.md) needs.
func TestClient_UpdatesRefusedWhileDisconnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		srv.SetError(methodNodeUpdateStatus, errors.New("i/o timeout"))
		time.Sleep(time.Minute)
		srv.SetNodeStatus(c.NodeID(), structs.NodeStatusDisconnected)
		a := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "0s"})
		srv.UpsertAllocs(a)
		time.Sleep(time.Minute)
		must.Eq(t, structs.AllocClientStatusPending, srv.Alloc(a.ID).ClientStatus)

		srv.SetError(methodNodeUpdateStatus, nil)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)
	})
}

// TestClient_Reconnect checks step 2 of "Reconnect"
// (docs/concepts/disconnected-clients.md): allocations the servers marked
// unknown while the node was away get a Reconnected event and their true
// status pushed, and nothing is restarted.
func TestClient_Reconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		a := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "0s"})
		srv.UpsertAllocs(a)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)

		srv.MarkUnknown(a.ID)
		got := waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)
		ts := got.TaskStates["web"]
		must.Eq(t, structs.TaskClientReconnected, ts.Events[len(ts.Events)-1].Type)
		must.Eq(t, "Client reconnected", ts.Events[len(ts.Events)-1].DisplayMessage)
		must.Eq(t, 0, ts.Restarts)
		must.Eq(t, structs.TaskStateRunning, ts.State)
		must.False(t, got.NeedsToReconnect())
		starts := 0
		for _, e := range ts.Events {
			if e.Type == structs.TaskStarted {
				starts++
			}
		}
		must.Eq(t, 1, starts)
	})
}

// TestClient_GCDestroysAlloc checks that an allocation the servers garbage
// collected is destroyed locally: task killed, directory and records gone.
func TestClient_GCDestroysAlloc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		db := state.NewMemDB()
		allocDir := t.TempDir()
		c := newTestClient(t, srv, testClientOpts{db: db, allocDir: allocDir})
		defer c.Destroy()
		waitReady(t, c)

		a := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "0s"})
		srv.UpsertAllocs(a)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)

		srv.DeleteAlloc(a.ID)
		synctest.Wait() // the watch has seen the deletion
		must.Eq(t, 0, c.NumAllocs())
		c.destroyWG.Wait()
		_, err := os.Stat(filepath.Join(allocDir, a.ID))
		must.True(t, os.IsNotExist(err))
		recs, _, err := db.GetAllocations()
		must.NoError(t, err)
		must.SliceEmpty(t, recs)
		_, err = c.drivers["mock_driver"].InspectTask(a.ID + "/web")
		must.Error(t, err)
	})
}

// TestClient_TerminalAllocNotRerun checks that an allocation that already
// finished, which a client without local state is still listed, is not run
// a second time.
func TestClient_TerminalAllocNotRerun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		a := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "0s"})
		a.ClientStatus = structs.AllocClientStatusComplete
		live := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "0s"})
		srv.UpsertAllocs(a, live)
		waitAllocStatus(t, srv, live.ID, structs.AllocClientStatusRunning)
		must.Eq(t, 1, c.NumAllocs())
		must.Eq(t, structs.AllocClientStatusComplete, srv.Alloc(a.ID).ClientStatus)
	})
}
