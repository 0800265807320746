package scheduler_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// nodesIn returns n nodes in each datacenter, with meta.rack r0..r(n-1).
func nodesIn(n int, dcs ...string) []*structs.Node {
	var out []*structs.Node
	for _, dc := range dcs {
		for i := range n {
			node := mock.Node()
			node.Datacenter = dc
			node.Meta = map[string]string{"rack": fmt.Sprintf("%s-r%d", dc, i)}
			out = append(out, node)
		}
	}
	return out
}

// placedPer counts the plan's placements per value of key(node).
func placedPer(t *testing.T, h *schedtest.Harness, nodes []*structs.Node, key func(*structs.Node) string) map[string]int {
	t.Helper()
	byID := map[string]*structs.Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	out := map[string]int{}
	for _, p := range h.Plans {
		for _, a := range schedtest.PlacedAllocs(p) {
			out[key(byID[a.NodeID])]++
		}
	}
	return out
}

func byDC(n *structs.Node) string { return n.Datacenter }

// A spread over two datacenters places by its targets' percentages: 50/50
// evenly, 70/30 proportionally, and with no targets evenly. This is how a
// fleet keeps a service alive in both sites when one site's link drops.
func TestServiceSched_SpreadTargets(t *testing.T) {
	cases := []struct {
		name    string
		targets []*structs.SpreadTarget
		want    map[string]int
	}{
		{"50/50", []*structs.SpreadTarget{{Value: "dc1", Percent: 50}, {Value: "dc2", Percent: 50}}, map[string]int{"dc1": 5, "dc2": 5}},
		{"70/30", []*structs.SpreadTarget{{Value: "dc1", Percent: 70}, {Value: "dc2", Percent: 30}}, map[string]int{"dc1": 7, "dc2": 3}},
		{"70 and the rest", []*structs.SpreadTarget{{Value: "dc1", Percent: 70}}, map[string]int{"dc1": 7, "dc2": 3}},
		{"even, no targets", nil, map[string]int{"dc1": 5, "dc2": 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			nodes := nodesIn(10, "dc1", "dc2")
			h.UpsertNodes(nodes...)
			job := mock.Job()
			job.Datacenters = []string{"dc1", "dc2"}
			job.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100, SpreadTarget: tc.targets}}
			_, eval := registerJob(t, h, job)
			must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
			must.Eq(t, tc.want, placedPer(t, h, nodes, byDC))
		})
	}
}

// A group-level spread counts the allocations already running: a job that
// scales from 4 (all in dc1) to 8 puts the 4 new ones in dc2. (Changing a
// spread itself is a destructive update, as upstream.)
func TestServiceSched_SpreadCountsExisting(t *testing.T) {
	h := schedtest.NewHarness(t)
	nodes := nodesIn(6, "dc1", "dc2")
	h.UpsertNodes(nodes...)
	job := mock.Job()
	job.Datacenters = []string{"dc1", "dc2"}
	job.TaskGroups[0].Count = 4
	job.TaskGroups[0].Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100}}
	job = h.UpsertJob(job)
	var existing []*structs.Allocation
	for i := range 4 {
		a := mock.AllocForNode(nodes[i])
		a.Job, a.JobID = job, job.ID
		a.Name = structs.AllocName(job.ID, job.TaskGroups[0].Name, uint(i))
		a.ClientStatus = structs.AllocClientStatusRunning
		existing = append(existing, a)
	}
	h.UpsertAllocs(existing...)

	scaled := job.Copy()
	scaled.TaskGroups[0].Count = 8
	_, eval := registerJob(t, h, scaled)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	must.Eq(t, map[string]int{"dc2": 4}, placedPer(t, h, nodes, byDC))
}

// distinct_property with a value caps the allocations per property value:
// at most 2 per rack over 3 racks places 6 of 8 and says why the rest do
// not fit; without a value the cap is 1.
func TestServiceSched_DistinctPropertyLimit(t *testing.T) {
	for _, tc := range []struct {
		value         string
		limit, placed int
	}{{"2", 2, 6}, {"", 1, 3}} {
		t.Run("value="+tc.value, func(t *testing.T) {
			h := schedtest.NewHarness(t)
			var nodes []*structs.Node
			for i := range 6 {
				n := mock.Node()
				n.Meta = map[string]string{"rack": fmt.Sprintf("r%d", i%3)}
				nodes = append(nodes, n)
			}
			h.UpsertNodes(nodes...)
			job := mock.Job()
			job.TaskGroups[0].Count = 8
			job.TaskGroups[0].Constraints = append(job.TaskGroups[0].Constraints, &structs.Constraint{
				Operand: structs.ConstraintDistinctProperty, LTarget: "${meta.rack}", RTarget: tc.value})
			_, eval := registerJob(t, h, job)
			must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
			perRack := placedPer(t, h, nodes, func(n *structs.Node) string { return n.Meta["rack"] })
			total := 0
			for rack, n := range perRack {
				must.LessEq(t, tc.limit, n, must.Sprintf("rack %s over its limit", rack))
				total += n
			}
			must.Eq(t, tc.placed, total)
			failed := h.LastEval().FailedTGAllocs["web"]
			must.NotNil(t, failed)
			must.MapContainsKey(t, failed.ConstraintFiltered, "${meta.rack} distinct_property "+tc.value)
		})
	}
}

// A job runs only on the nodes of its pool; "all" runs anywhere; the
// system scheduler obeys the pool too.
func TestScheduler_NodePoolFiltering(t *testing.T) {
	mk := func(pool string) *structs.Node {
		n := mock.Node()
		n.NodePool = pool
		return n
	}
	nodes := []*structs.Node{mk("default"), mk("edge"), mk("edge"), mk("lab")}
	pools := func(h *schedtest.Harness) map[string]int {
		return placedPer(t, h, nodes, func(n *structs.Node) string { return n.NodePool })
	}

	h := schedtest.NewHarness(t)
	h.UpsertNodes(nodes...)
	job := mock.Job()
	job.NodePool = "edge"
	job.TaskGroups[0].Count = 4
	_, eval := registerJob(t, h, job)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	must.Eq(t, map[string]int{"edge": 4}, pools(h))

	h = schedtest.NewHarness(t)
	h.UpsertNodes(nodes...)
	sys := systemJob(structs.JobTypeSystem, 0)
	sys.NodePool = "edge"
	_, eval = registerJob(t, h, sys)
	must.NoError(t, h.Process(scheduler.NewSystemScheduler, eval))
	must.Eq(t, map[string]int{"edge": 2}, pools(h))

	h = schedtest.NewHarness(t)
	h.UpsertNodes(nodes...)
	sys = systemJob(structs.JobTypeSystem, 0)
	sys.NodePool = structs.NodePoolAll
	_, eval = registerJob(t, h, sys)
	must.NoError(t, h.Process(scheduler.NewSystemScheduler, eval))
	must.Eq(t, map[string]int{"default": 1, "edge": 2, "lab": 1}, pools(h))
}

// An allocation placed in a pool with a disconnect policy carries that
// policy, so every later decision about it reads the same window; one
// placed where the pool has none carries nothing.
func TestServiceSched_StampsPoolDisconnectPolicy(t *testing.T) {
	h := schedtest.NewHarness(t)
	n := mock.Node()
	n.NodePool = "edge"
	h.UpsertNodes(n)
	must.NoError(t, h.State.UpsertNodePools(h.NextIndex(), []*structs.NodePool{{Name: "edge",
		Disconnect: &structs.NodePoolDisconnect{LostAfter: time.Hour, Reconcile: structs.ReconcileOptionKeepOriginal}}}))
	job := mock.Job()
	job.NodePool = "edge"
	job.TaskGroups[0].Count = 1
	_, eval := registerJob(t, h, job)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	placed := schedtest.PlacedAllocs(h.Plans[0])
	must.Len(t, 1, placed)
	p := placed[0].DisconnectPolicy()
	must.Eq(t, structs.DisconnectSourceNodePool, p.Source)
	must.Eq(t, time.Hour, p.LostAfter)
	must.Eq(t, structs.ReconcileOptionKeepOriginal, p.Reconcile)
}

// For any split of 100% between two datacenters and any count, a spread
// with enough nodes places each datacenter's share to within one
// allocation of its target: the property an operator relies on when
// sizing each site for its share of the work.
func TestServiceSched_SpreadProportional_Property(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		count := rapid.IntRange(1, 20).Draw(rt, "count")
		p1 := rapid.IntRange(0, 100).Draw(rt, "percent_dc1")
		h := schedtest.NewHarness(t)
		nodes := nodesIn(20, "dc1", "dc2")
		h.UpsertNodes(nodes...)
		job := mock.Job()
		job.Datacenters = []string{"dc1", "dc2"}
		job.TaskGroups[0].Count = count
		job.Spreads = []*structs.Spread{{Attribute: "${node.datacenter}", Weight: 100, SpreadTarget: []*structs.SpreadTarget{
			{Value: "dc1", Percent: uint8(p1)}, {Value: "dc2", Percent: uint8(100 - p1)}}}}
		_, eval := registerJob(t, h, job)
		must.NoError(rt, h.Process(scheduler.NewServiceScheduler, eval))
		got := placedPer(t, h, nodes, byDC)
		must.Eq(rt, count, got["dc1"]+got["dc2"])
		want := float64(p1) * float64(count) / 100
		must.LessEq(rt, 1.0, math.Abs(float64(got["dc1"])-want), must.Sprintf("dc1 got %d, target %.1f", got["dc1"], want))
	})
}
