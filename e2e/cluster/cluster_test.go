package cluster

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// sleepJob is a raw_exec job of count /bin/sleep tasks, one per client,
// each sleeping a day: longer than any run (a soak of an hour saw every
// task of an hour's sleep exit and restart at its end).
func sleepJob(id string, count int) *nomadapi.Job {
	job := nomadapi.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	tg := nomadapi.NewTaskGroup("sleep", count)
	tg.Constrain(&nomadapi.Constraint{Operand: "distinct_hosts", RTarget: "true"})
	task := nomadapi.NewTask("sleep", "raw_exec")
	task.SetConfig("command", "/bin/sleep")
	task.SetConfig("args", []string{"86400"})
	cpu, mem := 50, 32
	task.Require(&nomadapi.Resources{CPU: &cpu, MemoryMB: &mem})
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	return job
}

// taskRun is one running allocation as the servers and the process table
// see it.
type taskRun struct {
	AllocID, NodeID string
	PID             int
	StartedAt       time.Time
	Restarts        uint64
}

func (r taskRun) String() string {
	return fmt.Sprintf("alloc %s on %s pid %d started %s restarts %d",
		r.AllocID[:8], r.NodeID[:8], r.PID, r.StartedAt.Format(time.StampMicro), r.Restarts)
}

// runningTasks waits until the job has want allocations running, each
// with exactly one task process, and returns them by alloc ID.
func (c *cluster) runningTasks(jobID string, want int, timeout time.Duration) map[string]taskRun {
	c.t.Helper()
	var runs map[string]taskRun
	wait.Poll(c.t, timeout, fmt.Sprintf("%d allocations of %s running with a live task process", want, jobID), func() (bool, string) {
		var err error
		runs, err = c.tasks(jobID)
		if err != nil {
			return false, err.Error()
		}
		return len(runs) == want, describe(runs)
	})
	return runs
}

// tasks returns the job's running allocations; an allocation that is not
// running, or whose process is missing, is an error.
func (c *cluster) tasks(jobID string) (map[string]taskRun, error) {
	allocs, _, err := c.anyServer().API().Jobs().Allocations(jobID, false, nil)
	if err != nil {
		return nil, err
	}
	runs := map[string]taskRun{}
	for _, a := range allocs {
		if a.DesiredStatus != "run" {
			continue
		}
		ts := a.TaskStates["sleep"]
		if a.ClientStatus != "running" || ts == nil {
			return nil, fmt.Errorf("alloc %s is %s/%s", a.ID[:8], a.DesiredStatus, a.ClientStatus)
		}
		pids := harness.AllocPIDs(a.ID)
		if len(pids) != 1 {
			return nil, fmt.Errorf("alloc %s has task processes %v, want one", a.ID[:8], pids)
		}
		runs[a.ID] = taskRun{AllocID: a.ID, NodeID: a.NodeID, PID: pids[0], StartedAt: ts.StartedAt, Restarts: ts.Restarts}
	}
	return runs, nil
}

func describe(runs map[string]taskRun) string {
	var out []string
	for _, r := range runs {
		out = append(out, r.String())
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// mustBeUnrestarted checks that now holds exactly the runs of before: the
// same allocations, the same processes still alive, no restart.
func mustBeUnrestarted(t *testing.T, before, now map[string]taskRun) {
	t.Helper()
	must.Eq(t, before, now, must.Sprintf("before: %s\nnow: %s", describe(before), describe(now)))
	for _, r := range now {
		must.True(t, harness.Alive(r.PID), must.Sprintf("task process %d of alloc %s is alive", r.PID, r.AllocID))
		must.Eq(t, 0, r.Restarts)
	}
}

// registerJob registers through the given agent's HTTP API and waits for
// the job's allocations to run.
func (c *cluster) registerJob(via *harness.Agent, job *nomadapi.Job) map[string]taskRun {
	c.t.Helper()
	_, _, err := via.API().Jobs().Register(job, nil)
	must.NoError(c.t, err, must.Sprintf("registering %s through %s", *job.ID, via.Name))
	return c.runningTasks(*job.ID, *job.TaskGroups[0].Count, 30*time.Second)
}

func (c *cluster) follower() *harness.Agent {
	leader := c.waitLeader(10*time.Second, "")
	for _, s := range c.servers {
		if s != leader && s.Running() {
			return s
		}
	}
	c.t.Fatal("no running follower")
	return nil
}

// nodesReady fails unless every client's node is ready.
func (c *cluster) nodesReady() error {
	nodes, _, err := c.anyServer().API().Nodes().List(nil)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.Status != "ready" {
			return fmt.Errorf("node %s is %s", n.Name, n.Status)
		}
	}
	if len(nodes) != len(c.clients) {
		return fmt.Errorf("%d nodes, want %d", len(nodes), len(c.clients))
	}
	return nil
}

// Three servers and two clients, each its own process; the leader dies
// with kill -9. The other two elect a new leader, the job's tasks keep
// running untouched (same allocations, same processes, no restart) past
// the clients' heartbeat deadline, the new leader schedules new work, and
// the killed server rejoins on its old data dir.
func TestCluster_LeaderKilledJobKeepsRunning(t *testing.T) {
	c := newCluster(t, clusterOpts{servers: 3, clients: 2})
	t.Logf("three servers elected a leader %v after start", c.startServers())
	c.startClients()

	// Written through a follower: the write is forwarded to the leader.
	before := c.registerJob(c.follower(), sleepJob("sleep", 2))
	t.Logf("running: %s", describe(before))

	old := c.waitLeader(10*time.Second, "")
	killedAt := time.Now()
	old.Kill9()
	leader := c.waitLeader(30*time.Second, old.RPCAddr())
	t.Logf("kill -9 of leader %s: %s leads %v later", old.Name, leader.Name, time.Since(killedAt))

	// min_heartbeat_ttl + heartbeat_grace is 4s: a client that failed to
	// heartbeat another server would be down by then.
	harness.Hold(t, 6*time.Second, "nodes ready and tasks unrestarted after the leader died", func() error {
		if err := c.nodesReady(); err != nil {
			return err
		}
		now, err := c.tasks("sleep")
		if err != nil {
			return err
		}
		if !maps.Equal(before, now) {
			return fmt.Errorf("before: %s; now: %s", describe(before), describe(now))
		}
		return nil
	})
	now, err := c.tasks("sleep")
	must.NoError(t, err)
	mustBeUnrestarted(t, before, now)

	c.registerJob(leader, sleepJob("after-failover", 1))

	old.Start()
	wait.Poll(t, 30*time.Second, "the killed server back, following the new leader", func() (bool, string) {
		l := old.Leader()
		return l == leader.RPCAddr(), fmt.Sprintf("%s sees leader %q", old.Name, l)
	})
	c.waitLeader(10*time.Second, "")
	c.waitVoters(30 * time.Second)
}

// Every client talks to the first server of its client.servers list
// until it fails (learning the region's servers keeps the one in use
// first). That server dies with kill -9 (leader or not): the
// clients move to another server before their heartbeat deadline, their
// nodes stay ready and their tasks untouched, and they keep reporting:
// a task that exits is seen complete through the surviving servers.
func TestCluster_ClientsServerKilled(t *testing.T) {
	c := newCluster(t, clusterOpts{servers: 3, clients: 2})
	c.startServers()
	c.startClients()
	before := c.registerJob(c.servers[1], sleepJob("sleep", 2))

	first := c.servers[0]
	wasLeader := c.waitLeader(10*time.Second, "") == first
	first.Kill9()
	c.waitLeader(30*time.Second, first.RPCAddr())
	t.Logf("killed %s, the clients' server (leader: %v)", first.Name, wasLeader)

	// Past the longest heartbeat deadline of any node (its TTL plus the
	// 2s heartbeat_grace), a node whose heartbeats went nowhere is down.
	var window time.Duration
	for _, cl := range c.clients {
		self, err := cl.API().Agent().Self()
		must.NoError(t, err)
		ttl, err := time.ParseDuration(self.Stats["client"]["heartbeat_ttl"])
		must.NoError(t, err)
		window = max(window, ttl+2*time.Second+time.Second)
	}
	t.Logf("watching the nodes for %v", window)
	harness.Hold(t, window, "nodes ready and tasks unrestarted after the clients' server died", func() error {
		if err := c.nodesReady(); err != nil {
			return err
		}
		now, err := c.tasks("sleep")
		if err != nil {
			return err
		}
		if !maps.Equal(before, now) {
			return fmt.Errorf("before: %s; now: %s", describe(before), describe(now))
		}
		return nil
	})

	// The clients still report task state: a short task is seen finished.
	short := sleepJob("short", 1)
	short.Type = strPtr("batch")
	short.TaskGroups[0].Tasks[0].Config["args"] = []string{"1"}
	_, _, err := c.servers[2].API().Jobs().Register(short, nil)
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the short batch task reported complete", func() (bool, string) {
		allocs, _, err := c.servers[2].API().Jobs().Allocations("short", false, nil)
		if err != nil {
			return false, err.Error()
		}
		return len(allocs) == 1 && allocs[0].ClientStatus == "complete", fmt.Sprintf("%d allocs: %v", len(allocs), statuses(allocs))
	})
}

func strPtr(s string) *string { return &s }

func statuses(allocs []*nomadapi.AllocationListStub) []string {
	var out []string
	for _, a := range allocs {
		out = append(out, a.ID[:8]+"="+a.ClientStatus)
	}
	return out
}

// stateIDs is every job, allocation, evaluation and node the servers
// know, by ID.
type stateIDs struct {
	Jobs, Allocs, Evals, Nodes []string
}

// stateIDs reads as a user does, without stale: from the leader.
func (c *cluster) stateIDs() stateIDs {
	c.t.Helper()
	api := c.anyServer().API()
	var ids stateIDs
	jobs, _, err := api.Jobs().List(nil)
	must.NoError(c.t, err)
	for _, j := range jobs {
		ids.Jobs = append(ids.Jobs, j.ID)
	}
	allocs, _, err := api.Allocations().List(nil)
	must.NoError(c.t, err)
	for _, a := range allocs {
		ids.Allocs = append(ids.Allocs, a.ID)
	}
	evals, _, err := api.Evaluations().List(nil)
	must.NoError(c.t, err)
	for _, e := range evals {
		ids.Evals = append(ids.Evals, e.ID)
	}
	nodes, _, err := api.Nodes().List(nil)
	must.NoError(c.t, err)
	for _, n := range nodes {
		ids.Nodes = append(ids.Nodes, n.ID)
	}
	for _, s := range [][]string{ids.Jobs, ids.Allocs, ids.Evals, ids.Nodes} {
		slices.Sort(s)
	}
	return ids
}

// All three servers go down together, first stopped with SIGTERM and then
// crashed with kill -9, and come back on their data dirs each time: every
// job, allocation, evaluation and node is back with the same IDs, and the
// clients' tasks never restarted.
func TestCluster_FullRestartKeepsEverything(t *testing.T) {
	c := newCluster(t, clusterOpts{servers: 3, clients: 2})
	c.startServers()
	c.startClients()
	before := c.registerJob(c.follower(), sleepJob("sleep", 2))
	ids := c.stateIDs()
	must.Eq(t, 1, len(ids.Jobs))
	must.Eq(t, 2, len(ids.Allocs))
	must.Eq(t, 2, len(ids.Nodes))
	must.Positive(t, len(ids.Evals))

	for _, how := range []string{"SIGTERM", "kill -9"} {
		for _, s := range c.servers {
			if how == "SIGTERM" {
				s.Stop()
			} else {
				s.Kill9()
			}
		}
		took := c.startServers()
		t.Logf("all three servers stopped with %s and started again: leader after %v", how, took)

		after := c.stateIDs()
		must.Eq(t, ids, after, must.Sprintf("state after %s of every server", how))
		wait.Poll(t, 20*time.Second, "nodes ready after the restart", func() (bool, string) {
			err := c.nodesReady()
			return err == nil, fmt.Sprint(err)
		})
		now, err := c.tasks("sleep")
		must.NoError(t, err)
		mustBeUnrestarted(t, before, now)
	}
	for _, cl := range c.clients {
		must.Eq(t, 1, cl.Starts(), must.Sprintf("%s was never restarted", cl.Name))
		must.True(t, cl.Running())
	}
	// The restarted cluster still schedules.
	c.registerJob(c.follower(), sleepJob("after-restart", 1))
}

// leaderWatch polls every running server's view of the leader and
// records the spans in which none named one.
type leaderWatch struct {
	mu      sync.Mutex
	gaps    []time.Duration
	gapFrom time.Time
	stop    chan struct{}
	done    chan struct{}
}

func (c *cluster) watchLeader() *leaderWatch {
	w := &leaderWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			// A follower names a dead leader until its heartbeat
			// timeout: only a server that names itself leads.
			known := false
			for _, s := range c.servers {
				if s.Leader() == s.RPCAddr() {
					known = true
					break
				}
			}
			w.mu.Lock()
			switch {
			case !known && w.gapFrom.IsZero():
				w.gapFrom = time.Now()
			case known && !w.gapFrom.IsZero():
				w.gaps = append(w.gaps, time.Since(w.gapFrom))
				w.gapFrom = time.Time{}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *leaderWatch) finish() []time.Duration {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.gapFrom.IsZero() {
		w.gaps = append(w.gaps, time.Since(w.gapFrom))
	}
	return w.gaps
}

// The servers are restarted one at a time, followers first and the leader
// last, as an upgrade goes: each is stopped with SIGTERM, started on its
// data dir, and the next waits until it is a raft voter again. Every
// allocation keeps running, unrestarted, the whole time. A leader is known
// throughout but for one election when the old leader stops; with
// leave_on_terminate the leader hands over before it leaves, so not even
// that.
func TestCluster_RollingRestartKeepsLeaderAndAllocations(t *testing.T) {
	t.Run("default", func(t *testing.T) { rollingRestart(t, "", 1) })
	t.Run("leave_on_terminate", func(t *testing.T) { rollingRestart(t, "\nleave_on_terminate = true\n", 0) })
}

func rollingRestart(t *testing.T, serverExtra string, maxGaps int) {
	c := newCluster(t, clusterOpts{servers: 3, clients: 2, serverExtra: serverExtra})
	c.startServers()
	c.startClients()
	before := c.registerJob(c.follower(), sleepJob("sleep", 2))
	c.waitVoters(10 * time.Second)

	leader := c.waitLeader(10*time.Second, "")
	order := []*harness.Agent{}
	for _, s := range c.servers {
		if s != leader {
			order = append(order, s)
		}
	}
	order = append(order, leader)

	watch := c.watchLeader()
	var taskErrs []string
	tasksDone := make(chan struct{})
	stopTasks := make(chan struct{})
	go func() {
		defer close(tasksDone)
		for {
			select {
			case <-stopTasks:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for _, r := range before {
				if !harness.Alive(r.PID) {
					taskErrs = append(taskErrs, fmt.Sprintf("task process %d of %s died", r.PID, r.AllocID[:8]))
				}
			}
		}
	}()

	for _, s := range order {
		start := time.Now()
		s.Stop()
		s.Start()
		leader := c.waitLeader(30*time.Second, "")
		c.waitVoters(30 * time.Second)
		t.Logf("restarted %s: a voter again, following %s, %v after its stop", s.Name, leader.Name, time.Since(start))
		now, err := c.tasks("sleep")
		must.NoError(t, err)
		mustBeUnrestarted(t, before, now)
	}
	gaps := watch.finish()
	close(stopTasks)
	<-tasksDone
	t.Logf("spans with no known leader during the rolling restart: %v", gaps)
	must.SliceEmpty(t, taskErrs)
	// A leader that hands over before it stops (leave_on_terminate) leaves
	// at most a blink (the transfer itself, tens of milliseconds, seen by
	// a 50 ms poll) instead of an election.
	var long []time.Duration
	for _, g := range gaps {
		must.Less(t, 10*time.Second, g, must.Sprintf("an election takes seconds: %v", gaps))
		if g > 500*time.Millisecond {
			long = append(long, g)
		}
	}
	must.LessEq(t, maxGaps, len(long), must.Sprintf("spans without a leader longer than a handover: %v", gaps))
	must.NoError(t, c.nodesReady())
}

// A server whose data dir is lost comes back empty on its old address,
// with a new raft ID. The leader replaces the old entry with the new one
// (raft allows one entry per address), the server receives the state, and
// it counts in a quorum: with the leader killed afterwards, it and the
// third server elect a new one.
func TestCluster_WipedServerRejoins(t *testing.T) {
	c := newCluster(t, clusterOpts{servers: 3})
	c.startServers()
	_, _, err := c.servers[0].API().Jobs().Register(sleepJob("kept", 1), nil)
	must.NoError(t, err)

	wiped := c.follower()
	oldID := serverID(t, wiped)
	wiped.Kill9()
	must.NoError(t, os.RemoveAll(wiped.DataDir))
	wiped.Start()
	newID := serverID(t, wiped)
	must.NotEq(t, oldID, newID)
	wait.Poll(t, 30*time.Second, "the new ID in raft in place of the old", func() (bool, string) {
		cfg, err := c.anyServer().API().Operator().RaftGetConfiguration(nil)
		if err != nil {
			return false, err.Error()
		}
		var ids []string
		for _, s := range cfg.Servers {
			ids = append(ids, s.ID)
		}
		return slices.Contains(ids, newID) && !slices.Contains(ids, oldID),
			fmt.Sprintf("raft IDs %v; old %s, new %s", ids, oldID, newID)
	})
	c.waitVoters(30 * time.Second)

	wait.Poll(t, 10*time.Second, "the wiped server has the job again", func() (bool, string) {
		jobs, _, err := wiped.API().Jobs().List(&nomadapi.QueryOptions{AllowStale: true})
		if err != nil {
			return false, err.Error()
		}
		return len(jobs) == 1 && jobs[0].ID == "kept", fmt.Sprintf("%d jobs", len(jobs))
	})

	old := c.waitLeader(10*time.Second, "")
	old.Kill9()
	leader := c.waitLeader(30*time.Second, old.RPCAddr())
	t.Logf("after the wipe and a leader kill, %s leads", leader.Name)
}

// serverID is the raft ID a server keeps in its data dir.
func serverID(t *testing.T, s *harness.Agent) string {
	t.Helper()
	var id string
	wait.Poll(t, 10*time.Second, s.Name+"'s server ID file", func() (bool, string) {
		buf, err := os.ReadFile(filepath.Join(s.DataDir, "server", "node-id"))
		id = strings.TrimSpace(string(buf))
		return err == nil && id != "", fmt.Sprint(err)
	})
	return id
}

// mockJob is a small job whose task runs in the client process
// (mock_driver), so dozens of them cost no processes.
func mockJob(id string) *nomadapi.Job {
	job := nomadapi.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	tg := nomadapi.NewTaskGroup("g", 1)
	task := nomadapi.NewTask("t", "mock_driver")
	task.SetConfig("run_for", "1h")
	cpu, mem := 10, 10
	task.Require(&nomadapi.Resources{CPU: &cpu, MemoryMB: &mem})
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	return job
}

// Jobs are registered without pause, through the followers, while the
// leader dies with kill -9. Every registration that was acknowledged is
// there afterwards, and each such job runs exactly one allocation: no
// write is lost with the old leader and no evaluation it was working on
// is placed twice by the new one.
func TestCluster_AcknowledgedWritesSurviveLeaderKill(t *testing.T) {
	c := newCluster(t, clusterOpts{servers: 3, clients: 2})
	c.startServers()
	c.startClients()
	old := c.waitLeader(10*time.Second, "")
	var followers []*harness.Agent
	for _, s := range c.servers {
		if s != old {
			followers = append(followers, s)
		}
	}

	var (
		mu      sync.Mutex
		acked   []string
		fails   int
		lastErr error
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("w-%03d", i)
			_, _, err := followers[i%2].API().Jobs().Register(mockJob(id), nil)
			mu.Lock()
			if err == nil {
				acked = append(acked, id)
			} else {
				fails, lastErr = fails+1, err
			}
			mu.Unlock()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	wait.Poll(t, 20*time.Second, "some writes acknowledged", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 10, fmt.Sprintf("%d acknowledged", len(acked))
	})
	old.Kill9()
	c.waitLeader(30*time.Second, old.RPCAddr())
	wait.Poll(t, 20*time.Second, "writes acknowledged by the new leader", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 30, fmt.Sprintf("%d acknowledged", len(acked))
	})
	close(stop)
	<-done
	t.Logf("%d registrations acknowledged, %d refused while there was no leader (last: %v)", len(acked), fails, lastErr)

	api := followers[0].API()
	wait.Poll(t, 30*time.Second, "every acknowledged job with one running allocation", func() (bool, string) {
		jobs, _, err := api.Jobs().List(nil)
		if err != nil {
			return false, err.Error()
		}
		have := map[string]bool{}
		for _, j := range jobs {
			have[j.ID] = true
		}
		allocs, _, err := api.Allocations().List(nil)
		if err != nil {
			return false, err.Error()
		}
		perJob := map[string]int{}
		for _, a := range allocs {
			if a.ClientStatus == "running" && a.DesiredStatus == "run" {
				perJob[a.JobID]++
			}
		}
		for _, id := range acked {
			if !have[id] {
				t.Fatalf("acknowledged job %s is gone after the leader died", id)
			}
			if perJob[id] > 1 {
				t.Fatalf("job %s runs %d allocations, want 1", id, perJob[id])
			}
			if perJob[id] != 1 {
				return false, fmt.Sprintf("job %s has %d running allocations", id, perJob[id])
			}
		}
		return true, ""
	})
}

// The whole site goes down: client agents stopped, servers killed. The
// clients come back first, while no server answers, then the servers.
// Every node is back ready under its ID and every task is the process it
// was, re-attached, never restarted.
func TestCluster_WholeSiteRestartClientsFirst(t *testing.T) {
	c := newCluster(t, clusterOpts{servers: 3, clients: 2})
	c.startServers()
	c.startClients()
	before := c.registerJob(c.follower(), sleepJob("sleep", 2))
	ids := c.stateIDs()

	for _, cl := range c.clients {
		cl.Stop()
	}
	for _, s := range c.servers {
		s.Kill9()
	}
	for _, r := range before {
		must.True(t, harness.Alive(r.PID), must.Sprintf("task %d outlives its client agent", r.PID))
	}
	for _, cl := range c.clients {
		cl.Start()
	}
	wait.Poll(t, 20*time.Second, "the clients retrying their servers", func() (bool, string) {
		n := 0
		for _, cl := range c.clients {
			cl.MustNotHaveDied()
			if strings.Contains(cl.Log(), "will retry") {
				n++
			}
		}
		return n == len(c.clients), fmt.Sprintf("%d of %d clients retrying", n, len(c.clients))
	})
	c.startServers()
	wait.Poll(t, 60*time.Second, "nodes ready again", func() (bool, string) {
		err := c.nodesReady()
		return err == nil, fmt.Sprint(err)
	})
	// Every job, allocation, evaluation and node is back with its ID. The
	// clients' return may add node-update evaluations (a restarted client
	// registers again, initializing then ready): those are new, not lost.
	after := c.stateIDs()
	must.Eq(t, ids.Jobs, after.Jobs)
	must.Eq(t, ids.Allocs, after.Allocs)
	must.Eq(t, ids.Nodes, after.Nodes)
	for _, id := range ids.Evals {
		must.SliceContains(t, after.Evals, id, must.Sprint("an evaluation from before the restart is back"))
	}
	now := c.runningTasks("sleep", 2, 30*time.Second)
	mustBeUnrestarted(t, before, now)
}
