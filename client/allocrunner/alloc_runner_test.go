package allocrunner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// recorder is a StateUpdater that keeps the latest report per allocation.
type recorder struct {
	mu      sync.Mutex
	latest  map[string]*structs.Allocation
	changed chan struct{}
}

func newRecorder() *recorder {
	return &recorder{latest: map[string]*structs.Allocation{}, changed: make(chan struct{})}
}

func (r *recorder) AllocStateUpdated(a *structs.Allocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latest[a.ID] = a
	close(r.changed)
	r.changed = make(chan struct{})
}

// waitFor waits until cond holds on the latest report of id.
func (r *recorder) waitFor(t *testing.T, id string, cond func(a *structs.Allocation) bool) *structs.Allocation {
	t.Helper()
	deadline := time.After(10 * time.Minute)
	for {
		r.mu.Lock()
		a, ch := r.latest[id], r.changed
		r.mu.Unlock()
		if a != nil && cond(a) {
			return a
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("condition not met; last report: %s", clienttest.DescribeAlloc(a))
		}
	}
}

func (r *recorder) waitStatus(t *testing.T, id, status string) *structs.Allocation {
	t.Helper()
	return r.waitFor(t, id, func(a *structs.Allocation) bool { return a.ClientStatus == status })
}

// driverMap is a DriverManager over fixed drivers.
type driverMap map[string]drivers.Driver

func (m driverMap) Driver(name string) (drivers.Driver, error) {
	if d, ok := m[name]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("%w: %q", drivers.ErrUnknownDriver, name)
}

type harness struct {
	maxKill time.Duration
	users   UserPolicy
	db      state.StateDB
	rec     *recorder
	drivers driverMap
	root    string
	// identities signs workload identities (identity_hook_test.go).
	identities IdentitySigner
	// templates gives templates their data (template_hook_test.go).
	templates TemplateSources
	// hostVolumes are the node's host volumes the runners see.
	hostVolumes map[string]*structs.ClientHostVolumeConfig
	// network gives bridge-mode allocations their namespaces
	// (network_hook_test.go).
	network NetworkManager
	// networkUnavailable is why network cannot do bridge mode.
	networkUnavailable error
}

func newHarness(t *testing.T) *harness {
	d, err := mock.New(drivers.Options{}, nil)
	must.NoError(t, err)
	return &harness{db: state.NewMemDB(), rec: newRecorder(), drivers: driverMap{mock.Name: d}, root: t.TempDir()}
}

func (h *harness) runner(t *testing.T, a *structs.Allocation) *AllocRunner {
	t.Helper()
	must.NoError(t, h.db.PutAllocations(a))
	ar, err := NewAllocRunner(Config{
		Logger:         clienttest.Logger(),
		Alloc:          a,
		AllocDirRoot:   h.root,
		Node:           NodeInfo{ID: "node-1", Name: "n1", Datacenter: "dc1", Region: "global", HostVolumes: h.hostVolumes},
		StateDB:        h.db,
		Drivers:        h.drivers,
		StateUpdater:   h.rec,
		MaxKillTimeout: h.maxKill,
		Users:          h.users,
		Identities:     h.identities,
		Templates:      h.templates,
		Network:        h.network,

		NetworkUnavailable: h.networkUnavailable,
	})
	must.NoError(t, err)
	return ar
}

// twoTaskAlloc returns an allocation whose group runs a leader-less "main"
// and a "side" task with the given mock configs.
func twoTaskAlloc(main, side map[string]any) *structs.Allocation {
	a := clienttest.MockAlloc("node-1", main)
	tg := a.Job.TaskGroups[0]
	s := tg.Tasks[0].Copy()
	s.Name = "side"
	s.Config = side
	tg.Tasks = append(tg.Tasks, s)
	a.AllocatedResources = structs.NewAllocatedResources(tg)
	return a
}

// TestAllocRunner_LeaderDeath checks the group's leader semantics: when the
// leader task exits, the other tasks are killed and the allocation is
// complete, not failed.
func TestAllocRunner_LeaderDeath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := twoTaskAlloc(map[string]any{"run_for": "10s"}, map[string]any{"run_for": "0s"})
		a.Job.Type = structs.JobTypeBatch
		a.Job.TaskGroups[0].Tasks[0].Leader = true
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()

		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		side := got.TaskStates["side"]
		must.Eq(t, structs.TaskStateDead, side.State)
		must.False(t, side.Failed)
		must.SliceContains(t, eventTypesOf(side), structs.TaskLeaderDead)
		must.SliceContains(t, eventTypesOf(side), structs.TaskKilled)
		<-ar.WaitCh()
	})
}

// TestAllocRunner_SiblingFailure checks that a task that fails for good
// takes its siblings down and fails the allocation.
func TestAllocRunner_SiblingFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := twoTaskAlloc(map[string]any{"start_error": "image not found"}, map[string]any{"run_for": "0s"})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()

		got := h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			return a.ClientStatus == structs.AllocClientStatusFailed && a.TaskStates["side"].State == structs.TaskStateDead
		})
		main := got.TaskStates["web"]
		must.True(t, main.Failed)
		must.Eq(t, []string{structs.TaskReceived, structs.TaskSetup, structs.TaskDriverFailure, structs.TaskNotRestarting}, eventTypesOf(main))
		must.Eq(t, ReasonUnrecoverable, main.Events[3].RestartReason)
		side := got.TaskStates["side"]
		must.False(t, side.Failed)
		must.SliceContains(t, eventTypesOf(side), structs.TaskSiblingFailed)
	})
}

// TestAllocRunner_KillTimeout checks that a task that ignores its kill
// signal is force-killed after its kill_timeout, and no later.
func TestAllocRunner_KillTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "0s", "kill_after": "1h"})
		a.Job.TaskGroups[0].Tasks[0].KillTimeout = 7 * time.Second
		a.Job.TaskGroups[0].Tasks[0].KillSignal = "SIGINT"
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		stopped := a.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		start := time.Now()
		ar.Update(stopped)
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		must.Eq(t, 7*time.Second, time.Since(start))
		ts := got.TaskStates["web"]
		must.Eq(t, []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted, structs.TaskKilling, structs.TaskKilled}, eventTypesOf(ts))
		must.Eq(t, "Sent interrupt. Waiting 7s before force killing", ts.Events[3].DisplayMessage)
	})
}

// A job's kill_timeout is capped by the client's max_kill_timeout: a job
// asking for an hour cannot make its client wait an hour to stop a task
// that ignores its signal (an agent shutdown or a drain would hang).
func TestAllocRunner_KillTimeoutCappedByClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.maxKill = 30 * time.Second
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "0s", "kill_after": "2h"})
		a.Job.TaskGroups[0].Tasks[0].KillTimeout = time.Hour
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		stopped := a.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		start := time.Now()
		ar.Update(stopped)
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		must.Eq(t, 30*time.Second, time.Since(start))
		must.StrContains(t, got.TaskStates["web"].Events[3].DisplayMessage, "Waiting 30s before force killing")
	})
}

// TestAllocRunner_RecoverableStartError checks that a start failure the
// driver marks recoverable is retried under the restart policy.
func TestAllocRunner_RecoverableStartError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"start_error": "EAGAIN", "start_error_recoverable": true})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
		ts := got.TaskStates["web"]
		must.Eq(t, 2, ts.Restarts)
		must.Eq(t, structs.TaskNotRestarting, ts.Events[len(ts.Events)-1].Type)
	})
}

// TestAllocRunner_UnknownDriver checks that a task naming a driver the node
// lacks fails at once with a driver failure naming it.
func TestAllocRunner_UnknownDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", nil)
		a.Job.TaskGroups[0].Tasks[0].Driver = "docker"
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
		ts := got.TaskStates["web"]
		must.StrContains(t, ts.Events[2].DriverError, `"docker"`)
		must.Eq(t, 0, ts.Restarts)
	})
}

// TestAllocRunner_StoppedBeforeStart checks that an allocation the server
// already stopped is never started, and reports complete.
func TestAllocRunner_StoppedBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "0s"})
		a.DesiredStatus = structs.AllocDesiredStatusStop
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		<-ar.WaitCh()
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		must.SliceNotContains(t, eventTypesOf(got.TaskStates["web"]), structs.TaskStarted)
	})
}

// TestAllocRunner_ShutdownLeavesTasksRestoreReattaches checks that Shutdown
// leaves the task running in its driver and that a new runner restored from
// the database re-attaches to it, with no new start and no restart.
func TestAllocRunner_ShutdownLeavesTasksRestoreReattaches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "0s"})
		ar := h.runner(t, a)
		go ar.Run()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		ar.Shutdown()

		st, err := h.drivers[mock.Name].InspectTask(a.ID + "/web")
		must.NoError(t, err)
		must.Eq(t, drivers.TaskStateRunning, st.State)

		recs, _, err := h.db.GetAllocations()
		must.NoError(t, err)
		must.Len(t, 1, recs)
		must.NotNil(t, recs[0].Tasks["web"].Handle)

		ar2, err := NewAllocRunner(Config{
			Alloc: recs[0].Alloc, AllocDirRoot: h.root, StateDB: h.db, Drivers: h.drivers, StateUpdater: h.rec,
		})
		must.NoError(t, err)
		ar2.Restore(recs[0].Tasks)
		go ar2.Run()
		defer ar2.Destroy()
		synctest.Wait()
		got := ar2.Alloc()
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
		must.Eq(t, []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted}, eventTypesOf(got.TaskStates["web"]))
	})
}

// TestAllocRunner_Destroy checks that Destroy kills the tasks and removes
// the directory and the records.
func TestAllocRunner_Destroy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "0s"})
		ar := h.runner(t, a)
		go ar.Run()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		ar.Destroy()
		_, err := os.Stat(filepath.Join(h.root, a.ID))
		must.True(t, os.IsNotExist(err))
		_, err = h.drivers[mock.Name].InspectTask(a.ID + "/web")
		must.ErrorIs(t, err, drivers.ErrTaskNotFound)
		recs, _, _ := h.db.GetAllocations()
		must.SliceEmpty(t, recs)
	})
}

// TestTaskEnv checks the variables a task gets, and that the task's own env
// can refer to them.
func TestTaskEnv(t *testing.T) {
	a := clienttest.MockAlloc("node-1", nil)
	a.Name = "job.web[3]"
	task := a.Job.TaskGroups[0].Tasks[0]
	task.Env = map[string]string{"MY_DIR": "${NOMAD_TASK_DIR}/conf", "KEEP": "${HOME}", "PLAIN": "x"}
	task.Meta = map[string]string{"team": "edge"}
	ad := NewAllocDir("/var/nomad/alloc", a.ID)
	env := buildEnv(envInput{alloc: a, task: task, allocDir: ad, taskDir: ad.TaskDir(task.Name), node: NodeInfo{ID: "n1", Name: "node", Datacenter: "dc9"}})

	want := map[string]string{
		"NOMAD_ALLOC_ID":     a.ID,
		"NOMAD_ALLOC_INDEX":  "3",
		"NOMAD_TASK_NAME":    "web",
		"NOMAD_GROUP_NAME":   "web",
		"NOMAD_JOB_NAME":     a.Job.Name,
		"NOMAD_ALLOC_DIR":    "/var/nomad/alloc/" + a.ID + "/alloc",
		"NOMAD_TASK_DIR":     "/var/nomad/alloc/" + a.ID + "/web/local",
		"NOMAD_CPU_LIMIT":    "500",
		"NOMAD_MEMORY_LIMIT": "256",
		"NOMAD_DC":           "dc9",
		"NOMAD_META_team":    "edge",
		"NOMAD_META_TEAM":    "edge",
		"MY_DIR":             "/var/nomad/alloc/" + a.ID + "/web/local/conf",
		"KEEP":               "${HOME}",
		"PLAIN":              "x",
	}
	for k, v := range want {
		must.Eq(t, v, env[k], must.Sprintf("env %s", k))
	}
	for k := range env {
		must.False(t, strings.Contains(k, " "))
	}
}

func eventTypesOf(ts *structs.TaskState) []string {
	out := make([]string, len(ts.Events))
	for i, e := range ts.Events {
		out[i] = e.Type
	}
	return out
}

// A driver config may name the task's directories, its env and the node's
// attributes and meta: `args = ["${NOMAD_TASK_DIR}/app.conf"]` must reach
// the process expanded, at any depth of the config, and the job's own
// config must be left as it was.
func TestInterpolateConfig(t *testing.T) {
	env := map[string]string{"NOMAD_TASK_DIR": "/alloc/t/local", "PORT": "8080"}
	node := NodeInfo{ID: "n1", Name: "edge-7", Datacenter: "dc9",
		Attributes: map[string]string{"kernel.name": "linux"}, Meta: map[string]string{"rack": "r2"}}
	config := map[string]any{
		"command": "${NOMAD_TASK_DIR}/bin/app",
		"args":    []any{"--port=${PORT}", "--dc=${node.datacenter}", "--os=${attr.kernel.name}", "${unknown}"},
		"mount":   []map[string]any{{"source": "${meta.rack}", "n": int64(3)}},
		"list":    []string{"${node.unique.name}"},
	}
	got := interpolateConfig(config, env, node)
	must.Eq(t, map[string]any{
		"command": "/alloc/t/local/bin/app",
		"args":    []any{"--port=8080", "--dc=dc9", "--os=linux", "${unknown}"},
		"mount":   []map[string]any{{"source": "r2", "n": int64(3)}},
		"list":    []string{"edge-7"},
	}, got)
	must.Eq(t, "${NOMAD_TASK_DIR}/bin/app", config["command"], must.Sprint("the job's config is not changed"))
}

// TestAllocRunner_StopWithReason checks the runner's side of a stop the
// client decides on its own (stop_on_client_after): every task is killed
// and says why, a running one on its Killing event and one waiting out a
// restart delay on its Killed event; the allocation completes rather than
// fails, and a second Stop, or one after a server stop, does nothing.
func TestAllocRunner_StopWithReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := twoTaskAlloc(map[string]any{"run_for": "0s"}, map[string]any{"run_for": "1s", "exit_code": 1})
		a.Job.TaskGroups[0].RestartPolicy.Delay = time.Hour
		a.Job.TaskGroups[0].Tasks[1].RestartPolicy.Delay = time.Hour
		ar := h.runner(t, a)
		go ar.Run()
		h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool {
			return a.TaskStates["side"].Restarts == 1 && a.TaskStates["web"].State == structs.TaskStateRunning
		})

		const why = "Client lost contact with the servers for longer than stop_on_client_after (1m0s)"
		must.True(t, ar.Stop(why))
		must.False(t, ar.Stop(why))
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)

		web := got.TaskStates["web"].Events
		killing := web[len(web)-2]
		must.Eq(t, structs.TaskKilling, killing.Type)
		must.Eq(t, why, killing.KillReason)
		must.Eq(t, why+". Sent interrupt. Waiting 1s before force killing", killing.DisplayMessage)
		must.Eq(t, structs.TaskKilled, web[len(web)-1].Type)
		must.Eq(t, "", web[len(web)-1].KillReason, must.Sprint("said once, on the Killing event"))

		side := got.TaskStates["side"].Events
		killed := side[len(side)-1]
		must.Eq(t, structs.TaskKilled, killed.Type)
		must.Eq(t, why, killed.KillReason)
		must.Eq(t, why+". Task killed", killed.DisplayMessage)
		must.Eq(t, 0, countType(side, structs.TaskKilling), must.Sprint("nothing was running to interrupt"))
		<-ar.WaitCh()

		b := clienttest.MockAlloc("node-1", map[string]any{"run_for": "0s"})
		br := h.runner(t, b)
		go br.Run()
		h.rec.waitStatus(t, b.ID, structs.AllocClientStatusRunning)
		stopped := b.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		br.Update(stopped)
		must.False(t, br.Stop(why), must.Sprint("the servers stopped it already"))
		h.rec.waitStatus(t, b.ID, structs.AllocClientStatusComplete)
	})
}

func countType(events []*structs.TaskEvent, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}
