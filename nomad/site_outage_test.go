package nomad

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var siteNow = time.Unix(1_800_000_000, 0)

// siteNodes makes n nodes of pool "edge" in dc, ready.
func siteNodes(dc string, n int) []*structs.Node {
	out := make([]*structs.Node, n)
	for i := range out {
		out[i] = &structs.Node{ID: fmt.Sprintf("%s-%d", dc, i), Datacenter: dc, NodePool: "edge",
			Status: structs.NodeStatusReady, StatusUpdatedAt: siteNow.Add(-time.Hour).Unix()}
	}
	return out
}

// disconnect marks nodes disconnected ago before siteNow.
func disconnect(ago time.Duration, nodes ...*structs.Node) {
	for _, n := range nodes {
		n.Status, n.StatusUpdatedAt = structs.NodeStatusDisconnected, siteNow.Add(-ago).Unix()
	}
}

func edgePolicy(threshold float64) map[string]*structs.SiteOutagePolicy {
	p := &structs.SiteOutagePolicy{Threshold: threshold}
	p.Canonicalize()
	return map[string]*structs.SiteOutagePolicy{"edge": p}
}

// The threshold is a share of the site's live nodes, reached or not:
// 3 of 8 disconnected is under half, 4 of 8 is at it, 5 of 8 over it.
// An operator who writes 0.5 expects "half the site" to count.
func TestSiteOutageRule_Threshold(t *testing.T) {
	for _, tc := range []struct {
		down int
		want bool
	}{{3, false}, {4, true}, {5, true}} {
		nodes := siteNodes("dc1", 8)
		disconnect(10*time.Second, nodes[:tc.down]...)
		ch := siteOutageChanges(siteInput{Policies: edgePolicy(0.5), Nodes: nodes, Now: siteNow})
		must.Eq(t, tc.want, len(ch.Declare) == 1, must.Sprintf("%d of 8 disconnected", tc.down))
		if tc.want {
			o := ch.Declare[0]
			must.Eq(t, "edge/dc1", o.ID)
			must.Eq(t, fmt.Sprintf("Site outage declared for dc1 in node pool edge (%d/8 nodes disconnected within 1m)", tc.down), o.Declared())
			must.Eq(t, nodeIDs(nodes[:tc.down]), ch.DeclareNodes[o.ID])
		}
	}
	// A share that floating point rounds a hair over: 3 of 10 at 0.3.
	nodes := siteNodes("dc1", 10)
	disconnect(time.Second, nodes[:3]...)
	must.Len(t, 1, siteOutageChanges(siteInput{Policies: edgePolicy(0.3), Nodes: nodes, Now: siteNow}).Declare)
}

func nodeIDs(nodes []*structs.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// Only disconnects within the window count toward a declaration: nodes
// that dropped one by one over an hour are separate failures, each
// replaced as usual, even when together they are half the site.
func TestSiteOutageRule_WindowSpreadOut(t *testing.T) {
	nodes := siteNodes("dc1", 8)
	disconnect(50*time.Minute, nodes[0])
	disconnect(30*time.Minute, nodes[1])
	disconnect(10*time.Minute, nodes[2])
	disconnect(5*time.Second, nodes[3])
	ch := siteOutageChanges(siteInput{Policies: edgePolicy(0.5), Nodes: nodes, Now: siteNow})
	must.True(t, ch.empty(), must.Sprint("4 of 8 disconnected, but only 1 within the window"))

	// The same four within the window (the edge inclusive, to the second).
	disconnect(time.Minute, nodes[0])
	disconnect(30*time.Second, nodes[1], nodes[2])
	must.Len(t, 1, siteOutageChanges(siteInput{Policies: edgePolicy(0.5), Nodes: nodes, Now: siteNow}).Declare)
}

// min_nodes keeps one node of a two-node site a node's disconnect, and
// down nodes are not part of the site: they no longer run anything.
func TestSiteOutageRule_MinNodesAndDownNodes(t *testing.T) {
	nodes := siteNodes("dc1", 2)
	disconnect(time.Second, nodes[0])
	must.True(t, siteOutageChanges(siteInput{Policies: edgePolicy(0.5), Nodes: nodes, Now: siteNow}).empty())

	nodes = siteNodes("dc1", 6)
	for _, n := range nodes[:4] {
		n.Status = structs.NodeStatusDown
	}
	disconnect(time.Second, nodes[4])
	nodes[5].Status = structs.NodeStatusReady
	must.True(t, siteOutageChanges(siteInput{Policies: edgePolicy(0.5), Nodes: nodes, Now: siteNow}).empty(),
		must.Sprint("1 of 2 live nodes: half, but fewer than min_nodes"))
	disconnect(time.Second, nodes[5])
	ch := siteOutageChanges(siteInput{Policies: edgePolicy(0.5), Nodes: nodes, Now: siteNow})
	must.Len(t, 1, ch.Declare)
	must.Eq(t, 2, ch.Declare[0].Nodes)
}

// Scope: each datacenter of the pool is a site, or the pool is one; a pool
// without the setting is never a site, and other pools' nodes never count.
func TestSiteOutageRule_Scope(t *testing.T) {
	nodes := append(siteNodes("dc1", 4), siteNodes("dc2", 4)...)
	disconnect(time.Second, nodes[0], nodes[1], nodes[4])
	other := &structs.Node{ID: "other", Datacenter: "dc1", NodePool: "default", Status: structs.NodeStatusReady}
	nodes = append(nodes, other)

	ch := siteOutageChanges(siteInput{Policies: edgePolicy(0.5), Nodes: nodes, Now: siteNow})
	must.Len(t, 1, ch.Declare)
	must.Eq(t, "edge/dc1", ch.Declare[0].ID)
	must.Eq(t, 4, ch.Declare[0].Nodes, must.Sprint("the default pool's node is not part of edge's site"))

	pool := edgePolicy(0.5)
	pool["edge"].Scope = structs.SiteScopePool
	ch = siteOutageChanges(siteInput{Policies: pool, Nodes: nodes, Now: siteNow})
	must.True(t, ch.empty(), must.Sprint("3 of the pool's 8 nodes"))
	disconnect(time.Second, nodes[5])
	ch = siteOutageChanges(siteInput{Policies: pool, Nodes: nodes, Now: siteNow})
	must.Len(t, 1, ch.Declare)
	must.Eq(t, "edge", ch.Declare[0].ID)
	must.Eq(t, "Site outage declared for node pool edge (4/8 nodes disconnected within 1m)", ch.Declare[0].Declared())

	must.True(t, siteOutageChanges(siteInput{Nodes: nodes, Now: siteNow}).empty(), must.Sprint("no pool asks"))
}

// A declared outage stays declared while the site's disconnected share is
// at the threshold, however long ago the window that declared it ended:
// a new leader, reading it from the state store hours later, keeps it.
// It clears when nodes return and report (or go down) and the share falls
// below — a node back but not yet reported still counts — naming the
// nodes still disconnected, whose held replacements are now placed;
// and when the pool stops asking for detection.
func TestSiteOutageRule_StaysThenClears(t *testing.T) {
	nodes := siteNodes("dc1", 8)
	disconnect(3*time.Hour, nodes[:6]...)
	declared := []*structs.SiteOutage{{ID: "edge/dc1", Pool: "edge", Datacenter: "dc1"}}
	in := siteInput{Policies: edgePolicy(0.5), Nodes: nodes, Declared: declared, Now: siteNow}
	must.True(t, siteOutageChanges(in).empty())

	nodes[0].Status, nodes[1].Status = structs.NodeStatusReady, structs.NodeStatusReady
	must.True(t, siteOutageChanges(in).empty(), must.Sprint("4 of 8 still away"))

	nodes[2].Status = structs.NodeStatusInit
	must.True(t, siteOutageChanges(in).empty(), must.Sprint("3 disconnected and 1 back but not yet reported"))

	nodes[2].Status = structs.NodeStatusReady
	ch := siteOutageChanges(in)
	must.Len(t, 1, ch.Clear)
	must.Eq(t, nodeIDs(nodes[3:6]), ch.Clear[0].stillAway)
	must.Eq(t, "Site outage cleared for dc1 in node pool edge (3/8 nodes still away)", clearedMessage(ch.Clear[0]))
	must.Len(t, 0, ch.Declare, must.Sprint("the remaining disconnects are hours old: no new declaration"))

	nodes[2].Status = structs.NodeStatusDisconnected
	must.Len(t, 1, siteOutageChanges(siteInput{Nodes: nodes, Declared: declared, Now: siteNow}).Clear,
		must.Sprint("the pool no longer asks for detection"))
}

// A pool's site_outage setting is refused through the API with every
// out-of-range value named, and stored with its defaults filled in, so
// `nomad node pool info` shows what the detector applies.
func TestNodePool_SiteOutageValidation(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	err := upsertPool(s, "", &structs.NodePool{Name: "edge", Disconnect: &structs.NodePoolDisconnect{
		SiteOutage: &structs.SiteOutagePolicy{Threshold: 1.5, Window: -time.Second, Scope: "region", MinNodes: -1}}})
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	for _, want := range []string{
		`node pool "edge": disconnect.site_outage.threshold 1.5 must be greater than 0 and at most 1`,
		`node pool "edge": disconnect.site_outage.window can't be negative`,
		`node pool "edge": disconnect.site_outage.scope "region" is not one of [datacenter pool]`,
		`node pool "edge": disconnect.site_outage.min_nodes can't be negative`,
	} {
		must.ErrorContains(t, err, want)
	}

	must.NoError(t, upsertPool(s, "", &structs.NodePool{Name: "edge", Disconnect: &structs.NodePoolDisconnect{
		SiteOutage: &structs.SiteOutagePolicy{Threshold: 0.75}}}))
	p, err := s.State().NodePoolByName(nil, "edge")
	must.NoError(t, err)
	must.Eq(t, &structs.SiteOutagePolicy{Threshold: 0.75, Window: time.Minute, Scope: structs.SiteScopeDatacenter, MinNodes: 2},
		p.Disconnect.SiteOutage)
}

// The declaration is one raft entry: the outage in the state store, the
// event on each of the site's nodes, and, when an outage clears, the
// evaluations that place what it held. A follower that restores the
// leader's snapshot has the outage: a leader change keeps it.
func TestFSM_SiteOutages(t *testing.T) {
	leader := testFSM(t)
	nodes := siteNodes("dc1", 2)
	for i, n := range nodes {
		applyEntry(t, leader, uint64(10+i), structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n})
	}
	o := &structs.SiteOutage{ID: "edge/dc1", Pool: "edge", Datacenter: "dc1", DeclaredAt: siteNow.UnixNano(),
		Disconnected: 2, Nodes: 2, Window: time.Minute}
	ev := structs.NewNodeEvent(structs.NodeEventSubsystemCluster, o.Declared(), siteNow)
	applyEntry(t, leader, 20, structs.SiteOutageUpdateRequestType, &structs.SiteOutageUpdateRequest{
		Declare: []*structs.SiteOutage{o}, NodeEvents: map[string]*structs.NodeEvent{nodes[0].ID: ev, "gone": ev}})
	// A second declaration of the same site keeps the first one's time.
	again := *o
	again.DeclaredAt++
	applyEntry(t, leader, 21, structs.SiteOutageUpdateRequestType, &structs.SiteOutageUpdateRequest{Declare: []*structs.SiteOutage{&again}})

	got, err := leader.State().SiteOutages(nil)
	must.NoError(t, err)
	must.Len(t, 1, got)
	must.Eq(t, o.DeclaredAt, got[0].DeclaredAt)
	must.Eq(t, uint64(20), got[0].CreateIndex)
	n, err := leader.State().NodeByID(nil, nodes[0].ID)
	must.NoError(t, err)
	must.Eq(t, "Site outage declared for dc1 in node pool edge (2/2 nodes disconnected within 1m)", n.Events[len(n.Events)-1].Message)

	snap, err := leader.Snapshot()
	must.NoError(t, err)
	sink := &bufferSink{}
	must.NoError(t, snap.Persist(sink))
	follower := testFSM(t)
	must.NoError(t, follower.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	restored, err := follower.State().SiteOutages(nil)
	must.NoError(t, err)
	must.Eq(t, got, restored)

	job := &structs.Job{ID: "web", Namespace: structs.DefaultNamespace, Type: structs.JobTypeService, Priority: 50}
	eval := job.NewEval(structs.EvalTriggerSiteOutageCleared, siteNow)
	applyEntry(t, leader, 22, structs.SiteOutageUpdateRequestType, &structs.SiteOutageUpdateRequest{
		Clear: []string{"edge/dc1"}, Evals: []*structs.Evaluation{eval}})
	got, err = leader.State().SiteOutages(nil)
	must.NoError(t, err)
	must.Len(t, 0, got)
	e, err := leader.State().EvalByID(nil, eval.ID)
	must.NoError(t, err)
	must.NotNil(t, e)
	must.Eq(t, structs.EvalTriggerSiteOutageCleared, e.TriggeredBy)
}

// waitState waits on the store's watch channels until cond holds; the
// deadline only bounds a bug. cond adds what it reads to ws.
func waitState(t *testing.T, what string, cond func(ws memdb.WatchSet) (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		ws := memdb.NewWatchSet()
		ok, seen := cond(ws)
		if ok {
			return
		}
		if err := ws.WatchCtx(ctx); err != nil {
			t.Fatalf("%s: not reached; last saw %s", what, seen)
		}
	}
}

// The leader's detector, end to end on one server: two of a site's four
// nodes disconnecting declare its outage (in state, with a node event on
// each); one of them returning and reporting clears it, with a
// site-outage-cleared evaluation for the job on the node still away, whose
// held replacement it places.
func TestSiteDetector_DeclaresAndClears(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	must.NoError(t, upsertPool(s, "", &structs.NodePool{Name: "edge", Disconnect: &structs.NodePoolDisconnect{
		LostAfter: time.Hour, SiteOutage: &structs.SiteOutagePolicy{Threshold: 0.5, Window: time.Minute}}}))
	var nodes []*structs.Node
	for range 4 {
		n := mock.Node()
		n.Datacenter, n.NodePool, n.Status = "dc1", "edge", structs.NodeStatusReady
		nodes = append(nodes, n)
		must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: n}, &structs.NodeUpdateResponse{}))
	}
	job := mock.Job()
	job.NodePool = "edge"
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}))
	stored, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	a := mock.AllocForNode(nodes[1])
	a.Job, a.JobID, a.Namespace = stored, stored.ID, stored.Namespace
	_, _, err = s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		AllocsUpdated: []*structs.Allocation{a}})
	must.NoError(t, err)

	setStatus := func(n *structs.Node, status string) {
		_, _, err := s.raftApply(structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{
			NodeID: n.ID, Status: status, UpdatedAt: s.clock.Now().Unix()})
		must.NoError(t, err)
	}
	setStatus(nodes[0], structs.NodeStatusDisconnected)
	setStatus(nodes[1], structs.NodeStatusDisconnected)
	waitState(t, "outage declared", func(ws memdb.WatchSet) (bool, string) {
		o, err := s.State().SiteOutages(ws)
		must.NoError(t, err)
		return len(o) == 1, fmt.Sprint(len(o), " outages")
	})
	n, err := s.State().NodeByID(nil, nodes[1].ID)
	must.NoError(t, err)
	must.Eq(t, "Site outage declared for dc1 in node pool edge (2/4 nodes disconnected within 1m)", n.Events[len(n.Events)-1].Message)
	var listed structs.SiteOutageListResponse
	must.NoError(t, s.RPC("NodePool.ListSiteOutages", &structs.NodePoolSpecificRequest{Name: "edge"}, &listed))
	must.Len(t, 1, listed.SiteOutages)
	must.Eq(t, "dc1", listed.SiteOutages[0].Datacenter)
	must.NoError(t, s.RPC("NodePool.ListSiteOutages", &structs.NodePoolSpecificRequest{Name: "default"}, &listed))
	must.Len(t, 0, listed.SiteOutages)

	setStatus(nodes[0], structs.NodeStatusReady)
	waitState(t, "outage cleared", func(ws memdb.WatchSet) (bool, string) {
		o, err := s.State().SiteOutages(ws)
		must.NoError(t, err)
		return len(o) == 0, fmt.Sprint(len(o), " outages")
	})
	evals, err := s.State().EvalsByJob(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	var cleared []*structs.Evaluation
	for _, e := range evals {
		if e.TriggeredBy == structs.EvalTriggerSiteOutageCleared {
			cleared = append(cleared, e)
		}
	}
	must.Len(t, 1, cleared)
	must.Eq(t, nodes[1].ID, cleared[0].NodeID)
	n, err = s.State().NodeByID(nil, nodes[1].ID)
	must.NoError(t, err)
	must.Eq(t, "Site outage cleared for dc1 in node pool edge (1/4 nodes still away)", n.Events[len(n.Events)-1].Message)
}

// Re-running the rule on what it decided changes nothing (a declared
// outage is not declared again nor cleared at once), and it never both
// declares and clears one site, whatever the nodes' statuses and times.
func TestSiteOutageRule_Stable(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		threshold := rapid.Float64Range(0.05, 1).Draw(rt, "threshold")
		p := &structs.SiteOutagePolicy{Threshold: threshold, MinNodes: rapid.IntRange(1, 3).Draw(rt, "min")}
		p.Canonicalize()
		var nodes []*structs.Node
		for i := range rapid.IntRange(1, 12).Draw(rt, "nodes") {
			nodes = append(nodes, &structs.Node{
				ID: fmt.Sprintf("n%d", i), NodePool: "edge",
				Datacenter: rapid.SampledFrom([]string{"dc1", "dc2"}).Draw(rt, "dc"),
				Status: rapid.SampledFrom([]string{structs.NodeStatusReady, structs.NodeStatusInit,
					structs.NodeStatusDisconnected, structs.NodeStatusDown}).Draw(rt, "status"),
				StatusUpdatedAt: siteNow.Add(-time.Duration(rapid.IntRange(0, 120).Draw(rt, "ago")) * time.Second).Unix(),
			})
		}
		in := siteInput{Policies: map[string]*structs.SiteOutagePolicy{"edge": p}, Nodes: nodes, Now: siteNow}
		first := siteOutageChanges(in)
		must.Len(t, 0, first.Clear)
		in.Declared = first.Declare
		again := siteOutageChanges(in)
		must.True(t, again.empty(), must.Sprintf("declared %v, then %+v", first.Declare, again))
	})
}

// Each declared outage is a gauge series labelled with its pool and
// datacenter, so a dashboard shows which sites are held right now.
func TestCollectSiteOutages(t *testing.T) {
	st, err := state.NewStateStore(nil)
	must.NoError(t, err)
	must.NoError(t, st.UpdateSiteOutages(5, &structs.SiteOutageUpdateRequest{Declare: []*structs.SiteOutage{
		{ID: "edge/dc1", Pool: "edge", Datacenter: "dc1"}, {ID: "lte", Pool: "lte"}}}))
	g := gaugeFamilies{}
	must.NoError(t, collectSiteOutages(st, g))
	must.MapLen(t, 2, g[gaugeSiteOutage])
	must.Eq(t, 1, g[gaugeSiteOutage]["edge\x00dc1\x00"].value)
	must.Eq(t, 1, g[gaugeSiteOutage]["lte\x00\x00"].value)
}

// A site outage is declared in the raft entry of the node status batch
// whose disconnect completes it, not in an entry of its own before it: the
// outage, the node's disconnect, its node events and the node-update
// evaluations carry one index, so no scheduler, no check and no leader
// elected in between can see the disconnects without the outage. A
// follower restoring the state at that index has it all.
func TestSiteDetector_DeclaredInTheBatchEntry(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	must.NoError(t, upsertPool(s, "", &structs.NodePool{Name: "edge", Disconnect: &structs.NodePoolDisconnect{
		LostAfter: time.Hour, SiteOutage: &structs.SiteOutagePolicy{Threshold: 0.5}}}))
	var nodes []*structs.Node
	for range 3 {
		n := mock.Node()
		n.Datacenter, n.NodePool, n.Status = "dc1", "edge", structs.NodeStatusReady
		nodes = append(nodes, n)
		must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: n}, &structs.NodeUpdateResponse{}))
	}
	job := mock.Job()
	job.NodePool = "edge"
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}))
	stored, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	a := mock.AllocForNode(nodes[1])
	a.Job, a.JobID, a.Namespace = stored, stored.ID, stored.Namespace
	_, _, err = s.raftApply(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{a}})
	must.NoError(t, err)

	missed := func(n *structs.Node) (uint64, []*structs.Evaluation) {
		t.Helper()
		cur, err := s.State().NodeByID(nil, n.ID)
		must.NoError(t, err)
		index, evals, err := s.setNodeStatus(cur, structs.NodeStatusDisconnected,
			structs.NewNodeEvent(structs.NodeEventSubsystemCluster, structs.NodeEventHeartbeatMissed, s.clock.Now()))
		must.NoError(t, err)
		return index, evals
	}
	missed(nodes[0])
	o, err := s.State().SiteOutages(nil)
	must.NoError(t, err)
	must.Len(t, 0, o, must.Sprint("one node of three is under min_nodes"))

	index, evals := missed(nodes[1])
	o, err = s.State().SiteOutages(nil)
	must.NoError(t, err)
	must.Len(t, 1, o)
	must.Eq(t, index, o[0].CreateIndex, must.Sprint("declared in the batch's own entry"))
	must.Eq(t, "edge/dc1", o[0].ID)
	n, err := s.State().NodeByID(nil, nodes[1].ID)
	must.NoError(t, err)
	must.Eq(t, index, n.ModifyIndex)
	must.Eq(t, structs.NodeStatusDisconnected, n.Status)
	msgs := []string{n.Events[len(n.Events)-2].Message, n.Events[len(n.Events)-1].Message}
	must.Eq(t, []string{structs.NodeEventHeartbeatMissed, "Site outage declared for dc1 in node pool edge (2/3 nodes disconnected within 1m)"}, msgs)
	must.Len(t, 1, evals)
	ev, err := s.State().EvalByID(nil, evals[0].ID)
	must.NoError(t, err)
	must.Eq(t, index, ev.CreateIndex, must.Sprint("the evaluations that act on the disconnect see the outage"))
	must.Eq(t, index, ev.NodeModifyIndex)
	// A check right after (the watch loop, or a new leader's first) keeps it.
	must.NoError(t, s.sites.check(nil))
	o, err = s.State().SiteOutages(nil)
	must.NoError(t, err)
	must.Len(t, 1, o)

	// What a new leader starts from: the state restored at that index.
	snap, err := s.fsm.Snapshot()
	must.NoError(t, err)
	sink := &bufferSink{}
	must.NoError(t, snap.Persist(sink))
	follower := testFSM(t)
	must.NoError(t, follower.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	restored, err := follower.State().SiteOutages(nil)
	must.NoError(t, err)
	must.Eq(t, o, restored)
}

// The FSM writes a node status batch, the site outages it declares (with
// their node events) and its evaluations in one state transaction: every
// table it touches takes the entry's index together, and a blocking query
// woken by one of them finds the others.
func TestFSM_NodeBatchUpdateStatus_OneTransaction(t *testing.T) {
	f := testFSM(t)
	nodes := siteNodes("dc1", 2)
	for i, n := range nodes {
		applyEntry(t, f, uint64(10+i), structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: n})
	}
	job := &structs.Job{ID: "web", Namespace: structs.DefaultNamespace, Type: structs.JobTypeService, Priority: 50}
	eval := job.NewEval(structs.EvalTriggerNodeUpdate, siteNow)
	o := &structs.SiteOutage{ID: "edge/dc1", Pool: "edge", Datacenter: "dc1", DeclaredAt: siteNow.UnixNano(),
		Disconnected: 2, Nodes: 2, Window: time.Minute}
	declared := structs.NewNodeEvent(structs.NodeEventSubsystemCluster, o.Declared(), siteNow)

	ws := memdb.NewWatchSet()
	_, err := f.State().SiteOutages(ws)
	must.NoError(t, err)
	var seen struct{ outages, evals, nodes int }
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ws.WatchCtx(context.Background())
		// Woken by the outage: the rest of the entry is there already.
		out, _ := f.State().SiteOutages(nil)
		e, _ := f.State().EvalByID(nil, eval.ID)
		n, _ := f.State().NodeByID(nil, nodes[1].ID)
		seen.outages = len(out)
		if e != nil {
			seen.evals = 1
		}
		if n != nil && n.Status == structs.NodeStatusDisconnected {
			seen.nodes = 1
		}
	}()
	applyEntry(t, f, 20, structs.NodeBatchUpdateStatusRequestType, &structs.NodeBatchUpdateStatusRequest{
		UpdatedAt: siteNow.Unix(),
		Updates: []*structs.NodeStatusUpdate{
			{NodeID: nodes[0].ID, Status: structs.NodeStatusDisconnected},
			{NodeID: nodes[1].ID, Status: structs.NodeStatusDisconnected},
		},
		Evals:       []*structs.Evaluation{eval},
		SiteOutages: &structs.SiteOutageUpdateRequest{Declare: []*structs.SiteOutage{o}, NodeEvents: map[string]*structs.NodeEvent{nodes[1].ID: declared}},
	})
	<-done
	must.Eq(t, struct{ outages, evals, nodes int }{1, 1, 1}, seen)
	for _, table := range []string{state.TableNodes, state.TableSiteOutages, state.TableEvals} {
		idx, err := f.State().Index(table)
		must.NoError(t, err)
		must.Eq(t, 20, idx, must.Sprintf("table %s", table))
	}
	e, err := f.State().EvalByID(nil, eval.ID)
	must.NoError(t, err)
	must.Eq(t, 20, e.NodeModifyIndex)
	n, err := f.State().NodeByID(nil, nodes[1].ID)
	must.NoError(t, err)
	must.Eq(t, o.Declared(), n.Events[len(n.Events)-1].Message)
}
