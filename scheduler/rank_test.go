package scheduler

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func ranked(nodes ...*structs.Node) []*rankedNode {
	out := make([]*rankedNode, len(nodes))
	for i, n := range nodes {
		out[i] = &rankedNode{Node: n}
	}
	return out
}

func collectRanked(it rankIterator) []*rankedNode {
	var out []*rankedNode
	for o := it.Next(); o != nil; o = it.Next() {
		out = append(out, o)
	}
	return out
}

// Bin packing prefers the fuller node and drops the node without room,
// charging unknown allocations (their tasks may still run) and the plan's
// own placements.
func TestBinPackIterator(t *testing.T) {
	empty, busy, full := mock.Node(), mock.Node(), mock.Node()
	ctx, st := testContext(t, empty, busy, full)
	job := mock.Job()
	tg := job.TaskGroups[0] // 500 MHz, 256 MB per allocation

	onBusy := mock.AllocForNode(busy)
	onBusy.ClientStatus = structs.AllocClientStatusUnknown
	// The full node has 3900 MHz schedulable: 7 allocations leave 400.
	var onFull []*structs.Allocation
	for range 7 {
		onFull = append(onFull, mock.AllocForNode(full))
	}
	must.NoError(t, st.UpsertAllocs(300, append(onFull, onBusy)))

	it := newBinPackIterator(ctx, newStaticRankIterator(ranked(empty, busy, full)))
	it.SetTaskGroup(tg)
	out := collectRanked(it)
	must.Len(t, 2, out)
	must.Eq(t, empty.ID, out[0].Node.ID)
	must.Eq(t, busy.ID, out[1].Node.ID)
	must.Greater(t, out[0].scores[0], out[1].scores[0], must.Sprint("the busier node scores higher"))
	must.Len(t, 1, out[1].proposed)
	m := ctx.Metrics()
	must.Eq(t, 1, m.NodesExhausted)
	must.Eq(t, 1, m.DimensionExhausted["cpu"])

	// Planning onto the empty node makes it count.
	before := out[0].scores[0]
	ctx.Plan().AppendAlloc(mock.AllocForNode(empty))
	it.Reset()
	again := collectRanked(it)
	must.Greater(t, before, again[0].scores[len(again[0].scores)-1])
}

// With the operator's scheduler_algorithm "spread" the order reverses:
// the emptier node scores higher, so a group's instances go where the
// loss of one node costs the least, as upstream's spread.
func TestBinPackIterator_Spread(t *testing.T) {
	empty, busy := mock.Node(), mock.Node()
	_, st := testContext(t, empty, busy)
	must.NoError(t, st.UpsertAllocs(300, []*structs.Allocation{mock.AllocForNode(busy), mock.AllocForNode(busy)}))
	score := func() map[string]float64 {
		ctx := NewEvalContext(st, &structs.Plan{}, nil)
		it := newBinPackIterator(ctx, newStaticRankIterator(ranked(empty, busy)))
		it.SetTaskGroup(mock.Job().TaskGroups[0])
		out := map[string]float64{}
		for _, o := range collectRanked(it) {
			out[o.Node.ID] = o.scores[0]
		}
		return out
	}
	packed := score()
	must.Greater(t, packed[empty.ID], packed[busy.ID], must.Sprint("binpack, the default: the busier node"))

	cfg := structs.DefaultSchedulerConfiguration()
	cfg.SchedulerAlgorithm = structs.SchedulerAlgorithmSpread
	_, err := st.SchedulerSetConfig(301, cfg, false)
	must.NoError(t, err)
	spread := score()
	must.Greater(t, spread[busy.ID], spread[empty.ID], must.Sprint("spread: the emptier node"))
	must.Eq(t, 1-packed[empty.ID], spread[empty.ID])
}

// The bin-pack score stays in [0, 1]: empty is 0, full is 1.
func TestBinPackScore_Bounds(t *testing.T) {
	capacity := &structs.ComparableResources{CPUShares: 1000, MemoryMB: 1000}
	must.Eq(t, 0.0, binPackScore(capacity, &structs.ComparableResources{}))
	must.Eq(t, 1.0, binPackScore(capacity, &structs.ComparableResources{CPUShares: 1000, MemoryMB: 1000}))
	half := binPackScore(capacity, &structs.ComparableResources{CPUShares: 500, MemoryMB: 500})
	must.Between(t, 0.0, half, 1.0)
}

// Anti-affinity penalises nodes holding the group, more with more.
func TestJobAntiAffinityIterator(t *testing.T) {
	ctx, _ := testContext(t)
	job := mock.Job()
	a, b, c := mock.Node(), mock.Node(), mock.Node()
	opts := ranked(a, b, c)
	mk := func(n int) []*structs.Allocation {
		var out []*structs.Allocation
		for range n {
			al := mock.Alloc()
			al.JobID, al.TaskGroup = job.ID, "web"
			out = append(out, al)
		}
		return out
	}
	opts[1].proposed = mk(1)
	opts[2].proposed = mk(3)
	it := newJobAntiAffinityIterator(ctx, newStaticRankIterator(opts))
	it.SetTaskGroup(job.ID, job.TaskGroups[0])
	out := collectRanked(it)
	must.SliceEmpty(t, out[0].scores)
	must.Eq(t, []float64{-0.2}, out[1].scores)
	must.Eq(t, []float64{-0.4}, out[2].scores)
}

// A rescheduled allocation is steered away from the node it failed on.
func TestReschedulePenaltyIterator(t *testing.T) {
	ctx, _ := testContext(t)
	a, b := mock.Node(), mock.Node()
	it := newReschedulePenaltyIterator(ctx, newStaticRankIterator(ranked(a, b)))
	it.SetPenaltyNodes(map[string]bool{b.ID: true})
	out := collectRanked(it)
	must.SliceEmpty(t, out[0].scores)
	must.Eq(t, []float64{-1}, out[1].scores)
}

// Affinities score the matched weights over the total weight.
func TestNodeAffinityIterator(t *testing.T) {
	ctx, _ := testContext(t)
	a, b := mock.Node(), mock.Node()
	b.Datacenter = "dc2"
	it := newNodeAffinityIterator(ctx, newStaticRankIterator(ranked(a, b)))
	it.SetAffinities([]*structs.Affinity{
		{LTarget: "${node.datacenter}", RTarget: "dc2", Operand: "=", Weight: 75},
		{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "=", Weight: -25},
	})
	out := collectRanked(it)
	must.Eq(t, []float64{-0.25}, out[0].scores)
	must.Eq(t, []float64{0.5}, out[1].scores)
}

// The final score is the mean of the scores that apply, and is recorded.
func TestScoreNormalizationIterator(t *testing.T) {
	ctx, _ := testContext(t)
	a, b := mock.Node(), mock.Node()
	opts := ranked(a, b)
	opts[0].scores = []float64{0.8, -0.4}
	it := newScoreNormalizationIterator(ctx, newStaticRankIterator(opts))
	out := collectRanked(it)
	must.InDelta(t, 0.2, out[0].FinalScore, 1e-9)
	must.Eq(t, 0.0, out[1].FinalScore)
	ctx.finishScores()
	must.Len(t, 2, ctx.Metrics().ScoreMetaData)
	must.Eq(t, a.ID, ctx.Metrics().ScoreMetaData[0].NodeID)
}

// The limit stops after n nodes, setting aside low scorers while better
// ones may follow and falling back to them when none do.
func TestLimitIterator(t *testing.T) {
	nodes := ranked(mock.Node(), mock.Node(), mock.Node(), mock.Node())
	nodes[0].FinalScore = -0.9
	nodes[1].FinalScore = 0.3
	nodes[2].FinalScore = 0.1
	nodes[3].FinalScore = 0.6
	it := newLimitIterator(newStaticRankIterator(nodes), 2, skipThreshold, maxSkip)
	out := collectRanked(it)
	must.Eq(t, []*rankedNode{nodes[1], nodes[2]}, out)

	low := ranked(mock.Node(), mock.Node())
	low[0].FinalScore, low[1].FinalScore = -0.9, -0.8
	it = newLimitIterator(newStaticRankIterator(low), 2, skipThreshold, maxSkip)
	must.Eq(t, low, collectRanked(it))
}

// The best score wins; ties keep the first seen, so the seeded shuffle
// decides them reproducibly.
func TestMaxScoreIterator(t *testing.T) {
	nodes := ranked(mock.Node(), mock.Node(), mock.Node())
	nodes[0].FinalScore, nodes[1].FinalScore, nodes[2].FinalScore = 0.1, 0.7, 0.7
	it := newMaxScoreIterator(newStaticRankIterator(nodes))
	must.Eq(t, nodes[1], it.Next(), must.Sprint("ties go to the first seen"))
	must.Nil(t, it.Next())
	it.Reset()
	must.Eq(t, nodes[1], it.Next())
}

// The stack's limit is log2 of the candidates (at least two), two for
// batch, everything when affinities are in play.
func TestGenericStack_Limit(t *testing.T) {
	ctx, _ := testContext(t)
	s := newGenericStack(false, ctx)
	var nodes []*structs.Node
	for range 100 {
		nodes = append(nodes, mock.Node())
	}
	s.SetNodes(&readyNodes{nodes: nodes}, 1)
	must.Eq(t, 7, s.limitFor(0))
	must.Eq(t, 100, s.limitFor(1))
	s.SetNodes(&readyNodes{nodes: nodes[:2]}, 1)
	must.Eq(t, 2, s.limitFor(0))
	b := newGenericStack(true, ctx)
	b.SetNodes(&readyNodes{nodes: nodes}, 1)
	must.Eq(t, 2, b.limitFor(0))
}

// Select picks a feasible node and fills the metrics a user reads.
func TestGenericStack_Select(t *testing.T) {
	good, noDriver := mock.Node(), mock.Node()
	noDriver.Drivers = map[string]*structs.DriverInfo{}
	noDriver.Attributes = map[string]string{}
	ctx, _ := testContext(t, good, noDriver)
	job := mock.Job()
	s := newGenericStack(false, ctx)
	s.SetNodes(&readyNodes{nodes: []*structs.Node{good, noDriver}, byDC: map[string]int{"dc1": 2}, inPool: 2}, 7)
	s.SetJob(job)
	opt := s.Select(job.TaskGroups[0], selectOptions{})
	must.NotNil(t, opt)
	must.Eq(t, good.ID, opt.Node.ID)
	m := ctx.Metrics()
	must.Eq(t, 2, m.NodesEvaluated)
	must.Eq(t, 1, m.ConstraintFiltered[filterMissingDriver])
	must.Eq(t, 2, m.NodesAvailable["dc1"])
	must.Len(t, 1, m.ScoreMetaData)
}
