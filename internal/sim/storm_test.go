package sim_test

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/internal/sim"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/race"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// simHost is the simulator's IP on the MemNet: every simulated node
// dials from it, as they would from one simulator process.
const simHost = "10.0.2.1"

// stormJob is a service job of count allocations with a one-hour
// disconnect window, sized so that two fit on a simulated node: the
// allocations spread over every node.
func stormJob(count int) *structs.Job {
	job := mock.Job()
	tg := job.TaskGroups[0]
	tg.Count = count
	window := time.Hour
	tg.MaxClientDisconnect = &window
	tg.Tasks[0].Config = map[string]any{} // runs until stopped
	tg.Tasks[0].Resources = &structs.Resources{CPU: 200, MemoryMB: 100}
	job.Canonicalize()
	return job
}

// stormScale is the storm's size: 200 nodes and 400 allocations, or a
// tenth of that under the race detector. Its runtime (the ThreadSanitizer
// that -race links) has crashed on the full storm about once in eight
// runs, inside itself (SIGSEGV in __tsan::SlotLock, or "CHECK failed:
// tsan_rtl.cpp:346"), on go1.26.8; the data races it looks for take the
// same code paths with 20 nodes as with 200, and the full storm runs
// without it in make test. The per-node cost bounds are checked at full
// scale only: 20 nodes are too few to amortise the per-job evaluations.
func stormScale() (nodes, allocs int) {
	if race.Enabled {
		return 20, 40
	}
	return 200, 400
}

// The reconnect storm, scaled down: 200 simulated nodes (real clients
// over the real RPC protocol) against three servers, a job of 400
// allocations with a disconnect window spread over all of them. Every
// node goes silent past its TTL, so the nodes go disconnected and the
// allocations unknown; then all return in the same instant. Everything
// must converge — every node ready, every allocation running — with no
// task restarted or stopped and no allocation beyond the originals
// (with every node gone no replacement could be placed, so none may
// appear when they return). This is what a site whose LTE cell comes back
// relies on: upstream users have seen every allocation restarted.
func TestStorm_MassReturnConvergesWithoutRestart(t *testing.T) {
	nodes, allocs := stormScale()
	testutil.Bubble(t, func(t *testing.T) {
		c, fleet := startStorm(t, nodes)
		st := func() *state.StateStore { return c.Leader().State() }

		job := runStormJob(t, c, fleet, allocs)
		before := jobAllocs(t, st(), job)
		must.MapLen(t, allocs, before)
		must.Eq(t, nodes, len(nodesOf(before)), must.Sprint("the allocations spread over every node"))
		stormStart, err := st().LatestIndex()
		must.NoError(t, err)

		n, err := fleet.Silence(sim.Selection{})
		must.NoError(t, err)
		must.Eq(t, nodes, n)
		wait.Eventually(t, 2*time.Minute, "every node disconnected and every allocation unknown", func() (bool, string) {
			status := nodeStatuses(t, st())
			unknown := countStatus(jobAllocs(t, st(), job), structs.AllocClientStatusUnknown)
			return status[structs.NodeStatusDisconnected] == nodes && unknown == allocs,
				fmt.Sprintf("nodes %v, %d unknown", status, unknown)
		})
		returnStart, err := st().LatestIndex()
		must.NoError(t, err)

		back := time.Now()
		must.Eq(t, nodes, fleet.Return(0))
		wait.Eventually(t, 2*time.Minute, "every node ready and every allocation running", func() (bool, string) {
			status := nodeStatuses(t, st())
			now := jobAllocs(t, st(), job)
			running := countStatus(now, structs.AllocClientStatusRunning)
			return status[structs.NodeStatusReady] == nodes && running == allocs && len(now) == allocs,
				fmt.Sprintf("nodes %v, %d allocations, %d running", status, len(now), running)
		})
		converged := time.Since(back)

		after := jobAllocs(t, st(), job)
		must.Eq(t, slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)),
			must.Sprint("exactly the original allocations, no replacement"))
		for id, a := range after {
			must.Eq(t, structs.AllocDesiredStatusRun, a.DesiredStatus, must.Sprintf("allocation %s", id))
			must.False(t, a.NeedsToReconnect(), must.Sprintf("allocation %s still reconnecting", id))
		}
		s := fleet.Stats()
		must.Eq(t, 0, s.Restarts, must.Sprintf("no task started twice: %+v", s))
		must.Eq(t, 0, s.Stops, must.Sprintf("no task stopped: %+v", s))
		must.Eq(t, allocs, s.Running)

		end, err := st().LatestIndex()
		must.NoError(t, err)
		created, cost := stormCost(t, st(), job, stormStart, returnStart)
		t.Logf("converged %v (fake time) after the return; raft index +%d for the disconnect, +%d for the return; evaluations %s",
			converged, returnStart-stormStart, end-returnStart, cost)

		// The servers gather node status changes and allocation updates
		// in windows (nomad.Config.NodeStatusBatchWindow, 20 ms) and write
		// one evaluation per job and trigger per window: the return costs
		// evaluations in proportion to the jobs and to how long the
		// return takes, whatever the number of nodes (one per node per job
		// and transition before: 400 node-update and 300 reconnect here).
		const jobs, window = 1, 20 * time.Millisecond
		bound := jobs * int(converged/window+1)
		for _, trigger := range []string{structs.EvalTriggerNodeUpdate, structs.EvalTriggerReconnect} {
			n := created[stormPhase{"return", trigger}]
			must.Positive(t, n, must.Sprintf("the return evaluated the job (%s)", trigger))
			must.LessEq(t, bound, n, must.Sprintf("%s evaluations of the return bounded by jobs × windows, not nodes", trigger))
			if !race.Enabled { // a tenth of the storm is too small to amortise the windows over nodes
				must.Less(t, nodes/2, n, must.Sprintf("%s evaluations of the return: fewer than one per two nodes", trigger))
			}
		}
	})
}

// stormPhase names a phase of the storm and an evaluation trigger.
type stormPhase struct{ phase, trigger string }

// startStorm starts three in-memory servers and n simulated nodes of 500
// MHz and 256 MB (two storm allocations each), and waits until every
// node is ready.
func startStorm(t *testing.T, n int) (*testutil.MemCluster, *sim.Fleet) {
	t.Helper()
	c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3})
	var addrs []string
	for i := range c.Servers {
		addrs = append(addrs, net.JoinHostPort(testutil.ServerHost(i), fmt.Sprint(testutil.MemRPCPort)))
	}
	fleet, err := sim.Start(sim.Config{
		Count: n, Servers: addrs, Dialer: c.Net.Dialer(simHost),
		CPU: 500, MemoryMB: 256, DataDir: t.TempDir(),
	})
	must.NoError(t, err)
	t.Cleanup(fleet.Shutdown)
	<-fleet.Ready()
	return c, fleet
}

// runStormJob registers a storm job of count allocations and waits until
// the nodes run them all.
func runStormJob(t *testing.T, c *testutil.MemCluster, fleet *sim.Fleet, count int) *structs.Job {
	t.Helper()
	job := stormJob(count)
	var reg structs.JobRegisterResponse
	must.NoError(t, c.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	wait.Eventually(t, 2*time.Minute, "every allocation running", func() (bool, string) {
		s := fleet.Stats()
		return s.Running == count, fmt.Sprintf("%+v", s)
	})
	// The servers must know it too: a node silenced while its reports are
	// still in flight has nothing running to keep it disconnected.
	wait.Eventually(t, 2*time.Minute, "the servers see every allocation running", func() (bool, string) {
		all := jobAllocs(t, c.Leader().State(), job)
		byStatus := map[string]int{}
		for _, a := range all {
			byStatus[a.ClientStatus]++
		}
		return byStatus[structs.AllocClientStatusRunning] == count, fmt.Sprintf("%v", byStatus)
	})
	return job
}

func jobAllocs(t *testing.T, st *state.StateStore, job *structs.Job) map[string]*structs.Allocation {
	t.Helper()
	all, err := st.AllocsByJob(nil, job.Namespace, job.ID, true)
	must.NoError(t, err)
	out := make(map[string]*structs.Allocation, len(all))
	for _, a := range all {
		out[a.ID] = a
	}
	return out
}

func nodesOf(allocs map[string]*structs.Allocation) map[string]bool {
	out := map[string]bool{}
	for _, a := range allocs {
		out[a.NodeID] = true
	}
	return out
}

func countStatus(allocs map[string]*structs.Allocation, status string) int {
	n := 0
	for _, a := range allocs {
		if a.ClientStatus == status {
			n++
		}
	}
	return n
}

func nodeStatuses(t *testing.T, st *state.StateStore) map[string]int {
	t.Helper()
	iter, err := st.Nodes(nil)
	must.NoError(t, err)
	out := map[string]int{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out[raw.(*structs.Node).Status]++
	}
	return out
}

// stormCost counts the job's evaluations created in each phase of the
// storm, by trigger, and how many of them a scheduler actually ran
// (complete) rather than the broker cancelling them as superseded.
func stormCost(t *testing.T, st *state.StateStore, job *structs.Job, start, back uint64) (map[stormPhase]int, string) {
	t.Helper()
	evals, err := st.EvalsByJob(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	created, ran := map[stormPhase]int{}, map[string]int{}
	for _, e := range evals {
		if e.CreateIndex <= start {
			continue
		}
		phase := "disconnect"
		if e.CreateIndex > back {
			phase = "return"
		}
		created[stormPhase{phase, e.TriggeredBy}]++
		if e.Status == structs.EvalStatusComplete {
			ran[phase]++
		}
	}
	return created, fmt.Sprintf("created %v, run by a scheduler %v", created, ran)
}

// A fifth of the fleet flaps: silent for 30 s (past the 10 s TTL and 10 s
// grace, so each flap takes the node disconnected and its allocations
// unknown) and back for 30 s, three times. Every flap must resolve as a
// reconnect: no task restarted or stopped, no replacement kept, every
// node ready and every allocation running at the end, and each flap must
// cost a bounded number of evaluations per flapping node (logged).
func TestStorm_FlappingNodesNeverRestart(t *testing.T) {
	nodes, allocs := stormScale()
	const flaps = 3
	const period = time.Minute
	testutil.Bubble(t, func(t *testing.T) {
		c, fleet := startStorm(t, nodes)
		st := func() *state.StateStore { return c.Leader().State() }
		job := runStormJob(t, c, fleet, allocs)
		before := jobAllocs(t, st(), job)
		start, err := st().LatestIndex()
		must.NoError(t, err)

		n, err := fleet.Flap(sim.Flapping{Selection: sim.Selection{Fraction: 0.2, Seed: 7}, Period: period, For: flaps * period})
		must.NoError(t, err)
		must.Eq(t, nodes/5, n)
		sawDisconnected := false
		for range flaps * 2 {
			testutil.Settle(period / 2)
			sawDisconnected = sawDisconnected || nodeStatuses(t, st())[structs.NodeStatusDisconnected] > 0
		}
		must.True(t, sawDisconnected, must.Sprint("the flaps outlasted the TTL: nodes went disconnected"))
		wait.Eventually(t, 2*time.Minute, "every node ready and every allocation running", func() (bool, string) {
			status := nodeStatuses(t, st())
			now := jobAllocs(t, st(), job)
			live := 0
			for _, a := range now {
				if a.DesiredStatus == structs.AllocDesiredStatusRun && a.ClientStatus == structs.AllocClientStatusRunning {
					live++
				}
			}
			return status[structs.NodeStatusReady] == nodes && live == allocs && fleet.Stats().Silenced == 0,
				fmt.Sprintf("nodes %v, %d allocations, %d live", status, len(now), live)
		})
		s := fleet.Stats()
		must.Eq(t, 0, s.Restarts, must.Sprintf("no task started twice: %+v", s))
		must.Eq(t, 0, s.Stops, must.Sprintf("no task stopped: %+v", s))
		after := jobAllocs(t, st(), job)
		for id := range before {
			must.Eq(t, structs.AllocDesiredStatusRun, after[id].DesiredStatus, must.Sprintf("original %s kept", id))
		}
		extra := len(after) - len(before)
		end, err := st().LatestIndex()
		must.NoError(t, err)
		evals, err := st().EvalsByJob(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		created := 0
		for _, e := range evals {
			if e.CreateIndex > start {
				created++
			}
		}
		perFlap := float64(created) / float64(n*flaps)
		t.Logf("%d nodes flapped %d times: %d evaluations (%.1f per node per flap), raft index +%d, %d replacements placed and stopped",
			n, flaps, created, perFlap, end-start, extra)
		if !race.Enabled { // with 4 flapping nodes the per-job evaluations dominate the per-node cost
			must.Less(t, 6.0, perFlap, must.Sprint("evaluations per node per flap are bounded"))
		}
	})
}
