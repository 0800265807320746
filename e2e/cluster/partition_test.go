package cluster

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// The partition scenarios: three server processes and a few clients, each
// agent in its own network namespace on a private bridge, links cut for
// real ("Partition scenarios" in website/content/docs/testing.md). Each
// asserts what the servers report through the HTTP API and what the
// process table shows: a task that resumes after a reconnect keeps its
// PID.

// edgeJob is a raw_exec sleep job: count tasks on distinct nodes among
// those named in on, with a disconnect window (0: none, as before the
// feature).
func edgeJob(id string, count int, window time.Duration, on ...string) *nomadapi.Job {
	job := sleepJob(id, count)
	tg := job.TaskGroups[0]
	if window > 0 {
		tg.Disconnect = &nomadapi.DisconnectStrategy{LostAfter: &window}
	}
	if len(on) > 0 {
		tg.Constrain(&nomadapi.Constraint{LTarget: "${node.unique.name}", Operand: "regexp", RTarget: "^(" + strings.Join(on, "|") + ")$"})
	}
	// Replacements are placed a second after an allocation goes unknown or
	// lost, not after the service default of 30 s.
	delay := time.Second
	tg.ReschedulePolicy = &nomadapi.ReschedulePolicy{Delay: &delay, DelayFunction: new("constant"), Unlimited: new(true)}
	return job
}

// allocView is an allocation as the servers and the process table see it.
type allocView struct {
	ID, Node, Desired, Client string
	PID                       int // 0: no task process
	Restarts                  uint64
}

func (a allocView) String() string {
	return fmt.Sprintf("%s@%s %s/%s pid %d restarts %d", a.ID[:8], a.Node, a.Desired, a.Client, a.PID, a.Restarts)
}

func describeAllocs(as []allocView) string {
	var s []string
	for _, a := range as {
		s = append(s, a.String())
	}
	return strings.Join(s, "; ")
}

// allocs lists the job's allocations, sorted by creation, with the node
// names and each one's task process.
func (nc *netCluster) allocs(jobID string) ([]allocView, error) {
	api := nc.anyServer().API()
	list, _, err := api.Jobs().Allocations(jobID, true, nil)
	if err != nil {
		return nil, err
	}
	sort.Slice(list, func(i, j int) bool { return list[i].CreateIndex < list[j].CreateIndex })
	var out []allocView
	for _, a := range list {
		v := allocView{ID: a.ID, Node: a.NodeName, Desired: a.DesiredStatus, Client: a.ClientStatus}
		if ts := a.TaskStates["sleep"]; ts != nil {
			v.Restarts = ts.Restarts
		}
		if pids := harness.AllocPIDs(a.ID); len(pids) == 1 {
			v.PID = pids[0]
		} else if len(pids) > 1 {
			return nil, fmt.Errorf("alloc %s has task processes %v, want at most one", a.ID[:8], pids)
		}
		out = append(out, v)
	}
	return out, nil
}

// waitAllocs polls until cond holds for the job's allocations and returns
// them.
func (nc *netCluster) waitAllocs(jobID, what string, timeout time.Duration, cond func([]allocView) bool) []allocView {
	nc.t.Helper()
	var got []allocView
	wait.Poll(nc.t, timeout, what, func() (bool, string) {
		var err error
		if got, err = nc.allocs(jobID); err != nil {
			return false, err.Error()
		}
		return cond(got), describeAllocs(got)
	})
	return got
}

// nodeStatus is the servers' view of the named client's node.
func (nc *netCluster) nodeStatus(name string) string {
	nodes, _, err := nc.anyServer().API().Nodes().List(nil)
	if err != nil {
		return err.Error()
	}
	for _, n := range nodes {
		if n.Name == name {
			return n.Status
		}
	}
	return "absent"
}

func (nc *netCluster) waitNode(name, status string, timeout time.Duration) {
	nc.t.Helper()
	wait.Poll(nc.t, timeout, fmt.Sprintf("node %s %s", name, status), func() (bool, string) {
		s := nc.nodeStatus(name)
		return s == status, "node " + name + " is " + s
	})
}

// start starts every server and client and waits for a leader and every
// node ready.
func (nc *netCluster) startAll() {
	nc.t.Helper()
	nc.startServers()
	nc.startClients()
}

func (nc *netCluster) run(job *nomadapi.Job) []allocView {
	nc.t.Helper()
	_, _, err := nc.anyServer().API().Jobs().Register(job, nil)
	must.NoError(nc.t, err)
	count := *job.TaskGroups[0].Count
	return nc.waitAllocs(*job.ID, fmt.Sprintf("%d allocations of %s running", count, *job.ID), settle, func(as []allocView) bool {
		return len(running(as)) == count && len(as) == count
	})
}

func (nc *netCluster) client(name string) *harness.Agent {
	for _, c := range nc.clients {
		if c.Name == name {
			return c
		}
	}
	nc.t.Fatalf("no client %s", name)
	return nil
}

// running is the allocations running with a live task process.
func running(as []allocView) []allocView {
	var out []allocView
	for _, a := range as {
		if a.Desired == "run" && a.Client == "running" && a.PID != 0 {
			out = append(out, a)
		}
	}
	return out
}

func find(as []allocView, id string) allocView {
	for _, a := range as {
		if a.ID == id {
			return a
		}
	}
	return allocView{ID: id + "--------", Client: "absent"}
}

// mustResume checks that the allocation runs again as it did before the
// cut: same allocation, same process, no restart.
func mustResume(t *testing.T, before allocView, as []allocView) {
	t.Helper()
	now := find(as, before.ID)
	must.Eq(t, "running", now.Client, must.Sprintf("%s after the heal; all: %s", before.ID[:8], describeAllocs(as)))
	must.Eq(t, before.PID, now.PID, must.Sprint("the task kept its process"))
	must.True(t, harness.Alive(before.PID))
	must.Eq(t, uint64(0), now.Restarts)
}

// Seed case one, on each way a link fails: one client runs the only
// allocation a group with a window can have (no other node fits). Cut
// off, its node is disconnected and the allocation unknown, nothing else
// placed; healed, the same allocation runs on with the same process.
func TestPartition_OneClientResumes(t *testing.T) {
	for _, mode := range []harness.Fault{harness.LinkDown, harness.SilentDrop} {
		t.Run(strings.ReplaceAll(mode.Name, " ", "_"), func(t *testing.T) {
			nc := newNetCluster(t, 3, 1)
			nc.startAll()
			before := nc.run(edgeJob("edge", 1, time.Hour, "client-1"))[0]

			heal := nc.fab.Apply("client-1", mode)
			nc.waitNode("client-1", "disconnected", settle)
			nc.waitAllocs("edge", "the allocation unknown, nothing placed", settle, func(as []allocView) bool {
				return len(as) == 1 && as[0].Client == "unknown" && as[0].Desired == "run"
			})
			must.True(t, harness.Alive(before.PID), must.Sprint("the task runs on while its node is cut off"))

			heal()
			nc.waitNode("client-1", "ready", settle)
			after := nc.waitAllocs("edge", "the allocation running again", settle, func(as []allocView) bool {
				return len(as) == 1 && len(running(as)) == 1
			})
			mustResume(t, before, after)
		})
	}
}

// Seed case two: two clients, one allocation. The cut node's allocation
// goes unknown and a replacement runs on the other; on the heal exactly
// one copy is kept and the other stopped, its process gone. The winner
// never restarted.
func TestPartition_TwoClientsOneKept(t *testing.T) {
	nc := newNetCluster(t, 3, 2)
	nc.startAll()
	orig := nc.run(edgeJob("edge", 1, time.Hour))[0]
	other := "client-1"
	if orig.Node == "client-1" {
		other = "client-2"
	}

	heal := nc.fab.Apply(orig.Node, harness.LinkDown)
	nc.waitNode(orig.Node, "disconnected", settle)
	as := nc.waitAllocs("edge", "a replacement running beside the unknown original", settle, func(as []allocView) bool {
		r := running(as)
		return len(as) == 2 && find(as, orig.ID).Client == "unknown" && len(r) == 1 && r[0].Node == other
	})
	repl := running(as)[0]

	heal()
	nc.waitNode(orig.Node, "ready", settle)
	final := nc.waitAllocs("edge", "one copy kept, the other stopped with its process", settle, func(as []allocView) bool {
		r := running(as)
		if len(as) != 2 || len(r) != 1 {
			return false
		}
		loser := find(as, orig.ID)
		if r[0].ID == orig.ID {
			loser = find(as, repl.ID)
		}
		return loser.Desired == "stop" && loser.PID == 0
	})
	winner := running(final)[0]
	want := orig
	if winner.ID == repl.ID {
		want = repl
	}
	t.Logf("kept %s (original %s, replacement %s)", winner, orig.ID[:8], repl.ID[:8])
	mustResume(t, want, final)
}

// A job without a window behaves as before the feature: the node goes
// down, the allocation lost and replaced; on the heal the original's task
// is killed and its client's final report, complete, is recorded over lost.
func TestPartition_NoWindowLostAndReplaced(t *testing.T) {
	nc := newNetCluster(t, 3, 2)
	nc.startAll()
	orig := nc.run(edgeJob("plain", 1, 0))[0]

	heal := nc.fab.Apply(orig.Node, harness.LinkDown)
	nc.waitNode(orig.Node, "down", settle)
	nc.waitAllocs("plain", "original lost, replacement running", settle, func(as []allocView) bool {
		return len(as) == 2 && find(as, orig.ID).Client == "lost" && len(running(as)) == 1
	})

	heal()
	nc.waitNode(orig.Node, "ready", settle)
	nc.waitAllocs("plain", "the original's task killed and reported complete", settle, func(as []allocView) bool {
		return find(as, orig.ID).PID == 0 && find(as, orig.ID).Client == "complete" && len(running(as)) == 1
	})
}

// The window runs out while the node is cut off: the allocation goes from
// unknown to lost and is replaced; on the heal the original is killed and
// reported complete.
func TestPartition_WindowExpires(t *testing.T) {
	nc := newNetCluster(t, 3, 2)
	nc.startAll()
	orig := nc.run(edgeJob("short", 1, 5*time.Second))[0]

	heal := nc.fab.Apply(orig.Node, harness.LinkDown)
	nc.waitAllocs("short", "the original unknown first", settle, func(as []allocView) bool {
		return find(as, orig.ID).Client == "unknown"
	})
	nc.waitAllocs("short", "after the window: original lost, replacement running", settle, func(as []allocView) bool {
		return find(as, orig.ID).Client == "lost" && len(running(as)) == 1
	})

	heal()
	nc.waitNode(orig.Node, "ready", settle)
	nc.waitAllocs("short", "the original's task killed on its return", settle, func(as []allocView) bool {
		return find(as, orig.ID).PID == 0 && find(as, orig.ID).Client == "complete" && len(running(as)) == 1
	})
}

// A group of two over three clients: only the cut node's allocation
// changes; the other keeps running untouched throughout.
func TestPartition_OnlyTheCutNodesAllocationChanges(t *testing.T) {
	nc := newNetCluster(t, 3, 3)
	nc.startAll()
	before := nc.run(edgeJob("pair", 2, time.Hour))
	cutOff, untouched := before[0], before[1]

	heal := nc.fab.Apply(cutOff.Node, harness.SilentDrop)
	nc.waitAllocs("pair", "cut allocation unknown, a replacement on the third node", settle, func(as []allocView) bool {
		return len(as) == 3 && find(as, cutOff.ID).Client == "unknown" && len(running(as)) == 2
	})
	heal()
	final := nc.waitAllocs("pair", "two running, one stopped", settle, func(as []allocView) bool {
		return len(running(as)) == 2 && len(as) == 3
	})
	mustResume(t, untouched, final)
}

// A degraded link (delay with jitter and loss, as a bad LTE cell) that
// still carries heartbeats changes nothing; when it then drops the node
// goes disconnected, and on the heal the task resumes.
func TestPartition_DegradedThenDropped(t *testing.T) {
	nc := newNetCluster(t, 3, 1)
	nc.startAll()
	before := nc.run(edgeJob("lte", 1, time.Hour, "client-1"))[0]

	restore := nc.fab.Apply("client-1", harness.Degraded)
	harness.Hold(t, 8*time.Second, "a slow, lossy link keeps the node ready", func() error {
		if s := nc.nodeStatus("client-1"); s != "ready" {
			return fmt.Errorf("node is %s", s)
		}
		return nil
	})
	heal := nc.fab.Apply("client-1", harness.LinkDown)
	nc.waitNode("client-1", "disconnected", settle)
	restore()
	heal()
	nc.waitNode("client-1", "ready", settle)
	mustResume(t, before, nc.waitAllocs("lte", "running again", settle, func(as []allocView) bool { return len(running(as)) == 1 }))
}

// The leader is killed while a client is cut off: the new leader keeps
// the allocation unknown, and on the heal it resumes.
func TestPartition_LeaderKilledWhileDisconnected(t *testing.T) {
	nc := newNetCluster(t, 3, 1)
	nc.startAll()
	before := nc.run(edgeJob("edge", 1, time.Hour, "client-1"))[0]

	heal := nc.fab.Apply("client-1", harness.LinkDown)
	nc.waitAllocs("edge", "unknown", settle, func(as []allocView) bool { return as[0].Client == "unknown" })
	old := nc.waitLeader(settle, "")
	old.Kill9()
	nc.waitLeader(settle, old.RPCAddr())
	must.Eq(t, "disconnected", nc.nodeStatus("client-1"))

	heal()
	nc.waitNode("client-1", "ready", settle)
	mustResume(t, before, nc.waitAllocs("edge", "running again", settle, func(as []allocView) bool { return len(running(as)) == 1 }))
}

// Every server is restarted while a client is cut off: the state comes
// back from disk, the allocation is still unknown, and it resumes.
func TestPartition_AllServersRestartedWhileDisconnected(t *testing.T) {
	nc := newNetCluster(t, 3, 1)
	nc.startAll()
	before := nc.run(edgeJob("edge", 1, time.Hour, "client-1"))[0]

	heal := nc.fab.Apply("client-1", harness.LinkDown)
	nc.waitAllocs("edge", "unknown", settle, func(as []allocView) bool { return as[0].Client == "unknown" })
	for _, s := range nc.servers {
		s.Stop()
	}
	for _, s := range nc.servers {
		s.Start()
	}
	nc.waitLeader(settle, "")
	nc.waitAllocs("edge", "still unknown after the restart", settle, func(as []allocView) bool { return as[0].Client == "unknown" })

	heal()
	nc.waitNode("client-1", "ready", settle)
	mustResume(t, before, nc.waitAllocs("edge", "running again", settle, func(as []allocView) bool { return len(running(as)) == 1 }))
}

// The client agent itself is killed and started again while cut off (the
// task survives the agent): the new agent re-attaches to the task and, on
// the heal, the allocation resumes with the same process.
func TestPartition_ClientRestartedWhileDisconnected(t *testing.T) {
	nc := newNetCluster(t, 3, 1)
	nc.startAll()
	before := nc.run(edgeJob("edge", 1, time.Hour, "client-1"))[0]

	heal := nc.fab.Apply("client-1", harness.LinkDown)
	nc.waitAllocs("edge", "unknown", settle, func(as []allocView) bool { return as[0].Client == "unknown" })
	cl := nc.client("client-1")
	cl.Kill9()
	must.True(t, harness.Alive(before.PID), must.Sprint("the task outlives its agent"))
	cl.Start()

	heal()
	nc.waitNode("client-1", "ready", settle)
	mustResume(t, before, nc.waitAllocs("edge", "running again", settle, func(as []allocView) bool { return len(running(as)) == 1 }))
	must.Eq(t, 2, cl.Starts())
}

// `job stop` and `alloc stop` while the node is cut off: what the servers
// decided is done when the client returns.
func TestPartition_StopsWhileDisconnected(t *testing.T) {
	nc := newNetCluster(t, 3, 1)
	nc.startAll()
	api := nc.anyServer().API()
	j := nc.run(edgeJob("gone", 1, time.Hour, "client-1"))[0]
	a := nc.run(edgeJob("moved", 1, time.Hour, "client-1"))[0]

	heal := nc.fab.Apply("client-1", harness.LinkDown)
	nc.waitNode("client-1", "disconnected", settle)
	_, _, err := api.Jobs().Deregister("gone", false, nil)
	must.NoError(t, err)
	_, err = api.Allocations().Stop(&nomadapi.Allocation{ID: a.ID}, nil)
	must.NoError(t, err)

	heal()
	nc.waitNode("client-1", "ready", settle)
	nc.waitAllocs("gone", "the stopped job's task killed", settle, func(as []allocView) bool {
		return len(as) == 1 && as[0].PID == 0 && as[0].Desired == "stop"
	})
	nc.waitAllocs("moved", "the stopped allocation's task killed and a replacement running", settle, func(as []allocView) bool {
		return find(as, a.ID).PID == 0 && len(running(as)) == 1
	})
	must.True(t, !harness.Alive(j.PID) && !harness.Alive(a.PID))
}

// A replacement whose own node then drops: the original on client-1 is
// replaced on client-2, client-2 is cut off too and a third copy runs on
// client-3. When both return, exactly one copy runs and the others are
// stopped with their processes gone.
func TestPartition_ReplacementsNodeAlsoDrops(t *testing.T) {
	nc := newNetCluster(t, 3, 3)
	nc.startAll()
	orig := nc.run(edgeJob("chain", 1, time.Hour))[0]

	heal1 := nc.fab.Apply(orig.Node, harness.LinkDown)
	as := nc.waitAllocs("chain", "a first replacement", settle, func(as []allocView) bool {
		return len(as) == 2 && len(running(as)) == 1
	})
	first := running(as)[0]
	heal2 := nc.fab.Apply(first.Node, harness.SilentDrop)
	nc.waitAllocs("chain", "a second replacement", settle, func(as []allocView) bool {
		return len(as) == 3 && len(running(as)) == 1 && find(as, first.ID).Client == "unknown"
	})

	heal1()
	heal2()
	final := nc.waitAllocs("chain", "one copy running, the others stopped with their processes", settle, func(as []allocView) bool {
		if len(running(as)) != 1 || len(as) != 3 {
			return false
		}
		for _, a := range as {
			if a.Desired == "run" && a.Client != "running" || a.Desired != "run" && a.PID != 0 {
				return false
			}
		}
		return true
	})
	t.Logf("kept %s", running(final)[0])
}

// A flapping link, down and up every two seconds for a minute
// (NOMAD_E2E_FLAP_SECONDS): whatever the servers saw in between, the end
// is the same allocation running with the same process.
func TestPartition_FlappingLink(t *testing.T) {
	nc := newNetCluster(t, 3, 1)
	nc.startAll()
	before := nc.run(edgeJob("flap", 1, time.Hour, "client-1"))[0]

	end := time.Now().Add(time.Duration(harness.EnvInt(t, "NOMAD_E2E_FLAP_SECONDS", 60)) * time.Second)
	var statuses []string
	for time.Now().Before(end) {
		heal := nc.fab.Apply("client-1", harness.LinkDown)
		time.Sleep(2 * time.Second) // the outage itself
		statuses = append(statuses, nc.nodeStatus("client-1"))
		heal()
		time.Sleep(2 * time.Second)
		statuses = append(statuses, nc.nodeStatus("client-1"))
	}
	t.Logf("node status after each flap: %v", slices.Compact(statuses))
	nc.waitNode("client-1", "ready", settle)
	mustResume(t, before, nc.waitAllocs("flap", "running", settle, func(as []allocView) bool {
		return len(as) == 1 && len(running(as)) == 1
	}))
}

func (nc *netCluster) nodeID(name string) string {
	nc.t.Helper()
	nodes, _, err := nc.anyServer().API().Nodes().List(nil)
	must.NoError(nc.t, err)
	for _, n := range nodes {
		if n.Name == name {
			return n.ID
		}
	}
	nc.t.Fatalf("no node %s", name)
	return ""
}

// A system job's allocation on a cut-off node goes unknown and is never
// placed elsewhere (the other node has its own); on the heal it resumes.
func TestPartition_SystemJob(t *testing.T) {
	nc := newNetCluster(t, 3, 2)
	nc.startAll()
	job := edgeJob("agent", 1, time.Hour)
	job.Type = new("system")
	job.TaskGroups[0].Count = nil
	job.TaskGroups[0].ReschedulePolicy = nil
	job.TaskGroups[0].Constraints = nil
	_, _, err := nc.anyServer().API().Jobs().Register(job, nil)
	must.NoError(t, err)
	as := nc.waitAllocs("agent", "one allocation per node", settle, func(as []allocView) bool {
		return len(as) == 2 && len(running(as)) == 2
	})
	cutOff, other := as[0], as[1]

	heal := nc.fab.Apply(cutOff.Node, harness.LinkDown)
	nc.waitNode(cutOff.Node, "disconnected", settle)
	nc.waitAllocs("agent", "the cut node's allocation unknown", settle, func(as []allocView) bool {
		return len(as) == 2 && find(as, cutOff.ID).Client == "unknown"
	})
	harness.Hold(t, 3*time.Second, "nothing placed elsewhere", func() error {
		as, err := nc.allocs("agent")
		if err == nil && len(as) != 2 {
			err = fmt.Errorf("%d allocations: %s", len(as), describeAllocs(as))
		}
		return err
	})
	heal()
	nc.waitNode(cutOff.Node, "ready", settle)
	final := nc.waitAllocs("agent", "both running", settle, func(as []allocView) bool { return len(running(as)) == 2 && len(as) == 2 })
	mustResume(t, cutOff, final)
	mustResume(t, other, final)
}

// A drain of a disconnected node is accepted: its unknown allocation is
// stopped and replaced on the other node, and the drain completes when
// the node returns (its task then killed).
func TestPartition_DrainDisconnectedNode(t *testing.T) {
	nc := newNetCluster(t, 3, 2)
	nc.startAll()
	job := edgeJob("drained", 1, time.Hour)
	job.TaskGroups[0].ReschedulePolicy = nil // the drain, not a reschedule, moves it
	orig := nc.run(job)[0]

	heal := nc.fab.Apply(orig.Node, harness.LinkDown)
	nc.waitNode(orig.Node, "disconnected", settle)
	id := nc.nodeID(orig.Node)
	api := nc.anyServer().API()
	_, err := api.Nodes().UpdateDrain(id, &nomadapi.DrainSpec{Deadline: time.Minute}, false, nil)
	must.NoError(t, err)
	nc.waitAllocs("drained", "the unknown allocation migrated", settle, func(as []allocView) bool {
		r := running(as)
		return len(as) == 2 && find(as, orig.ID).Desired == "stop" && len(r) == 1 && r[0].Node != orig.Node
	})

	heal()
	nc.waitNode(orig.Node, "ready", settle)
	nc.waitAllocs("drained", "the original's task killed on its return", settle, func(as []allocView) bool {
		return find(as, orig.ID).PID == 0 && len(running(as)) == 1
	})
	wait.Poll(t, settle, "the drain complete", func() (bool, string) {
		n, _, err := api.Nodes().Info(id, nil)
		if err != nil {
			return false, err.Error()
		}
		return n.DrainStrategy == nil, fmt.Sprintf("drain strategy %+v", n.DrainStrategy)
	})
}

// partitionTimes is one cut and heal as the servers reported it, each
// from the moment the link failed or worked again.
type partitionTimes struct {
	disconnected, unknown, replaced time.Duration // from the cut
	ready, running                  time.Duration // from the heal
}

// measureCut cuts the node running the job's one kept allocation, and
// polls the HTTP API (every wait.PollInterval) until the node is disconnected, the
// allocation unknown and its replacement running; then heals and polls
// until the node is ready and one allocation runs with no other left
// desired to run.
func (nc *netCluster) measureCut(jobID string, mode harness.Fault) partitionTimes {
	nc.t.Helper()
	as, err := nc.allocs(jobID)
	must.NoError(nc.t, err)
	r := running(as)
	must.SliceLen(nc.t, 1, r)
	orig := r[0]

	var pt partitionTimes
	heal := nc.fab.Apply(orig.Node, mode)
	cutAt := time.Now()
	wait.Poll(nc.t, settle, "disconnected, unknown, replaced", func() (bool, string) {
		st := nc.nodeStatus(orig.Node)
		as, err := nc.allocs(jobID)
		if err != nil {
			return false, err.Error()
		}
		since := time.Since(cutAt)
		if pt.disconnected == 0 && st == "disconnected" {
			pt.disconnected = since
		}
		if pt.unknown == 0 && find(as, orig.ID).Client == "unknown" {
			pt.unknown = since
		}
		if r := running(as); pt.replaced == 0 && len(r) == 1 && r[0].ID != orig.ID {
			pt.replaced = since
		}
		return pt.disconnected > 0 && pt.unknown > 0 && pt.replaced > 0, "node " + st + ": " + describeAllocs(as)
	})
	heal()
	healAt := time.Now()
	wait.Poll(nc.t, settle, "ready, one copy running", func() (bool, string) {
		st := nc.nodeStatus(orig.Node)
		as, err := nc.allocs(jobID)
		if err != nil {
			return false, err.Error()
		}
		since := time.Since(healAt)
		if pt.ready == 0 && st == "ready" {
			pt.ready = since
		}
		desired := 0
		for _, a := range as {
			if a.Desired == "run" {
				desired++
			}
		}
		if pt.running == 0 && find(as, orig.ID).Client != "unknown" && len(running(as)) == 1 && desired == 1 {
			pt.running = since
		}
		return pt.ready > 0 && pt.running > 0, "node " + st + ": " + describeAllocs(as)
	})
	return pt
}

// The figures of docs/benchmarks.md ("Partitions on real namespaces"):
// NOMAD_E2E_FIGURE_RUNS cuts (default 2; the docs' figures are from 10)
// per mode of the node running a two-client job's one allocation, each
// until the replacement runs, then healed. Asserted: detection within
// TTL + grace + 1 s (4 s), and heal → node ready and one copy running,
// max ≤ 3 s, and median ≤ 1.5 s over harness.MedianRuns runs or more.
func TestPartition_Figures(t *testing.T) {
	for _, mode := range []harness.Fault{harness.LinkDown, harness.SilentDrop} {
		t.Run(strings.ReplaceAll(mode.Name, " ", "_"), func(t *testing.T) {
			nc := newNetCluster(t, 3, 2)
			nc.startAll()
			nc.run(edgeJob("fig", 1, time.Hour))
			runs := harness.EnvInt(t, "NOMAD_E2E_FIGURE_RUNS", 2)
			var all []partitionTimes
			for i := range runs {
				pt := nc.measureCut("fig", mode)
				t.Logf("%s run %d: cut → disconnected %v, unknown %v, replacement running %v; heal → ready %v, one copy running %v",
					mode.Name, i+1, pt.disconnected, pt.unknown, pt.replaced, pt.ready, pt.running)
				all = append(all, pt)
			}
			for _, f := range []struct {
				what   string
				get    func(partitionTimes) time.Duration
				median time.Duration // 0: not asserted
				max    time.Duration
			}{
				{"cut → node disconnected", func(p partitionTimes) time.Duration { return p.disconnected }, 0, 4 * time.Second},
				{"cut → allocation unknown", func(p partitionTimes) time.Duration { return p.unknown }, 0, 0},
				{"cut → replacement running", func(p partitionTimes) time.Duration { return p.replaced }, 0, 0},
				{"heal → node ready", func(p partitionTimes) time.Duration { return p.ready }, 1500 * time.Millisecond, 3 * time.Second},
				{"heal → one copy running", func(p partitionTimes) time.Duration { return p.running }, 1500 * time.Millisecond, 3 * time.Second},
			} {
				var ds []time.Duration
				for _, p := range all {
					ds = append(ds, f.get(p))
				}
				s := slices.Clone(ds)
				slices.Sort(s)
				lo, med, hi := s[0], s[len(s)/2], s[len(s)-1]
				t.Logf("FIGURE %s, %s, %d runs: min %v median %v max %v", mode.Name, f.what, runs,
					lo.Round(10*time.Millisecond), med.Round(10*time.Millisecond), hi.Round(10*time.Millisecond))
				if f.median > 0 && runs >= harness.MedianRuns {
					must.LessEq(t, f.median, med, must.Sprintf("median %s", f.what))
				}
				if f.max > 0 {
					must.LessEq(t, f.max, hi, must.Sprintf("slowest %s", f.what))
				}
			}
		})
	}
}
