package scheduler

import (
	"fmt"
	"regexp"
	"sort"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-version"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// maxScoreMetaData is how many of the best node scores a placement records.
const maxScoreMetaData = 5

// EvalContext is what the feasibility and ranking iterators share during
// one evaluation: the state snapshot, the plan being built (so that a node
// is charged for what this evaluation already put on it), the metrics of
// the current selection, and caches of parsed constraint operands.
type EvalContext struct {
	state   State
	plan    *structs.Plan
	logger  hclog.Logger
	metrics *structs.AllocMetric
	scores  map[string]*structs.NodeScoreMeta

	regexps  map[string]*regexp.Regexp
	versions map[string]version.Constraints
	pools    map[string]*structs.PoolDisconnect
	nodes    map[string]*structs.Node
	// live caches each node's non-terminal allocations in state: the
	// snapshot does not change during an attempt, and bin packing asks
	// for the same candidate nodes once per placement.
	live map[string][]*structs.Allocation
	// config is the operator's scheduler configuration, read once.
	config *structs.SchedulerConfiguration
}

// NewEvalContext returns a context over state that charges nodes for the
// allocations in plan.
func NewEvalContext(state State, plan *structs.Plan, logger hclog.Logger) *EvalContext {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	c := &EvalContext{
		state: state, plan: plan, logger: logger,
		regexps: map[string]*regexp.Regexp{}, versions: map[string]version.Constraints{},
		pools: map[string]*structs.PoolDisconnect{}, nodes: map[string]*structs.Node{},
		live: map[string][]*structs.Allocation{},
	}
	c.resetMetrics()
	return c
}

// Metrics returns the metrics of the current selection.
func (c *EvalContext) Metrics() *structs.AllocMetric { return c.metrics }

// Plan returns the plan being built.
func (c *EvalContext) Plan() *structs.Plan { return c.plan }

// schedulerConfig returns the operator's scheduler configuration, or
// upstream's default while none is stored (or it cannot be read: the
// default is what the cluster ran with before any was written).
func (c *EvalContext) schedulerConfig() *structs.SchedulerConfiguration {
	if c.config != nil {
		return c.config
	}
	_, cfg, err := c.state.SchedulerConfig(nil)
	if err != nil {
		c.logger.Error("reading the scheduler configuration; using the default", "error", err)
	}
	if err != nil || cfg == nil {
		cfg = structs.DefaultSchedulerConfiguration()
	}
	c.config = cfg
	return cfg
}

// allocatedResources is what one allocation of tg is given under the
// operator's configuration (see groupResources).
func (c *EvalContext) allocatedResources(tg *structs.TaskGroup) *structs.AllocatedResources {
	return groupResources(tg, resourceOptions{memoryOversubscription: c.schedulerConfig().MemoryOversubscriptionEnabled})
}

// resourceOptions are the operator's settings that shape an allocation's
// resources.
type resourceOptions struct {
	memoryOversubscription bool
}

// groupResources is what one allocation of tg is given, placed or updated
// in place. Without memory oversubscription a task's memory_max is
// ignored, as upstream: the allocation carries no MemoryMaxMB, so no
// driver enforces it.
func groupResources(tg *structs.TaskGroup, opts resourceOptions) *structs.AllocatedResources {
	r := structs.NewAllocatedResources(tg)
	if !opts.memoryOversubscription {
		for _, t := range r.Tasks {
			t.Memory.MemoryMaxMB = 0
		}
	}
	return r
}

func (c *EvalContext) resetMetrics() {
	c.metrics = &structs.AllocMetric{}
	c.scores = map[string]*structs.NodeScoreMeta{}
}

// ProposedAllocs returns the allocations that hold resources on the node
// once the plan is applied: its non-terminal allocations (unknown ones
// included: their tasks may well be running), minus the plan's stops and
// preemptions, with the plan's updates and placements.
func (c *EvalContext) ProposedAllocs(nodeID string) ([]*structs.Allocation, error) {
	existing, ok := c.live[nodeID]
	if !ok {
		var err error
		if existing, err = c.state.AllocsByNodeTerminal(nil, nodeID, false); err != nil {
			return nil, fmt.Errorf("listing allocations of node %s: %w", nodeID, err)
		}
		c.live[nodeID] = existing
	}
	gone := map[string]bool{}
	for _, a := range c.plan.NodeUpdate[nodeID] {
		gone[a.ID] = true
	}
	for _, a := range c.plan.NodePreemptions[nodeID] {
		gone[a.ID] = true
	}
	planned := c.plan.NodeAllocation[nodeID]
	for _, a := range planned {
		gone[a.ID] = true // replaced by the plan's version below
	}
	out := make([]*structs.Allocation, 0, len(existing)+len(planned))
	for _, a := range existing {
		if !gone[a.ID] && !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	for _, a := range planned {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out, nil
}

// filterNode records that a checker rejected node for reason.
func (c *EvalContext) filterNode(node *structs.Node, reason string) {
	m := c.metrics
	m.NodesFiltered++
	if m.ConstraintFiltered == nil {
		m.ConstraintFiltered = map[string]int{}
	}
	m.ConstraintFiltered[reason]++
	if node.NodeClass != "" {
		if m.ClassFiltered == nil {
			m.ClassFiltered = map[string]int{}
		}
		m.ClassFiltered[node.NodeClass]++
	}
}

// exhaustNode records that node lacked room in dimension.
func (c *EvalContext) exhaustNode(node *structs.Node, dimension string) {
	m := c.metrics
	m.NodesExhausted++
	if m.DimensionExhausted == nil {
		m.DimensionExhausted = map[string]int{}
	}
	m.DimensionExhausted[dimension]++
	if node.NodeClass != "" {
		if m.ClassExhausted == nil {
			m.ClassExhausted = map[string]int{}
		}
		m.ClassExhausted[node.NodeClass]++
	}
}

// scoreNode records one scorer's score of node.
func (c *EvalContext) scoreNode(node *structs.Node, scorer string, score float64) {
	meta, ok := c.scores[node.ID]
	if !ok {
		meta = &structs.NodeScoreMeta{NodeID: node.ID, Scores: map[string]float64{}}
		c.scores[node.ID] = meta
	}
	meta.Scores[scorer] = score
}

// normScoreNode records node's final, normalised score.
func (c *EvalContext) normScoreNode(node *structs.Node, score float64) {
	c.scoreNode(node, normScorer, score)
	c.scores[node.ID].NormScore = score
}

const normScorer = "normalized-score"

// finishScores keeps the best scored nodes in the metrics. The reconnect
// logic ("Resolution strategies", best_score, in
// docs/concepts/disconnected-clients.md) later compares these recorded
// scores.
func (c *EvalContext) finishScores() {
	metas := make([]*structs.NodeScoreMeta, 0, len(c.scores))
	for _, m := range c.scores {
		if _, normalised := m.Scores[normScorer]; normalised {
			delete(m.Scores, normScorer)
			metas = append(metas, m)
		}
	}
	sort.Slice(metas, func(i, j int) bool {
		if metas[i].NormScore != metas[j].NormScore {
			return metas[i].NormScore > metas[j].NormScore
		}
		return metas[i].NodeID < metas[j].NodeID
	})
	if len(metas) > maxScoreMetaData {
		metas = metas[:maxScoreMetaData]
	}
	c.metrics.ScoreMetaData = metas
}

func (c *EvalContext) regexp(pattern string) (*regexp.Regexp, error) {
	if re, ok := c.regexps[pattern]; ok {
		return re, nil
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	c.regexps[pattern] = re
	return re, nil
}

func (c *EvalContext) versionConstraint(spec string) (version.Constraints, error) {
	if vc, ok := c.versions[spec]; ok {
		return vc, nil
	}
	vc, err := version.NewConstraint(spec)
	if err != nil {
		return nil, err
	}
	c.versions[spec] = vc
	return vc, nil
}

// poolDisconnect returns the disconnect policy of node's pool, to copy onto
// an allocation placed there (see structs.ResolveDisconnect), or nil. A
// pool that cannot be read gives none: the group's own settings, or no
// window, which is what the allocation had before pools had policies.
func (c *EvalContext) poolDisconnect(node *structs.Node) *structs.PoolDisconnect {
	name := node.NodePool
	if name == "" {
		name = structs.DefaultNodePool
	}
	if p, ok := c.pools[name]; ok {
		return p.Copy()
	}
	var out *structs.PoolDisconnect
	pool, err := c.state.NodePoolByName(nil, name)
	if err != nil {
		c.logger.Warn("reading node pool", "node_pool", name, "error", err)
	} else if pool != nil && pool.Disconnect != nil {
		out = &structs.PoolDisconnect{Pool: name, Policy: pool.Disconnect.Copy()}
	}
	c.pools[name] = out
	return out.Copy()
}

// proposedJobAllocs returns the job's allocations that hold a place once
// the plan is applied: its non-terminal allocations minus the plan's
// stops, with the plan's updates and placements. Spread and
// distinct_property count these.
func (c *EvalContext) proposedJobAllocs(job *structs.Job) ([]*structs.Allocation, error) {
	existing, err := c.state.AllocsByJob(nil, job.Namespace, job.ID, false)
	if err != nil {
		return nil, fmt.Errorf("listing allocations of job %q: %w", job.ID, err)
	}
	gone := map[string]bool{}
	for _, m := range []map[string][]*structs.Allocation{c.plan.NodeUpdate, c.plan.NodePreemptions} {
		for _, allocs := range m {
			for _, a := range allocs {
				gone[a.ID] = true
			}
		}
	}
	var planned []*structs.Allocation
	for _, allocs := range c.plan.NodeAllocation {
		for _, a := range allocs {
			if a.JobID == job.ID && a.Namespace == job.Namespace {
				gone[a.ID] = true
				planned = append(planned, a)
			}
		}
	}
	out := make([]*structs.Allocation, 0, len(existing)+len(planned))
	for _, a := range existing {
		if !gone[a.ID] && !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	for _, a := range planned {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out, nil
}

// node returns a node by ID, cached for the evaluation.
func (c *EvalContext) node(id string) (*structs.Node, error) {
	if n, ok := c.nodes[id]; ok {
		return n, nil
	}
	n, err := c.state.NodeByID(nil, id)
	if err != nil {
		return nil, err
	}
	c.nodes[id] = n
	return n, nil
}
