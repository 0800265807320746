package client

import (
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
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// withPrestart adds an ephemeral prestart task "init" with cfg, a copy of
// the allocation's main task otherwise.
func withPrestart(a *structs.Allocation, driver string, cfg map[string]any) {
	tg := a.Job.TaskGroups[0]
	init := tg.Tasks[0].Copy()
	init.Name, init.Driver, init.Config = "init", driver, cfg
	init.Lifecycle = &structs.TaskLifecycleConfig{Hook: structs.TaskLifecycleHookPrestart}
	tg.Tasks = append(tg.Tasks, init)
	a.AllocatedResources = structs.NewAllocatedResources(tg)
}

// A reconnect (the servers marked the allocation unknown while the node was
// away) does not run the completed prestart task again, nor restart the
// main task: step 2 of "Reconnect" (docs/concepts/disconnected-clients.md)
// promises that nothing runs twice.
func TestClient_ReconnectDoesNotRerunPrestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)

		a := clienttest.MockAlloc(c.NodeID(), map[string]any{"run_for": "0s"})
		withPrestart(a, "mock_driver", map[string]any{"run_for": "5s"})
		srv.UpsertAllocs(a)
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			got := v.Alloc(a.ID)
			return got != nil && got.TaskStates["web"] != nil && got.TaskStates["web"].State == structs.TaskStateRunning,
				clienttest.DescribeAlloc(got)
		})

		srv.MarkUnknown(a.ID)
		srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
			got := v.Alloc(a.ID)
			return got.ClientStatus == structs.AllocClientStatusRunning &&
				countEvents(got.TaskStates["init"], structs.TaskClientReconnected) == 1, clienttest.DescribeAlloc(got)
		})
		time.Sleep(time.Hour)
		synctest.Wait()
		got := srv.Alloc(a.ID)
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
		init := got.TaskStates["init"]
		must.Eq(t, structs.TaskStateDead, init.State)
		must.Eq(t, 1, countEvents(init, structs.TaskStarted))
		must.Eq(t, 1, countEvents(got.TaskStates["web"], structs.TaskStarted))
		must.Eq(t, 0, got.TaskStates["web"].Restarts)
	})
}

// With real processes: a raw_exec prestart task prepares the allocation
// directory before the main task starts (the main task exits at once if it
// finds nothing), and a client restarted from its bbolt state re-attaches
// to the main process and does not run the completed prestart task again.
func TestClient_RawExecPrestartRunsOnceAcrossRestart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("raw_exec re-attach needs Linux")
	}
	for _, bin := range []string{"/bin/sh", "/bin/sleep"} {
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("no %s: %v", bin, err)
		}
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
	main := a.Job.TaskGroups[0].Tasks[0]
	main.Driver = "raw_exec"
	main.Config = map[string]any{"command": "/bin/sh", "args": []any{"-c", `test -f "$NOMAD_ALLOC_DIR/ready" && exec /bin/sleep 600`}}
	withPrestart(a, "raw_exec", map[string]any{"command": "/bin/sh", "args": []any{"-c",
		`sleep 0.2; echo ran >> "$NOMAD_ALLOC_DIR/prestart.log"; touch "$NOMAD_ALLOC_DIR/ready"`}})
	srv.UpsertAllocs(a)
	srv.WaitFor(t, time.Minute, func(v *clienttest.View) (bool, string) {
		got := v.Alloc(a.ID)
		return got != nil && got.TaskStates["web"] != nil && got.TaskStates["web"].State == structs.TaskStateRunning &&
			got.TaskStates["init"].State == structs.TaskStateDead, clienttest.DescribeAlloc(got)
	})
	got := srv.Alloc(a.ID)
	must.Eq(t, 0, got.TaskStates["web"].Restarts, must.Sprint("the main task started before the prestart task was done"))
	must.False(t, got.TaskStates["init"].Failed)

	taskID := a.ID + "/web"
	st, err := c1.drivers["raw_exec"].InspectTask(taskID)
	must.NoError(t, err)
	pid, err := strconv.Atoi(st.DriverAttributes["pid"])
	must.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	must.NoError(t, c1.Shutdown())

	c2 := newTestClient(t, srv, opts)
	defer c2.Destroy()
	wait.Poll(t, 30*time.Second, "the main task re-attached", func() (bool, string) {
		st, err := c2.drivers["raw_exec"].InspectTask(taskID)
		if err != nil {
			return false, err.Error()
		}
		return st.DriverAttributes["recovered"] == "true", st.DriverAttributes["recovered"]
	})
	waitReady(t, c2)
	for _, got := range c2.Allocs() {
		init := got.TaskStates["init"]
		must.Eq(t, structs.TaskStateDead, init.State)
		must.Eq(t, 1, countEvents(init, structs.TaskStarted))
		must.Eq(t, 1, countEvents(got.TaskStates["web"], structs.TaskStarted))
	}
	st, err = c2.drivers["raw_exec"].InspectTask(taskID)
	must.NoError(t, err)
	must.Eq(t, strconv.Itoa(pid), st.DriverAttributes["pid"])
	_, err = c2.drivers["raw_exec"].InspectTask(a.ID + "/init")
	must.Error(t, err, must.Sprint("the completed prestart task is running again"))
	log, err := os.ReadFile(filepath.Join(opts.allocDir, a.ID, "alloc", "prestart.log"))
	must.NoError(t, err)
	must.Eq(t, 1, strings.Count(string(log), "ran"))
}
