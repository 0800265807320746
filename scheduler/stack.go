package scheduler

import (
	"math"

	"github.com/nomad-edge/nomad/nomad/structs"
)

const (
	// minLimit is the fewest scored nodes a selection compares.
	minLimit = 2
	// skipThreshold and maxSkip: see newLimitIterator.
	skipThreshold = -0.5
	maxSkip       = 3
)

// selectOptions tune one selection.
type selectOptions struct {
	// penaltyNodes are nodes the replaced allocations failed on.
	penaltyNodes map[string]bool
}

// genericStack selects a node for one allocation of a service or batch
// group. It is built once per evaluation; SetNodes and SetJob prepare it,
// Select runs the chain.
type genericStack struct {
	batch bool
	ctx   *EvalContext

	source        *staticIterator
	datacenters   *datacenterChecker
	pool          *nodePoolChecker
	jobConstraint *constraintChecker
	drivers       *driverChecker
	hostVolumes   *hostVolumeChecker
	tgConstraint  *constraintChecker
	distinctHosts *distinctHostsChecker
	distinctProp  *distinctPropertyChecker
	ports         *portChecker

	binPack      *binPackIterator
	antiAffinity *jobAntiAffinityIterator
	penalty      *reschedulePenaltyIterator
	affinity     *nodeAffinityIterator
	spread       *spreadIterator
	limit        *limitIterator
	maxScore     *maxScoreIterator

	job            *structs.Job
	nodeCount      int
	nodesAvailable map[string]int
	nodesInPool    int
}

// newGenericStack wires the chain.
// TODO(perf): feasibility is re-checked per node on every selection;
// upstream caches it per computed node class. Filters run cheapest first; scorers
// each add one score in [-1, 1]; the limit bounds the work; the best wins.
func newGenericStack(batch bool, ctx *EvalContext) *genericStack {
	s := &genericStack{batch: batch, ctx: ctx}
	s.source = newStaticIterator(ctx, nil)
	s.datacenters = newDatacenterChecker(ctx)
	s.pool = newNodePoolChecker(ctx)
	s.jobConstraint = newConstraintChecker(ctx, nil)
	s.drivers = newDriverChecker(ctx)
	s.hostVolumes = newHostVolumeChecker(ctx)
	s.tgConstraint = newConstraintChecker(ctx, nil)
	s.distinctHosts = newDistinctHostsChecker(ctx)
	s.distinctProp = newDistinctPropertyChecker(ctx)
	s.ports = newPortChecker(ctx)
	feasible := newFeasibilityWrapper(s.source,
		s.datacenters, s.pool, s.jobConstraint, s.drivers, s.hostVolumes, s.tgConstraint, s.distinctHosts, s.distinctProp, s.ports)

	s.binPack = newBinPackIterator(ctx, newFeasibleRankIterator(feasible))
	s.antiAffinity = newJobAntiAffinityIterator(ctx, s.binPack)
	s.penalty = newReschedulePenaltyIterator(ctx, s.antiAffinity)
	s.affinity = newNodeAffinityIterator(ctx, s.penalty)
	s.spread = newSpreadIterator(ctx, s.affinity)
	norm := newScoreNormalizationIterator(ctx, s.spread)
	s.limit = newLimitIterator(norm, minLimit, skipThreshold, maxSkip)
	s.maxScore = newMaxScoreIterator(s.limit)
	return s
}

// SetNodes sets the candidates, shuffled with seed.
func (s *genericStack) SetNodes(nodes *readyNodes, seed uint64) {
	s.source.SetNodes(nodes.nodes, seed)
	s.spread.SetNodes(nodes.nodes)
	s.nodeCount = len(nodes.nodes)
	s.nodesAvailable = nodes.byDC
	s.nodesInPool = nodes.inPool
}

// SetJob sets the job-level filters.
func (s *genericStack) SetJob(job *structs.Job) {
	s.job = job
	s.datacenters.SetDatacenters(job.Datacenters)
	s.pool.SetPool(job.NodePool)
	s.jobConstraint.SetConstraints(job.Constraints)
	s.binPack.SetJob(job)
}

// limitFor is log2 of the candidates for services (enough to find a good
// fit cheaply), two for batch (throughput over placement quality), and
// every node when the group has affinities or spreads, which only pay off
// if looked for.
func (s *genericStack) limitFor(preferences int) int {
	if preferences > 0 {
		return max(s.nodeCount, minLimit)
	}
	if s.batch || s.nodeCount == 0 {
		return minLimit
	}
	return max(int(math.Ceil(math.Log2(float64(s.nodeCount)))), minLimit)
}

// Select returns the best node for one allocation of tg, or nil; the
// context's metrics say why.
func (s *genericStack) Select(tg *structs.TaskGroup, opts selectOptions) *rankedNode {
	s.ctx.resetMetrics()
	m := s.ctx.Metrics()
	m.NodesAvailable = s.nodesAvailable
	m.NodesInPool = s.nodesInPool

	var constraints []*structs.Constraint
	constraints = append(constraints, tg.Constraints...)
	affinities := append([]*structs.Affinity(nil), s.job.Affinities...)
	affinities = append(affinities, tg.Affinities...)
	for _, t := range tg.Tasks {
		constraints = append(constraints, t.Constraints...)
		affinities = append(affinities, t.Affinities...)
	}
	s.tgConstraint.SetConstraints(constraints)
	s.drivers.SetTaskGroup(tg)
	s.hostVolumes.SetTaskGroup(tg)
	s.distinctHosts.SetTaskGroup(s.job, tg)
	s.distinctProp.SetTaskGroup(s.job, tg)
	s.spread.SetTaskGroup(s.job, tg)
	s.ports.SetTaskGroup(tg)
	s.binPack.SetTaskGroup(tg)
	s.antiAffinity.SetTaskGroup(s.job.ID, tg)
	s.penalty.SetPenaltyNodes(opts.penaltyNodes)
	s.affinity.SetAffinities(affinities)
	s.limit.SetLimit(s.limitFor(len(affinities) + len(s.job.Spreads) + len(tg.Spreads)))

	s.maxScore.Reset()
	best := s.maxScore.Next()
	s.ctx.finishScores()
	return best
}
