package scheduler_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// siteFixture: a group of two with a one-hour window runs on the two
// nodes of site dc1 (pool edge); two empty nodes in dc2 could take
// replacements. The allocations run.
func siteFixture(t *testing.T) (*schedtest.Harness, []*structs.Node, *structs.Job) {
	h := schedtest.NewHarness(t)
	edge := func(dc string) *structs.Node {
		n := mock.Node()
		n.Datacenter, n.NodePool = dc, "edge"
		return n
	}
	site := []*structs.Node{edge("dc1"), edge("dc1")}
	h.UpsertNodes(site...)
	job := mock.Job()
	job.NodePool = "edge"
	job.Datacenters = []string{"dc1", "dc2"}
	job.TaskGroups[0].Count = 2
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour}
	job = h.UpsertJob(job)
	process(t, h, job, structs.EvalTriggerJobRegister)
	setRunning(t, h, job)
	for _, n := range site {
		must.Len(t, 1, allocsOn(h.JobAllocs(job), n.ID))
	}
	h.UpsertNodes(edge("dc2"), edge("dc2"))
	return h, site, job
}

func declareOutage(t *testing.T, h *schedtest.Harness, dc string) {
	t.Helper()
	must.NoError(t, h.State.UpdateSiteOutages(h.NextIndex(), &structs.SiteOutageUpdateRequest{
		Declare: []*structs.SiteOutage{{ID: "edge/" + dc, Pool: "edge", Datacenter: dc, Disconnected: 2, Nodes: 2, Window: time.Minute}}}))
}

func clearOutage(t *testing.T, h *schedtest.Harness, dc string) {
	t.Helper()
	must.NoError(t, h.State.UpdateSiteOutages(h.NextIndex(), &structs.SiteOutageUpdateRequest{Clear: []string{"edge/" + dc}}))
}

func placedIn(h *schedtest.Harness) int {
	n := 0
	for _, p := range h.Plans {
		n += len(schedtest.PlacedAllocs(p))
	}
	return n
}

func triggers(evals []*structs.Evaluation) map[string]int {
	out := map[string]int{}
	for _, e := range evals {
		out[e.TriggeredBy]++
	}
	return out
}

// While a site outage is declared, the site's allocations become unknown
// as usual but nothing replaces them, after the reschedule delay or ever
// while the outage lasts: the site is cut off, not dead, and moving its
// whole work elsewhere would only be undone when it returns. Their window
// still runs: when it ends they are lost and replaced as usual.
func TestServiceSched_SiteOutageHoldsReplacements(t *testing.T) {
	h, site, job := siteFixture(t)
	placedBefore := placedIn(h)
	for _, n := range site {
		h.SetNodeStatus(n.ID, structs.NodeStatusDisconnected)
	}
	declareOutage(t, h, "dc1")

	process(t, h, job, structs.EvalTriggerNodeUpdate)
	for _, a := range h.JobAllocs(job) {
		must.Eq(t, structs.AllocClientStatusUnknown, a.ClientStatus)
		must.Eq(t, structs.AllocDesiredStatusRun, a.DesiredStatus)
	}
	must.Eq(t, placedBefore, placedIn(h))
	ts := triggers(h.CreateEvals)
	must.Eq(t, 0, ts[structs.EvalTriggerRetryFailedAlloc], must.Sprint("no replacement is due, so none is scheduled"))
	must.Eq(t, 1, ts[structs.EvalTriggerMaxDisconnectTimeout])
	must.Eq(t, "replacements held by a site outage: 2 allocations on dc1 in node pool edge", h.LastEval().StatusDescription,
		must.Sprint("`nomad eval status` says why nothing was placed"))

	h.Now = h.Now.Add(31 * time.Second)
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	must.Eq(t, placedBefore, placedIn(h), must.Sprint("past the reschedule delay, still held"))
	must.StrContains(t, h.LastEval().StatusDescription, "2 allocations on dc1")

	h.Now = h.Now.Add(time.Hour)
	process(t, h, job, structs.EvalTriggerMaxDisconnectTimeout)
	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 2, placed, must.Sprint("past the window the originals are lost and replaced"))
	must.Eq(t, "", h.LastEval().StatusDescription, must.Sprint("nothing is held any more"))
	for _, a := range placed {
		must.NotEq(t, site[0].ID, a.NodeID)
		must.NotEq(t, site[1].ID, a.NodeID)
	}
}

// Without an outage (none declared, or one declared for another site) a
// single node's disconnect in the same pool is replaced after the
// reschedule delay, as before the feature.
func TestServiceSched_SiteOutageOnlyHoldsItsSite(t *testing.T) {
	for _, other := range []string{"", "dc2"} {
		h, site, job := siteFixture(t)
		if other != "" {
			declareOutage(t, h, other)
		}
		h.SetNodeStatus(site[0].ID, structs.NodeStatusDisconnected)
		process(t, h, job, structs.EvalTriggerNodeUpdate)
		h.Now = h.Now.Add(31 * time.Second)
		process(t, h, job, structs.EvalTriggerRetryFailedAlloc)
		placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
		must.Len(t, 1, placed, must.Sprintf("outage declared for %q", other))
		must.Eq(t, "", h.LastEval().StatusDescription)
		must.Eq(t, allocsOn(h.JobAllocs(job), site[0].ID)[0].ID, placed[0].PreviousAllocation)
	}
}

// When the outage clears while a node of the site is still away, the
// evaluation the detector creates replaces what was held on it, at once
// (its reschedule delay, counted from when it became unknown, has passed).
func TestServiceSched_SiteOutageClearedReplacesWhatIsStillAway(t *testing.T) {
	h, site, job := siteFixture(t)
	for _, n := range site {
		h.SetNodeStatus(n.ID, structs.NodeStatusDisconnected)
	}
	declareOutage(t, h, "dc1")
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	placedBefore := placedIn(h)

	h.Now = h.Now.Add(5 * time.Minute)
	back := allocsOn(h.JobAllocs(job), site[0].ID)[0].Copy()
	h.SetNodeStatus(site[0].ID, structs.NodeStatusInit)
	back.ClientStatus, back.AllocStates = structs.AllocClientStatusRunning, nil
	must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), []*structs.Allocation{back}))
	clearOutage(t, h, "dc1")
	process(t, h, job, structs.EvalTriggerSiteOutageCleared)

	placed := schedtest.PlacedAllocs(h.Plans[len(h.Plans)-1])
	must.Len(t, 1, placed)
	away := allocsOn(h.JobAllocs(job), site[1].ID)[0]
	must.Eq(t, away.ID, placed[0].PreviousAllocation)
	must.Eq(t, placedBefore+1, placedIn(h))
	got, _ := h.State.AllocByID(nil, back.ID)
	must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
	must.False(t, got.NeedsToReconnect(), must.Sprint("the returned original was resolved and kept"))
}

// The return of a whole site (upstream's #5876: originals were killed
// before their replacements existed): the originals report running, the
// reconnect resolves them, and nothing is stopped, because nothing
// replaced them and each is its instance's only copy.
func TestServiceSched_SiteReturnsNothingStopped(t *testing.T) {
	h, site, job := siteFixture(t)
	for _, n := range site {
		h.SetNodeStatus(n.ID, structs.NodeStatusDisconnected)
	}
	declareOutage(t, h, "dc1")
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	h.Now = h.Now.Add(10 * time.Minute)
	process(t, h, job, structs.EvalTriggerNodeUpdate)

	h.Now = h.Now.Add(time.Minute)
	var back []*structs.Allocation
	for _, n := range site {
		h.SetNodeStatus(n.ID, structs.NodeStatusInit)
		a := allocsOn(h.JobAllocs(job), n.ID)[0].Copy()
		a.ClientStatus, a.AllocStates = structs.AllocClientStatusRunning, nil
		back = append(back, a)
	}
	// Back (initializing) but not yet reported: still held, or the
	// report a moment later would meet a replacement and one would die.
	before := placedIn(h)
	process(t, h, job, structs.EvalTriggerNodeUpdate)
	must.Eq(t, before, placedIn(h))
	must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), back))
	// The site's return clears the outage in the same moment; the order
	// of the two does not matter, since nothing was placed to contend.
	process(t, h, job, structs.EvalTriggerReconnect)
	clearOutage(t, h, "dc1")
	process(t, h, job, structs.EvalTriggerSiteOutageCleared)

	for _, p := range h.Plans {
		for _, stops := range p.NodeUpdate {
			must.SliceEmpty(t, stops, must.Sprint("nothing is stopped"))
		}
	}
	for _, a := range h.JobAllocs(job) {
		must.Eq(t, structs.AllocDesiredStatusRun, a.DesiredStatus)
		must.Eq(t, structs.AllocClientStatusRunning, a.ClientStatus)
		must.False(t, a.NeedsToReconnect())
	}
	must.Len(t, 2, h.JobAllocs(job))
}
