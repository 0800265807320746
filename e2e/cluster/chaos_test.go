package cluster

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

var (
	chaosDuration = flag.Duration("chaos.duration", 0, "run TestChaos for this long (0: skip it)")
	chaosSeed     = flag.Uint64("chaos.seed", 0, "TestChaos's seed (0: a random one, printed)")
	chaosOut      = flag.String("chaos.artifacts", "", "where TestChaos writes its history and porcupine's view of it (empty: a new temporary directory, printed)")
)

// chaosJob is one job of the chaos run and what the checker expects of it.
type chaosJob struct {
	job *nomadapi.Job
	// system: one allocation per ready node instead of count.
	system bool
}

// chaosJobs are jobs with and without windows, with each reconcile
// strategy, service and system.
func chaosJobs() []chaosJob {
	withReconcile := func(id string, count int, window time.Duration, reconcile string) *nomadapi.Job {
		j := edgeJob(id, count, 0)
		j.TaskGroups[0].Disconnect = &nomadapi.DisconnectStrategy{LostAfter: &window, Reconcile: &reconcile}
		return j
	}
	sys := edgeJob("sys", 1, time.Hour)
	sys.Type = new("system")
	sys.TaskGroups[0].Count = nil
	sys.TaskGroups[0].ReschedulePolicy = nil
	sys.TaskGroups[0].Constraints = nil
	return []chaosJob{
		{job: withReconcile("best", 2, time.Hour, "best_score")},
		{job: withReconcile("orig", 1, time.Hour, "keep_original")},
		{job: withReconcile("repl", 1, time.Hour, "keep_replacement")},
		{job: withReconcile("longest", 1, time.Hour, "longest_running")},
		{job: withReconcile("short", 1, 15*time.Second, "best_score")},
		{job: edgeJob("plain", 2, 0)},
		{job: sys, system: true},
	}
}

// chaos is one run's state: what it did, and what it saw of every
// allocation.
type chaos struct {
	t    *testing.T
	nc   *netCluster
	rng  *rand.Rand
	seed uint64
	jobs []chaosJob
	// cuts are the clients cut off now, with their heals.
	cuts map[string]func()
	// down are agents the run stopped, to start again.
	down   map[*harness.Agent]bool
	events []string
	counts map[string]int
	// pids is the task process each allocation ran with when first seen
	// running; seen every allocation ever listed.
	pids   map[string]int
	seen   map[string]bool
	rounds int
	// lastCheck is what the checker last refused, for the failure report.
	lastCheck string
	// w are the API clients working through the run.
	w *workers
	// serverFault heals the one fault between servers in force (an
	// isolation, a one-way drop), nil when none is.
	serverFault func()
	// disk is smallDisk's disk, once mountSmallDisk has mounted it.
	disk *harness.Disk
	// artifacts is where the run keeps its history and samples, once
	// artifactsDir has chosen it.
	artifacts string
	// collects: the servers garbage-collect finished allocations (the
	// soak's settings), so one last seen terminal may leave the state;
	// terminal is whether each allocation was when last listed.
	collects bool
	terminal map[string]bool
	// clocked are the clients with a fault clock (chaos_clock_test.go),
	// their steps drawn from clockRng; roundTouched names what this
	// round's faults hit besides clocks (a client cut or restarted,
	// chaosTouched for the servers), roundStepped the clients whose clock
	// it stepped, and roundStart is when it began.
	clocked      []*harness.Agent
	clockRng     *rand.Rand
	roundTouched map[string]bool
	roundStepped map[string]bool
	roundStart   time.Time
}

// collected says whether an allocation missing from the state may have
// been garbage-collected: the servers collect, and it was finished when
// last listed. Anything else missing is lost.
func (c *chaos) collected(id string) bool { return c.collects && c.terminal[id] }

func (c *chaos) logf(kind, format string, args ...any) {
	c.counts[kind]++
	line := fmt.Sprintf("%s %-14s %s", time.Now().Format("15:04:05.000"), kind, fmt.Sprintf(format, args...))
	c.events = append(c.events, line)
	c.t.Log(line)
}

// The chaos run (`make chaos`; -chaos.duration, -chaos.seed): three
// servers and four clients, each in its own network namespace, seven jobs
// (windows with each reconcile strategy, a short window, none, a system
// job). In rounds, random faults: clients cut by link loss or silent drop
// and healed, the leader killed, servers restarted, client agents killed
// and restarted, the leader isolated from the followers, a minority
// partition, a one-way drop between servers, the leader paused (SIGSTOP)
// past the election timeout and resumed, a server killed with SIGKILL, one
// killed the moment it starts writing a raft snapshot, a follower whose
// disk is full (chaos_disk_test.go), a client's wall clock stepped forward
// or back by minutes or back to the servers' (chaos_clock_test.go).
// Through every round, faults and all, workers (chaos_workers_test.go) call
// random servers: job registers (with and without check-index), scales,
// stops, allocation stops, node drains and eligibility, variable CAS
// writes, reads with and without stale; every call goes into a history
// that history.Check judges at the end (linearizable per key, no
// acknowledged write lost, no read back in time, one leader per term); a
// violation fails the run with the seed and the slice of the history that
// shows it, and porcupine's view of the history is written to
// -chaos.artifacts. After each round everything is healed and started, and
// the checker asserts, once the cluster settles: exactly count allocations
// running per group (one per node for the system job); nothing unknown;
// no task of a running allocation restarted or given a new process; no
// allocation missing from the state; no evaluation pending past its time;
// every server answering with one leader; no agent panicked; every task
// time the servers record on their clock; a client whose only fault in
// the round was its clock missed no heartbeat. On a failure
// it prints the seed, the event log and the cluster's state.
func TestChaos(t *testing.T) {
	if *chaosDuration == 0 {
		t.Skip("chaos run: give -chaos.duration (make chaos)")
	}
	seed := pickSeed(*chaosSeed)
	t.Logf("chaos seed %d, duration %v (run again with -chaos.seed=%d)", seed, *chaosDuration, seed)
	c := newChaos(t, seed, chaosRaftSettings)
	c.useFaultClocks()
	c.mountSmallDisk()
	c.nc.startAll()
	c.registerJobs()

	end := time.Now().Add(*chaosDuration)
	for time.Now().Before(end) {
		c.rounds++
		c.startRound()
		c.w.start()
		c.round()
		c.settle()
		c.checkClockRound()
	}
	c.checkHistory()
	t.Logf("chaos seed %d: %d rounds, events %v", seed, c.rounds, c.counts)
}

// pickSeed is the seed a run was given, or a random one (0: none given).
func pickSeed(given uint64) uint64 {
	if given == 0 {
		return rand.Uint64()
	}
	return given
}

// newChaos builds a run's cluster (three servers with serverSettings in
// their server block, four clients) and state, starting nothing, and has
// a failed run print its seed, events and state as its last lines.
func newChaos(t *testing.T, seed uint64, serverSettings string) *chaos {
	// Registered before the cluster's cleanup, so it runs after it: the
	// seed, the reason and the events are the last lines of a failed run.
	var summary string
	t.Cleanup(func() {
		if summary != "" {
			t.Log(summary)
		}
	})
	nc := newNetClusterWith(t, 3, 4, serverSettings)
	c := &chaos{
		t: t, nc: nc, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x6e6f6d6164)),
		jobs: chaosJobs(), cuts: map[string]func(){}, down: map[*harness.Agent]bool{},
		counts: map[string]int{}, pids: map[string]int{}, seen: map[string]bool{}, terminal: map[string]bool{},
		roundTouched: map[string]bool{}, roundStepped: map[string]bool{},
		clockRng: rand.New(rand.NewPCG(seed, 0x636c6f636b)),
	}
	t.Cleanup(func() {
		if t.Failed() {
			// A run that failed before its end is judged on what it
			// recorded: a violation may be why it failed.
			if c.w != nil && c.rounds > 0 && !strings.Contains(c.lastCheck, "the history shows") {
				c.w.pause()
				if v := c.judgeHistory(); v != "" {
					c.lastCheck += "\n" + v
				}
			}
			summary = fmt.Sprintf("seed %d failed in round %d; events:\n%s\nstate:\n%s\nlast check: %s",
				seed, c.rounds, strings.Join(c.events, "\n"), c.state(), c.lastCheck)
		}
	})
	return c
}

// registerJobs registers the run's jobs, starts its workers (paused) and
// settles.
func (c *chaos) registerJobs() {
	c.t.Helper()
	api := c.nc.anyServer().API()
	for _, j := range c.jobs {
		if _, _, err := api.Jobs().Register(j.job, nil); err != nil {
			c.t.Fatalf("registering %s: %v", *j.job.ID, err)
		}
	}
	c.w = newWorkers(c)
	c.t.Cleanup(func() { c.w.pause() })
	c.settle()
}

// fatalf fails the run, keeping the reason for the summary printed last.
func (c *chaos) fatalf(format string, args ...any) {
	c.t.Helper()
	c.lastCheck = fmt.Sprintf(format, args...)
	c.t.Fatal(c.lastCheck)
}

// round injects three to six faults with random pauses between them.
func (c *chaos) round() {
	for range 3 + c.rng.IntN(4) {
		c.fault()
		time.Sleep(time.Duration(1000+c.rng.IntN(7000)) * time.Millisecond) // the faults' duration, not a wait for logic
	}
}

func (c *chaos) fault() {
	c.maybeStepClock()
	k := c.rng.IntN(18)
	if k >= 6 && k != 8 && k != 9 {
		// A fault of the servers': a node's heartbeat missed in this
		// round may be theirs (checkClockRound).
		c.roundTouched[chaosTouched] = true
	}
	switch {
	case k < 4:
		c.cutOne()
	case k < 6:
		c.healOne()
	case k < 7:
		c.killLeader()
	case k < 8:
		c.restartServer()
	case k < 10:
		c.restartClient()
	case k < 11:
		c.isolateLeader()
	case k < 12:
		c.minorityPartition()
	case k < 13:
		c.oneWayDrop()
	case k < 14:
		c.pauseLeader()
	case k < 15:
		c.kill9Server()
	case k < 16:
		c.kill9Snapshot()
	case k < 17:
		c.diskFault()
	default:
		c.healServers()
	}
}

func (c *chaos) cutOne() {
	if len(c.cuts) >= 2 { // two of four: room for replacements
		c.healOne()
		return
	}
	var free []string
	for _, cl := range c.nc.clients {
		if c.cuts[cl.Name] == nil {
			free = append(free, cl.Name)
		}
	}
	name := free[c.rng.IntN(len(free))]
	mode := []harness.Fault{harness.LinkDown, harness.SilentDrop}[c.rng.IntN(2)]
	c.cuts[name] = c.nc.fab.Apply(name, mode)
	c.roundTouched[name] = true
	c.logf("cut", "%s (%s)", name, mode.Name)
}

func (c *chaos) healOne() {
	names := sortedKeys(c.cuts)
	if len(names) == 0 {
		return
	}
	name := names[c.rng.IntN(len(names))]
	c.cuts[name]()
	delete(c.cuts, name)
	c.logf("heal", "%s", name)
}

func (c *chaos) serversDown() int {
	n := 0
	for _, s := range c.nc.servers {
		if c.down[s] {
			n++
		}
	}
	return n
}

// startDown starts what the run stopped.
func (c *chaos) startDown() {
	for a := range c.down {
		a.Start()
		delete(c.down, a)
		c.logf("start", "%s", a.Name)
	}
}

func (c *chaos) killLeader() {
	if c.serversDown() > 0 { // keep a quorum
		c.startDown()
		return
	}
	for _, s := range c.nc.servers {
		if s.Running() && s.Leader() == s.RPCAddr() {
			s.Kill9()
			c.down[s] = true
			c.logf("kill-leader", "%s", s.Name)
			return
		}
	}
}

func (c *chaos) restartServer() {
	if c.serversDown() > 0 {
		c.startDown()
		return
	}
	// A graceful stop leaves the raft cluster, which needs a quorum.
	c.healServers()
	s := c.nc.servers[c.rng.IntN(len(c.nc.servers))]
	began := time.Now()
	s.Stop()
	s.Start()
	c.logf("restart-server", "%s (stopped in %v)", s.Name, time.Since(began).Round(time.Millisecond))
}

func (c *chaos) restartClient() {
	cl := c.nc.clients[c.rng.IntN(len(c.nc.clients))]
	c.roundTouched[cl.Name] = true
	cl.Kill9()
	time.Sleep(time.Duration(500+c.rng.IntN(2500)) * time.Millisecond) // the agent's downtime
	cl.Start()
	c.logf("restart-client", "%s (cut off: %v)", cl.Name, c.cuts[cl.Name] != nil)
}

// settle heals every cut, starts every agent, and waits for the checker
// to pass.
func (c *chaos) settle() {
	c.t.Helper()
	c.w.pause()
	c.healServers()
	for _, name := range sortedKeys(c.cuts) {
		c.cuts[name]()
		delete(c.cuts, name)
		c.logf("heal", "%s", name)
	}
	c.startDown()
	c.w.settle()
	took := wait.Poll(c.t, 2*time.Minute, fmt.Sprintf("round %d settles with every invariant holding (seed %d)", c.rounds, c.seed), func() (bool, string) {
		if err := c.check(); err != nil {
			c.lastCheck = err.Error()
			return false, err.Error()
		}
		return true, ""
	})
	c.w.h.Settle()
	c.w.finalReads()
	c.logf("settled", "round %d in %v", c.rounds, took.Round(time.Millisecond))
	if err := c.checkLogs(); err != nil {
		c.fatalf("%v", err)
	}
}

// check is the invariants of a settled cluster. The process-identity
// invariant is checked at every call, settled or not: a running
// allocation's process never changes.
func (c *chaos) check() error {
	for _, s := range c.nc.servers {
		if !s.Running() {
			return fmt.Errorf("%s is not running (exit %d)", s.Name, s.ExitCode())
		}
	}
	leaders := map[string]bool{}
	for _, s := range c.nc.servers {
		leaders[s.Leader()] = true
	}
	if len(leaders) != 1 || leaders[""] {
		return fmt.Errorf("servers disagree on the leader: %v", sortedKeys(leaders))
	}
	if err := c.nc.nodesReady(); err != nil {
		return err
	}
	api := c.nc.anyServer().API()
	for _, j := range c.jobs {
		if err := c.checkJob(j); err != nil {
			return err
		}
	}
	all, _, err := api.Allocations().List(nil)
	if err != nil {
		return err
	}
	c.checkTaskTimes(all)
	have := map[string]string{}
	for _, a := range all {
		have[a.ID] = a.DesiredStatus
		c.terminal[a.ID] = a.DesiredStatus != "run" || a.ClientStatus == "complete" || a.ClientStatus == "failed" || a.ClientStatus == "lost"
	}
	if err := c.w.checkSettled(have); err != nil {
		return err
	}
	for id := range c.seen {
		if _, ok := have[id]; !ok {
			if c.collected(id) {
				delete(c.seen, id)
				continue
			}
			c.fatalf("allocation %s is missing from the state", id)
		}
	}
	return c.checkEvals(api)
}

func (c *chaos) checkJob(j chaosJob) error {
	as, err := c.nc.allocs(*j.job.ID)
	if err != nil {
		return err
	}
	want := 0
	if j.job.TaskGroups[0].Count != nil {
		want = *j.job.TaskGroups[0].Count
	}
	if j.system {
		want = len(c.nc.clients)
	}
	for _, a := range as {
		c.seen[a.ID] = true
		if a.Client == "unknown" {
			return fmt.Errorf("%s: %s is unknown on a ready node", *j.job.ID, a)
		}
		if a.Desired != "run" || a.Client != "running" || a.PID == 0 {
			continue
		}
		if first, ok := c.pids[a.ID]; !ok {
			c.pids[a.ID] = a.PID
		} else if first != a.PID || a.Restarts != 0 {
			c.fatalf("%s: %s restarted: first ran as pid %d", *j.job.ID, a, first)
		}
	}
	if n := len(running(as)); n != want {
		return fmt.Errorf("%s: %d allocations running, want %d: %s", *j.job.ID, n, want, describeAllocs(as))
	}
	return nil
}

// checkEvals fails on an evaluation still pending a minute after it was
// created and past its WaitUntil.
func (c *chaos) checkEvals(api *nomadapi.Client) error {
	evals, _, err := api.Evaluations().List(nil)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, e := range evals {
		if e.Status != "pending" {
			continue
		}
		created := time.Unix(0, e.CreateTime)
		if now.Sub(created) > time.Minute && now.After(e.WaitUntil.Add(time.Minute)) {
			return fmt.Errorf("eval %s (%s of %s) pending since %s", e.ID[:8], e.TriggeredBy, e.JobID, created.Format(time.TimeOnly))
		}
	}
	return nil
}

// checkLogs fails when any agent's log shows a panic.
func (c *chaos) checkLogs() error {
	for _, a := range c.nc.agents.All() {
		log := a.Log()
		for _, bad := range []string{"panic:", "fatal error:", "[PANIC]"} {
			if i := strings.Index(log, bad); i >= 0 {
				return fmt.Errorf("%s's log shows %q:\n%s", a.Name, bad, log[max(0, i-500):min(len(log), i+3000)])
			}
		}
	}
	return nil
}

// state describes nodes and allocations for a failure report.
func (c *chaos) state() string {
	var b strings.Builder
	api := c.nc.anyServer().API()
	if nodes, _, err := api.Nodes().List(nil); err == nil {
		for _, n := range nodes {
			fmt.Fprintf(&b, "node %s %s %s\n", n.ID[:8], n.Name, n.Status)
		}
	}
	for _, j := range c.jobs {
		as, err := c.nc.allocs(*j.job.ID)
		fmt.Fprintf(&b, "job %s: %s %v\n", *j.job.ID, describeAllocs(as), err)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
