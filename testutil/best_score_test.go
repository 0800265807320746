package testutil_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// These tests run the seed's two cases with the default reconcile strategy,
// best_score, deciding on the scores the scheduler really recorded at
// placement (the allocations' ScoreMetaData), not on a strategy that
// decides without them.

// racks starts one server and one client per rack, each client's node
// carrying meta.rack, so that an affinity scores them apart.
func racks(t *testing.T, names ...string) *testutil.MemCluster {
	return testutil.NewMemCluster(t, testutil.MemClusterConfig{
		Servers: 1,
		Clients: len(names),
		Client:  func(i int, cfg *client.Config) { cfg.Meta = map[string]string{"rack": names[i]} },
	})
}

// bestScoreJob is disconnectJob with the default strategy, preferring
// nodes of rack prefer when it is not empty.
func bestScoreJob(prefer string) *structs.Job {
	job := disconnectJob()
	tg := job.TaskGroups[0]
	tg.Disconnect.Reconcile = ""
	if prefer != "" {
		tg.Affinities = []*structs.Affinity{{LTarget: "${meta.rack}", RTarget: prefer, Operand: "=", Weight: 100}}
	}
	job.Canonicalize()
	return job
}

// score is the normalised score recorded for the allocation's own node
// when it was placed.
func score(t *testing.T, a *structs.Allocation) float64 {
	t.Helper()
	s, ok := a.Metrics.NodeScore(a.NodeID)
	must.True(t, ok, must.Sprintf("allocation %s has no recorded score for its node", a.ID))
	return s
}

func allocsOf(t *testing.T, c *testutil.MemCluster, job *structs.Job) []*structs.Allocation {
	t.Helper()
	allocs, err := c.Leader().State().AllocsByJob(nil, job.Namespace, job.ID, true)
	must.NoError(t, err)
	return allocs
}

func allocByID(t *testing.T, c *testutil.MemCluster, id string) *structs.Allocation {
	t.Helper()
	a, err := c.Leader().State().AllocByID(nil, id)
	must.NoError(t, err)
	return a
}

// waitReplaced cuts nothing: it waits until the original is unknown and a
// replacement of it runs, and returns the replacement.
func waitReplaced(t *testing.T, c *testutil.MemCluster, job *structs.Job, original *structs.Allocation) *structs.Allocation {
	t.Helper()
	var rep *structs.Allocation
	wait.Eventually(t, time.Minute, "original unknown and a replacement running", func() (bool, string) {
		allocs := allocsOf(t, c, job)
		rep = nil
		unknown := false
		for _, a := range allocs {
			if a.ID == original.ID {
				unknown = a.ClientStatus == structs.AllocClientStatusUnknown
			} else if a.ClientStatus == structs.AllocClientStatusRunning && a.PreviousAllocation == original.ID {
				rep = a
			}
		}
		return unknown && rep != nil, describe(allocs)
	})
	return rep
}

// waitSettled waits until the node is ready and exactly one allocation of
// the job is desired running and running, heard from since the reconnect,
// and returns it.
func waitSettled(t *testing.T, c *testutil.MemCluster, job *structs.Job, nodeID string) *structs.Allocation {
	t.Helper()
	var kept *structs.Allocation
	wait.Eventually(t, time.Minute, "node ready and one allocation running", func() (bool, string) {
		n, err := c.Leader().State().NodeByID(nil, nodeID)
		must.NoError(t, err)
		allocs := allocsOf(t, c, job)
		kept = nil
		run := 0
		for _, a := range allocs {
			if a.DesiredStatus != structs.AllocDesiredStatusRun {
				continue
			}
			run++
			if a.ClientStatus == structs.AllocClientStatusRunning && !a.NeedsToReconnect() {
				kept = a
			}
		}
		return n.Status == structs.NodeStatusReady && run == 1 && kept != nil,
			fmt.Sprintf("node %s; %s", n.Status, describe(allocs))
	})
	return kept
}

// Seed case 1: the only node drops, so no replacement can be placed
// although the group asks for one at once; the node comes back within the
// window and the original carries on, never restarted, and nothing else
// was ever placed.
func TestCluster_BestScore_OnlyNodeReturns_OriginalResumes(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := racks(t, "a")
		job := bestScoreJob("")
		original, cut := runOne(t, c, job)
		startedAt := original.TaskStates["app"].StartedAt

		c.Links[cut].Cut(fault.Blackhole)
		wait.Eventually(t, time.Minute, "original unknown", func() (bool, string) {
			a := allocByID(t, c, original.ID)
			return a.ClientStatus == structs.AllocClientStatusUnknown, a.ClientStatus
		})
		// The replacement is due now (delay 0) but no node can take it.
		r, ok := toAPI(t, allocByID(t, c, original.ID)).NextReplacement()
		must.True(t, ok)
		must.False(t, r.WhenLost)
		must.Len(t, 1, allocsOf(t, c, job), must.Sprint("no node for a replacement"))

		c.Links[cut].Heal()
		kept := waitSettled(t, c, job, original.NodeID)
		must.Eq(t, original.ID, kept.ID, must.Sprint("the original resumes"))
		ts := kept.TaskStates["app"]
		must.Eq(t, uint64(0), ts.Restarts)
		must.Eq(t, startedAt, ts.StartedAt, must.Sprint("never restarted"))
		must.True(t, hasEvent(ts, structs.TaskClientReconnected))
		must.Len(t, 1, allocsOf(t, c, job), must.Sprint("nothing was ever placed beside it"))
	})
}

// Seed case 2, the original on the better node: the group prefers rack a,
// so the original is placed there with the higher score; its node drops,
// the replacement goes to rack b with a lower score; on return best_score
// keeps the original and stops the replacement.
func TestCluster_BestScore_OriginalOnBetterNodeKept(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := racks(t, "a", "b")
		job := bestScoreJob("a")
		original, cut := runOne(t, c, job)
		must.Eq(t, c.Clients[0].NodeID(), original.NodeID, must.Sprint("the affinity placed the original on rack a"))

		c.Links[cut].Cut(fault.Blackhole)
		rep := waitReplaced(t, c, job, original)
		must.Greater(t, score(t, rep), score(t, original), must.Sprint("the original's node scored higher"))

		c.Links[cut].Heal()
		kept := waitSettled(t, c, job, original.NodeID)
		must.Eq(t, original.ID, kept.ID, must.Sprint("the copy on the better-scored node is kept"))
		must.Eq(t, uint64(0), kept.TaskStates["app"].Restarts)
		stopped := allocByID(t, c, rep.ID)
		must.Eq(t, structs.AllocDesiredStatusStop, stopped.DesiredStatus)
		must.Eq(t, structs.AllocReconnected, stopped.DesiredDescription)
	})
}

// Seed case 2, the replacement on the better node: rack b is preferred but
// unreachable when the job is registered, so the original goes to rack a
// with the lower score; once rack b is back, rack a drops and the
// replacement lands on rack b with the higher score. On return best_score
// keeps the running replacement and stops the original, whose client
// kills it.
func TestCluster_BestScore_ReplacementOnBetterNodeKept(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := racks(t, "a", "b")
		c.Links[1].Cut(fault.Reset)
		wait.Eventually(t, time.Minute, "rack b down", func() (bool, string) {
			n, err := c.Leader().State().NodeByID(nil, c.Clients[1].NodeID())
			must.NoError(t, err)
			return n.Status == structs.NodeStatusDown, n.Status
		})
		job := bestScoreJob("b")
		original, cut := runOne(t, c, job)
		must.Eq(t, 0, cut)
		c.Links[1].Heal()
		wait.Eventually(t, time.Minute, "rack b ready", func() (bool, string) {
			n, err := c.Leader().State().NodeByID(nil, c.Clients[1].NodeID())
			must.NoError(t, err)
			return n.Status == structs.NodeStatusReady, n.Status
		})

		c.Links[cut].Cut(fault.Blackhole)
		rep := waitReplaced(t, c, job, original)
		must.Eq(t, c.Clients[1].NodeID(), rep.NodeID)
		must.Greater(t, score(t, original), score(t, rep), must.Sprint("the replacement's node scored higher"))

		c.Links[cut].Heal()
		kept := waitSettled(t, c, job, original.NodeID)
		must.Eq(t, rep.ID, kept.ID, must.Sprint("the copy on the better-scored node is kept"))
		lost := allocByID(t, c, original.ID)
		must.Eq(t, structs.AllocDesiredStatusStop, lost.DesiredStatus)
		wait.Eventually(t, time.Minute, "returned client stops the original", func() (bool, string) {
			a := clientAlloc(t, c, cut, original.ID)
			return a.ClientStatus == structs.AllocClientStatusComplete, a.ClientStatus
		})
	})
}

// Seed case 2 on identical nodes: the original and its replacement scored
// the same, and a tie keeps the original.
func TestCluster_BestScore_TieKeepsOriginal(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := racks(t, "a", "a")
		job := bestScoreJob("")
		original, cut := runOne(t, c, job)

		c.Links[cut].Cut(fault.Blackhole)
		rep := waitReplaced(t, c, job, original)
		must.Eq(t, score(t, original), score(t, rep), must.Sprint("identical nodes, identical scores"))

		c.Links[cut].Heal()
		kept := waitSettled(t, c, job, original.NodeID)
		must.Eq(t, original.ID, kept.ID, must.Sprint("a tie keeps the original"))
		must.Eq(t, structs.AllocReconnected, allocByID(t, c, rep.ID).DesiredDescription)
	})
}

// What `alloc status` reads as an unknown allocation's reschedule
// eligibility (api.Allocation.NextReplacement, from the allocation alone)
// is when the scheduler really replaces it: its follow-up evaluation is
// due then, and the replacement placed by it.
func TestCluster_ReplacementTimeMatchesScheduler(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := racks(t, "a", "b")
		job := bestScoreJob("")
		job.TaskGroups[0].ReschedulePolicy.Delay = 2 * time.Second
		original, cut := runOne(t, c, job)

		c.Links[cut].Cut(fault.Blackhole)
		var followup *structs.Evaluation
		wait.Eventually(t, time.Minute, "original unknown with a replacement follow-up", func() (bool, string) {
			evals, err := c.Leader().State().EvalsByJob(nil, job.Namespace, job.ID)
			must.NoError(t, err)
			followup = nil
			for _, e := range evals {
				if e.TriggeredBy == structs.EvalTriggerRetryFailedAlloc && !e.WaitUntil.IsZero() {
					followup = e
				}
			}
			a := allocByID(t, c, original.ID)
			return a.ClientStatus == structs.AllocClientStatusUnknown && followup != nil, a.ClientStatus
		})
		unknown := allocByID(t, c, original.ID)
		r, ok := toAPI(t, unknown).NextReplacement()
		must.True(t, ok)
		must.False(t, r.WhenLost)
		must.Eq(t, followup.WaitUntil.UnixNano(), r.At.UnixNano())
		since, _ := unknown.UnknownSince()
		must.Eq(t, since.Add(2*time.Second).UnixNano(), r.At.UnixNano())

		rep := waitReplaced(t, c, job, original)
		must.False(t, time.Unix(0, rep.CreateTime).Before(r.At), must.Sprint("not replaced before its time"))
		_, ok = toAPI(t, allocByID(t, c, original.ID)).NextReplacement()
		must.False(t, ok, must.Sprint("replaced: no further eligibility"))
	})
}

// toAPI is the allocation as the HTTP API serves it to the CLI.
func toAPI(t *testing.T, a *structs.Allocation) *api.Allocation {
	t.Helper()
	data, err := json.Marshal(a)
	must.NoError(t, err)
	var out api.Allocation
	must.NoError(t, json.Unmarshal(data, &out))
	return &out
}
