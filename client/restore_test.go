package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func countEvents(ts *structs.TaskState, typ string) int {
	n := 0
	for _, e := range ts.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// TestClient_RestoreWithoutServers checks "Client restart"
// (docs/concepts/disconnected-clients.md): a restarted client
// re-attaches to its running tasks from the state database before (and
// without) reaching any server, and a task that finished while it was away
// is handled by its restart policy rather than forgotten.
func TestClient_RestoreWithoutServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		db := state.NewMemDB()
		allocDir := t.TempDir()
		c1 := newTestClient(t, srv, testClientOpts{db: db, allocDir: allocDir})
		waitReady(t, c1)

		forever := clienttest.MockAlloc(c1.NodeID(), map[string]any{"run_for": "0s"})
		batch := clienttest.MockAlloc(c1.NodeID(), map[string]any{"run_for": "1m"})
		batch.Job.Type = structs.JobTypeBatch
		srv.UpsertAllocs(forever, batch)
		waitAllocStatus(t, srv, forever.ID, structs.AllocClientStatusRunning)
		waitAllocStatus(t, srv, batch.ID, structs.AllocClientStatusRunning)
		must.NoError(t, c1.Shutdown())

		// The mock driver keeps its tasks in memory, so the second
		// client's driver re-creates them from the persisted handles.
		for _, m := range []string{methodNodeRegister, methodNodeUpdateStatus, methodGetClientAllocs, methodGetAllocs, methodUpdateAlloc} {
			srv.SetError(m, errors.New("no route to host"))
		}
		time.Sleep(2 * time.Minute)
		c2 := newTestClient(t, srv, testClientOpts{db: db, allocDir: allocDir})
		defer c2.Destroy()
		must.Eq(t, 2, c2.NumAllocs())

		// Everything the client can do without a server is done once
		// every goroutine waits.
		synctest.Wait()
		byID := map[string]*structs.Allocation{}
		for _, a := range c2.Allocs() {
			byID[a.ID] = a
		}
		must.Eq(t, structs.AllocClientStatusRunning, byID[forever.ID].ClientStatus, must.Sprint(clienttest.DescribeAlloc(byID[forever.ID])))
		ts := byID[forever.ID].TaskStates["web"]
		must.Eq(t, 1, countEvents(ts, structs.TaskStarted))
		must.Eq(t, 0, ts.Restarts)
		status, err := c2.drivers["mock_driver"].InspectTask(forever.ID + "/web")
		must.NoError(t, err)
		must.Eq(t, "running", string(status.State))

		// The batch task's minute ran out while the client was down.
		must.Eq(t, structs.AllocClientStatusComplete, byID[batch.ID].ClientStatus, must.Sprint(clienttest.DescribeAlloc(byID[batch.ID])))

		for _, m := range []string{methodNodeRegister, methodNodeUpdateStatus, methodGetClientAllocs, methodGetAllocs, methodUpdateAlloc} {
			srv.SetError(m, nil)
		}
		waitAllocStatus(t, srv, batch.ID, structs.AllocClientStatusComplete)
		got := waitAllocStatus(t, srv, forever.ID, structs.AllocClientStatusRunning)
		must.Eq(t, 1, countEvents(got.TaskStates["web"], structs.TaskStarted))
	})
}

// TestClient_RestoreFailedRestartsPerPolicy checks that a task whose handle
// cannot be recovered is recorded as such and restarted per its policy.
func TestClient_RestoreFailedRestartsPerPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		db := state.NewMemDB()
		c1 := newTestClient(t, srv, testClientOpts{db: db})
		waitReady(t, c1)
		a := clienttest.MockAlloc(c1.NodeID(), map[string]any{"run_for": "0s"})
		srv.UpsertAllocs(a)
		waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)
		must.NoError(t, c1.Shutdown())

		recs, _, err := db.GetAllocations()
		must.NoError(t, err)
		h := recs[0].Tasks["web"].Handle
		h.Version = 99 // written by a driver release we do not understand
		must.NoError(t, db.PutTaskHandle(a.ID, "web", h))

		c2 := newTestClient(t, srv, testClientOpts{db: db})
		defer c2.Destroy()
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			got := v.Alloc(a.ID)
			ts := got.TaskStates["web"]
			return ts != nil && ts.Restarts == 1 && ts.State == structs.TaskStateRunning, clienttest.DescribeAlloc(got)
		})
		ts := srv.Alloc(a.ID).TaskStates["web"]
		must.Eq(t, 1, countEvents(ts, structs.TaskRestoreFailed))
		must.Eq(t, 2, countEvents(ts, structs.TaskStarted))
	})
}

// TestClient_RawExecSurvivesRestart checks the promise operators care about
// most: restarting the agent does not restart their workloads. A raw_exec
// process keeps running across Shutdown and is re-attached (same pid) by
// the next client on the same state dir; Destroy then kills it.
func TestClient_RawExecSurvivesRestart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("raw_exec re-attach needs Linux")
	}
	sleepBin := "/bin/sleep"
	if _, err := os.Stat(sleepBin); err != nil {
		t.Skipf("no %s: %v", sleepBin, err)
	}
	srv := clienttest.NewFakeServer()
	defer srv.Close()
	opts := testClientOpts{
		useBolt:  true,
		stateDir: t.TempDir(),
		allocDir: t.TempDir(),
		plugins:  map[string]map[string]any{"raw_exec": {"enabled": true}},
	}
	c1 := newTestClient(t, srv, opts)
	waitReady(t, c1)
	must.Eq(t, "1", c1.Node().Attributes["driver.raw_exec"])

	a := clienttest.MockAlloc(c1.NodeID(), nil)
	task := a.Job.TaskGroups[0].Tasks[0]
	task.Driver = "raw_exec"
	task.Config = map[string]any{"command": sleepBin, "args": []any{"600"}}
	srv.UpsertAllocs(a)
	waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)

	taskID := a.ID + "/web"
	st, err := c1.drivers["raw_exec"].InspectTask(taskID)
	must.NoError(t, err)
	pid, err := strconv.Atoi(st.DriverAttributes["pid"])
	must.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() { // do not leave a stray sleep behind a failed run
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	must.NoError(t, c1.Shutdown())
	must.NoError(t, syscall.Kill(pid, 0), must.Sprint("task process died with the client"))

	c2 := newTestClient(t, srv, opts)
	waitReattached(t, c2, srv, a.ID, taskID, pid)
	waitReady(t, c2)
	for _, got := range c2.Allocs() {
		ts := got.TaskStates["web"]
		must.Eq(t, structs.TaskStateRunning, ts.State)
		must.Eq(t, 1, countEvents(ts, structs.TaskStarted))
		must.Eq(t, 0, ts.Restarts)
	}

	must.NoError(t, c2.Destroy())
	wait.Poll(t, 30*time.Second, "the task gone after Destroy", func() (bool, string) {
		return syscall.Kill(pid, 0) != nil, fmt.Sprintf("pid %d alive", pid)
	})
}

// A client whose state file was truncated (a power cut during a write)
// keeps its node identity from the identity file; when the servers hand it
// its allocation again it finds the raw_exec process still running from
// before by its environment and re-attaches to it, instead of starting a
// second copy beside an orphan nobody would ever stop.
func TestClient_LostStateAdoptsRunningTask(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("raw_exec needs Linux")
	}
	sleepBin := "/bin/sleep"
	if _, err := os.Stat(sleepBin); err != nil {
		t.Skipf("no %s: %v", sleepBin, err)
	}
	srv := clienttest.NewFakeServer()
	defer srv.Close()
	opts := testClientOpts{
		useBolt:  true,
		stateDir: t.TempDir(),
		allocDir: t.TempDir(),
		plugins:  map[string]map[string]any{"raw_exec": {"enabled": true}},
	}
	c1 := newTestClient(t, srv, opts)
	waitReady(t, c1)
	a := clienttest.MockAlloc(c1.NodeID(), nil)
	task := a.Job.TaskGroups[0].Tasks[0]
	task.Driver = "raw_exec"
	task.Config = map[string]any{"command": sleepBin, "args": []any{"600"}}
	srv.UpsertAllocs(a)
	waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)
	startedAt := srv.Alloc(a.ID).TaskStates["web"].StartedAt
	taskID := a.ID + "/web"
	st, err := c1.drivers["raw_exec"].InspectTask(taskID)
	must.NoError(t, err)
	pid, err := strconv.Atoi(st.DriverAttributes["pid"])
	must.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	nodeID := c1.NodeID()
	must.NoError(t, c1.Shutdown())

	must.NoError(t, os.Truncate(filepath.Join(opts.stateDir, state.DBFile), 100))
	c2 := newTestClient(t, srv, opts)
	defer c2.Destroy()
	must.Eq(t, nodeID, c2.NodeID(), must.Sprint("the node identity survives the lost state"))
	waitReattached(t, c2, srv, a.ID, taskID, pid)
	waitAllocStatus(t, srv, a.ID, structs.AllocClientStatusRunning)
	// The re-attached task keeps the start time the servers hold, to the
	// nanosecond: derived from the process table it would be truncated to
	// the kernel's tick (and, from /proc/stat's btime, up to a second early).
	wait.Poll(t, 30*time.Second, "the report of the re-attached task", func() (bool, string) {
		ts := srv.Alloc(a.ID).TaskStates["web"]
		if ts != nil && countEvents(ts, structs.TaskStarted) == 1 && len(ts.Events) > 0 &&
			strings.HasPrefix(ts.Events[len(ts.Events)-1].Message, "Re-attached") {
			must.True(t, ts.StartedAt.Equal(startedAt), must.Sprintf("started at %s, was %s", ts.StartedAt, startedAt))
			return true, ""
		}
		return false, clienttest.DescribeAlloc(srv.Alloc(a.ID))
	})
}

// waitReattached waits until the client's raw_exec driver has recovered
// task taskID of allocation allocID, and checks it is process pid: the
// same process, not a second copy.
func waitReattached(t *testing.T, c *Client, srv *clienttest.FakeServer, allocID, taskID string, pid int) {
	t.Helper()
	wait.Poll(t, 30*time.Second, "the task re-attached", func() (bool, string) {
		st, err := c.drivers["raw_exec"].InspectTask(taskID)
		if err == nil && st.DriverAttributes["recovered"] == "true" {
			must.Eq(t, strconv.Itoa(pid), st.DriverAttributes["pid"], must.Sprint("the same process, not a second copy"))
			return true, ""
		}
		return false, fmt.Sprintf("inspect: %v; %s", err, clienttest.DescribeAlloc(srv.Alloc(allocID)))
	})
}
