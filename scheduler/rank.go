package scheduler

import (
	"math"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Scorer names, as recorded in NodeScoreMeta.Scores.
const (
	scorerBinPack           = "binpack"
	scorerJobAntiAffinity   = "job-anti-affinity"
	scorerReschedulePenalty = "node-reschedule-penalty"
	scorerNodeAffinity      = "node-affinity"
)

// rankedNode is a feasible node with its scores so far.
type rankedNode struct {
	Node *structs.Node
	// scores holds the scores that apply to this node, each in [-1, 1];
	// the final score is their mean.
	scores     []float64
	FinalScore float64
	// proposed are the allocations on the node once the plan applies.
	proposed []*structs.Allocation
	// preempted are the allocations to evict for the placement to fit;
	// nil when it fits as it is.
	preempted []*structs.Allocation
}

// rankIterator yields scored nodes.
type rankIterator interface {
	Next() *rankedNode
	Reset()
}

// feasibleRankIterator turns feasible nodes into unscored ranked nodes.
type feasibleRankIterator struct {
	source feasibleIterator
}

// newFeasibleRankIterator is the seam between filtering and scoring.
func newFeasibleRankIterator(source feasibleIterator) *feasibleRankIterator {
	return &feasibleRankIterator{source: source}
}

func (it *feasibleRankIterator) Next() *rankedNode {
	n := it.source.Next()
	if n == nil {
		return nil
	}
	return &rankedNode{Node: n}
}

func (it *feasibleRankIterator) Reset() { it.source.Reset() }

// staticRankIterator yields fixed ranked nodes; for tests of single stages.
type staticRankIterator struct {
	nodes []*rankedNode
	i     int
}

func newStaticRankIterator(nodes []*rankedNode) *staticRankIterator {
	return &staticRankIterator{nodes: nodes}
}

func (it *staticRankIterator) Next() *rankedNode {
	if it.i >= len(it.nodes) {
		return nil
	}
	it.i++
	return it.nodes[it.i-1]
}

func (it *staticRankIterator) Reset() { it.i = 0 }

// binPackIterator drops nodes without room for the group and scores the
// others by how full they would be. With preemption on for the job's
// type, a node without room is kept if evicting lower priority work makes
// room; it then scores below every node that fits without.
type binPackIterator struct {
	ctx    *EvalContext
	source rankIterator
	ask    *structs.ComparableResources
	// spread scores the emptier node higher: the operator's
	// scheduler_algorithm "spread".
	spread bool
	// job is the placing job; preempt whether its scheduler may evict.
	job     *structs.Job
	preempt bool
}

// newBinPackIterator packs work onto busy nodes so that whole nodes stay
// free for large groups (and can be drained or powered off), or, with the
// operator's scheduler_algorithm "spread", onto the emptiest ones, so
// that a lost node takes as little as it can. Unknown allocations hold
// their resources: their tasks may still run.
func newBinPackIterator(ctx *EvalContext, source rankIterator) *binPackIterator {
	return &binPackIterator{
		ctx: ctx, source: source, ask: &structs.ComparableResources{},
		spread: ctx.schedulerConfig().SchedulerAlgorithm == structs.SchedulerAlgorithmSpread,
	}
}

// SetJob sets the placing job, whose type decides whether it may preempt.
func (it *binPackIterator) SetJob(job *structs.Job) {
	it.job = job
	it.preempt = it.ctx.schedulerConfig().PreemptionEnabled(job.Type)
}

// SetTaskGroup sets what one allocation of the group needs.
func (it *binPackIterator) SetTaskGroup(tg *structs.TaskGroup) {
	it.ask = it.ctx.allocatedResources(tg).Comparable()
}

func (it *binPackIterator) Next() *rankedNode {
	for {
		opt := it.source.Next()
		if opt == nil {
			return nil
		}
		proposed, err := it.ctx.ProposedAllocs(opt.Node.ID)
		if err != nil {
			it.ctx.logger.Error("binpack: reading proposed allocations", "node_id", opt.Node.ID, "error", err)
			continue
		}
		if max := opt.Node.NodeMaxAllocs; max > 0 && len(proposed)+1 > max {
			it.ctx.exhaustNode(opt.Node, structs.DimensionMaxAllocs)
			continue
		}
		used := &structs.ComparableResources{}
		for _, a := range proposed {
			used.Add(a.ComparableResources())
		}
		used.Add(it.ask)
		capacity := opt.Node.Comparable()
		var preempted []*structs.Allocation
		if fit, dim := capacity.Superset(used); !fit {
			if it.preempt && it.job != nil {
				preempted = selectPreemptions(preemptionInput{Capacity: capacity, Used: used, Proposed: proposed, Job: it.job})
			}
			if preempted == nil {
				it.ctx.exhaustNode(opt.Node, dim)
				continue
			}
			for _, a := range preempted {
				used = subtracted(used, a.ComparableResources())
			}
			proposed = withoutAllocs(proposed, preempted)
		}
		score := binPackScore(capacity, used)
		if it.spread {
			score = 1 - score
		}
		opt.proposed, opt.preempted = proposed, preempted
		it.ctx.scoreNode(opt.Node, scorerBinPack, score)
		if preempted != nil {
			score = preemptionScore(preempted)
			it.ctx.scoreNode(opt.Node, scorerPreemption, score)
		}
		opt.scores = append(opt.scores, score)
		return opt
	}
}

func (it *binPackIterator) Reset() { it.source.Reset() }

// binPackScore maps utilisation to [0, 1]: each free fraction f of CPU
// and memory costs 10^f, so an empty node costs 20 and a full one 2; the
// score is how far below the worst the cost is, over the range of 18.
func binPackScore(capacity, used *structs.ComparableResources) float64 {
	free := func(have, take int64) float64 {
		if have <= 0 {
			return 0
		}
		return 1 - float64(take)/float64(have)
	}
	cost := math.Pow(10, free(capacity.CPUShares, used.CPUShares)) +
		math.Pow(10, free(capacity.MemoryMB, used.MemoryMB))
	return clamp((20-cost)/18, 0, 1)
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

// jobAntiAffinityIterator penalises nodes already running the group.
type jobAntiAffinityIterator struct {
	ctx          *EvalContext
	source       rankIterator
	jobID, group string
	desired      int
}

// newJobAntiAffinityIterator spreads a group's instances so one lost node
// takes few of them: the penalty grows with the instances already there.
func newJobAntiAffinityIterator(ctx *EvalContext, source rankIterator) *jobAntiAffinityIterator {
	return &jobAntiAffinityIterator{ctx: ctx, source: source}
}

func (it *jobAntiAffinityIterator) SetTaskGroup(jobID string, tg *structs.TaskGroup) {
	it.jobID, it.group, it.desired = jobID, tg.Name, max(tg.Count, 1)
}

func (it *jobAntiAffinityIterator) Next() *rankedNode {
	opt := it.source.Next()
	if opt == nil {
		return nil
	}
	collisions := 0
	for _, a := range opt.proposed {
		if a.JobID == it.jobID && a.TaskGroup == it.group {
			collisions++
		}
	}
	penalty := 0.0
	if collisions > 0 {
		penalty = clamp(-float64(collisions+1)/float64(it.desired), -1, 0)
		opt.scores = append(opt.scores, penalty)
	}
	it.ctx.scoreNode(opt.Node, scorerJobAntiAffinity, penalty)
	return opt
}

func (it *jobAntiAffinityIterator) Reset() { it.source.Reset() }

// reschedulePenaltyIterator penalises the nodes a replacement's
// predecessors failed on.
type reschedulePenaltyIterator struct {
	ctx     *EvalContext
	source  rankIterator
	penalty map[string]bool
}

// newReschedulePenaltyIterator steers a rescheduled allocation away from
// the node it just failed on, without forbidding it.
func newReschedulePenaltyIterator(ctx *EvalContext, source rankIterator) *reschedulePenaltyIterator {
	return &reschedulePenaltyIterator{ctx: ctx, source: source}
}

func (it *reschedulePenaltyIterator) SetPenaltyNodes(ids map[string]bool) { it.penalty = ids }

func (it *reschedulePenaltyIterator) Next() *rankedNode {
	opt := it.source.Next()
	if opt == nil {
		return nil
	}
	if it.penalty[opt.Node.ID] {
		opt.scores = append(opt.scores, -1)
		it.ctx.scoreNode(opt.Node, scorerReschedulePenalty, -1)
	}
	return opt
}

func (it *reschedulePenaltyIterator) Reset() { it.source.Reset() }

// nodeAffinityIterator scores nodes by the user's affinities.
type nodeAffinityIterator struct {
	ctx        *EvalContext
	source     rankIterator
	affinities []*structs.Affinity
	total      float64
}

// newNodeAffinityIterator turns soft preferences into a score in [-1, 1]:
// the matched weights over the sum of all weights' magnitudes.
func newNodeAffinityIterator(ctx *EvalContext, source rankIterator) *nodeAffinityIterator {
	return &nodeAffinityIterator{ctx: ctx, source: source}
}

func (it *nodeAffinityIterator) SetAffinities(affs []*structs.Affinity) {
	it.affinities, it.total = affs, 0
	for _, a := range affs {
		it.total += math.Abs(float64(a.Weight))
	}
}

func (it *nodeAffinityIterator) Next() *rankedNode {
	opt := it.source.Next()
	if opt == nil || it.total == 0 {
		return opt
	}
	sum := 0.0
	for _, a := range it.affinities {
		if constraintMet(it.ctx, a.Operand, a.LTarget, a.RTarget, opt.Node) {
			sum += float64(a.Weight)
		}
	}
	if sum != 0 {
		score := sum / it.total
		opt.scores = append(opt.scores, score)
		it.ctx.scoreNode(opt.Node, scorerNodeAffinity, score)
	}
	return opt
}

func (it *nodeAffinityIterator) Reset() { it.source.Reset() }

// scoreNormalizationIterator sets the final score: the mean of the scores
// that apply to the node.
type scoreNormalizationIterator struct {
	ctx    *EvalContext
	source rankIterator
}

// newScoreNormalizationIterator keeps scorers comparable: each is in
// [-1, 1], and a scorer that does not apply to a node does not dilute it.
func newScoreNormalizationIterator(ctx *EvalContext, source rankIterator) *scoreNormalizationIterator {
	return &scoreNormalizationIterator{ctx: ctx, source: source}
}

func (it *scoreNormalizationIterator) Next() *rankedNode {
	opt := it.source.Next()
	if opt == nil {
		return nil
	}
	sum := 0.0
	for _, s := range opt.scores {
		sum += s
	}
	if len(opt.scores) > 0 {
		opt.FinalScore = sum / float64(len(opt.scores))
	}
	it.ctx.normScoreNode(opt.Node, opt.FinalScore)
	return opt
}

func (it *scoreNormalizationIterator) Reset() { it.source.Reset() }

// limitIterator stops a selection after a few scored nodes.
type limitIterator struct {
	source    rankIterator
	limit     int
	threshold float64
	maxSkip   int
	seen      int
	skipped   []*rankedNode
}

// newLimitIterator bounds the work of a placement (the power of a few
// random choices is nearly as good as looking at every node). Up to
// maxSkip nodes scoring at or below threshold are set aside so that a
// penalised node does not use up the limit; they are returned only if
// nothing better comes.
func newLimitIterator(source rankIterator, limit int, threshold float64, maxSkip int) *limitIterator {
	return &limitIterator{source: source, limit: limit, threshold: threshold, maxSkip: maxSkip}
}

func (it *limitIterator) SetLimit(n int) { it.limit = n }

func (it *limitIterator) Next() *rankedNode {
	if it.seen >= it.limit {
		return nil
	}
	for {
		opt := it.source.Next()
		if opt == nil {
			break
		}
		if opt.FinalScore <= it.threshold && len(it.skipped) < it.maxSkip {
			it.skipped = append(it.skipped, opt)
			continue
		}
		it.seen++
		return opt
	}
	if len(it.skipped) == 0 {
		return nil
	}
	opt := it.skipped[0]
	it.skipped = it.skipped[1:]
	it.seen++
	return opt
}

func (it *limitIterator) Reset() {
	it.source.Reset()
	it.seen = 0
	it.skipped = nil
}

// maxScoreIterator returns the best of its source's nodes.
type maxScoreIterator struct {
	source rankIterator
	done   bool
}

// newMaxScoreIterator makes the final choice; ties go to the node seen
// first, which the seeded shuffle made random but reproducible.
func newMaxScoreIterator(source rankIterator) *maxScoreIterator {
	return &maxScoreIterator{source: source}
}

func (it *maxScoreIterator) Next() *rankedNode {
	if it.done {
		return nil
	}
	it.done = true
	var best *rankedNode
	for opt := it.source.Next(); opt != nil; opt = it.source.Next() {
		if best == nil || opt.FinalScore > best.FinalScore {
			best = opt
		}
	}
	return best
}

func (it *maxScoreIterator) Reset() {
	it.source.Reset()
	it.done = false
}
