package scheduler

import (
	"math/rand/v2"
	"strconv"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Reasons recorded in AllocMetric.ConstraintFiltered. The CLI prints them.
const (
	filterDatacenter    = "missing compatible datacenter"
	filterNodePool      = "node pool mismatch"
	filterMissingDriver = "missing drivers"
	filterDistinctHosts = structs.ConstraintDistinctHosts
)

// feasibleIterator yields candidate nodes, one at a time.
type feasibleIterator interface {
	// Next returns the next node, or nil when there are no more.
	Next() *structs.Node
	// Reset starts a new selection.
	Reset()
}

// feasibilityChecker accepts or rejects one node, recording why it
// rejected it in the context's metrics.
type feasibilityChecker interface {
	Feasible(*structs.Node) bool
}

// staticIterator yields a fixed list of nodes. A selection sees each node
// at most once; the next selection starts where the last one stopped, so
// that successive placements look at different nodes first.
type staticIterator struct {
	ctx    *EvalContext
	nodes  []*structs.Node
	offset int
	seen   int
}

// newStaticIterator is the source of every chain: the only place a node
// enters, and so where NodesEvaluated is counted.
func newStaticIterator(ctx *EvalContext, nodes []*structs.Node) *staticIterator {
	return &staticIterator{ctx: ctx, nodes: nodes}
}

// newRandomIterator shuffles the nodes with a seeded generator so that
// placements spread out but stay reproducible.
func newRandomIterator(ctx *EvalContext, nodes []*structs.Node, seed uint64) *staticIterator {
	it := newStaticIterator(ctx, nil)
	it.SetNodes(nodes, seed)
	return it
}

func (it *staticIterator) Next() *structs.Node {
	if it.seen >= len(it.nodes) {
		return nil
	}
	n := it.nodes[it.offset]
	it.offset = (it.offset + 1) % len(it.nodes)
	it.seen++
	it.ctx.metrics.NodesEvaluated++
	return n
}

func (it *staticIterator) Reset() { it.seen = 0 }

// SetNodes replaces the list with a shuffled copy of nodes.
func (it *staticIterator) SetNodes(nodes []*structs.Node, seed uint64) {
	shuffled := append([]*structs.Node(nil), nodes...)
	// The system scheduler sets one node at a time, thousands of times
	// an evaluation: a generator to shuffle a list of one is waste.
	if len(shuffled) > 1 {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	}
	it.nodes, it.offset, it.seen = shuffled, 0, 0
}

// feasibilityWrapper passes on the source's nodes that every checker
// accepts.
type feasibilityWrapper struct {
	source   feasibleIterator
	checkers []feasibilityChecker
}

// newFeasibilityWrapper applies the checkers in order; cheap, common
// rejections (datacenter, pool, drivers) should come first.
func newFeasibilityWrapper(source feasibleIterator, checkers ...feasibilityChecker) *feasibilityWrapper {
	return &feasibilityWrapper{source: source, checkers: checkers}
}

func (w *feasibilityWrapper) Next() *structs.Node {
outer:
	for n := w.source.Next(); n != nil; n = w.source.Next() {
		for _, c := range w.checkers {
			if !c.Feasible(n) {
				continue outer
			}
		}
		return n
	}
	return nil
}

func (w *feasibilityWrapper) Reset() { w.source.Reset() }

// datacenterChecker rejects nodes outside the job's datacenters.
type datacenterChecker struct {
	ctx *EvalContext
	dcs []string
}

// newDatacenterChecker guards single-node checks (in-place updates) and
// node lists built elsewhere; the ready-node list is already filtered.
func newDatacenterChecker(ctx *EvalContext) *datacenterChecker { return &datacenterChecker{ctx: ctx} }

func (c *datacenterChecker) SetDatacenters(dcs []string) { c.dcs = dcs }

func (c *datacenterChecker) Feasible(n *structs.Node) bool {
	if datacenterMatches(c.dcs, n.Datacenter) {
		return true
	}
	c.ctx.filterNode(n, filterDatacenter)
	return false
}

// nodePoolChecker rejects nodes outside the job's node pool.
type nodePoolChecker struct {
	ctx  *EvalContext
	pool string
}

// newNodePoolChecker guards the same way as the datacenter checker: a
// job never lands outside its pool, whatever list it is given.
func newNodePoolChecker(ctx *EvalContext) *nodePoolChecker { return &nodePoolChecker{ctx: ctx} }

func (c *nodePoolChecker) SetPool(pool string) { c.pool = pool }

func (c *nodePoolChecker) Feasible(n *structs.Node) bool {
	if nodePoolMatches(c.pool, n) {
		return true
	}
	c.ctx.filterNode(n, filterNodePool)
	return false
}

// driverChecker rejects nodes lacking a healthy driver for every task.
type driverChecker struct {
	ctx     *EvalContext
	drivers []string
}

// newDriverChecker is the usual reason a placement fails on an edge
// fleet (a node without the driver); its metric tells the user so.
func newDriverChecker(ctx *EvalContext) *driverChecker { return &driverChecker{ctx: ctx} }

// SetTaskGroup takes the drivers the group's tasks need.
func (c *driverChecker) SetTaskGroup(tg *structs.TaskGroup) {
	c.drivers = c.drivers[:0]
	seen := map[string]bool{}
	for _, t := range tg.Tasks {
		if !seen[t.Driver] {
			seen[t.Driver] = true
			c.drivers = append(c.drivers, t.Driver)
		}
	}
}

func (c *driverChecker) Feasible(n *structs.Node) bool {
	for _, d := range c.drivers {
		if !driverUsable(n, d) {
			c.ctx.filterNode(n, filterMissingDriver)
			return false
		}
	}
	return true
}

// driverUsable reads the driver's fingerprint, falling back to the
// driver.<name> attribute for nodes that report only attributes.
func driverUsable(n *structs.Node, name string) bool {
	if info, ok := n.Drivers[name]; ok && info != nil {
		return info.Detected && info.Healthy
	}
	v, ok := n.Attributes["driver."+name]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// constraintChecker rejects nodes that fail any of a list of constraints.
type constraintChecker struct {
	ctx         *EvalContext
	constraints []*structs.Constraint
}

// newConstraintChecker evaluates user constraints, recording the failed
// one as the reason so `alloc status` can show which.
func newConstraintChecker(ctx *EvalContext, constraints []*structs.Constraint) *constraintChecker {
	return &constraintChecker{ctx: ctx, constraints: constraints}
}

func (c *constraintChecker) SetConstraints(cs []*structs.Constraint) { c.constraints = cs }

func (c *constraintChecker) Feasible(n *structs.Node) bool {
	for _, con := range c.constraints {
		if !constraintMet(c.ctx, con.Operand, con.LTarget, con.RTarget, n) {
			c.ctx.filterNode(n, con.String())
			return false
		}
	}
	return true
}

// distinctHostsChecker rejects nodes that already hold (or are planned to
// hold) an allocation of the same job, or the same group when the
// constraint is set on the group.
type distinctHostsChecker struct {
	ctx        *EvalContext
	jobID      string
	group      string
	jobLevel   bool
	groupLevel bool
}

// newDistinctHostsChecker needs the proposed allocations, so it runs
// after the cheap property checks.
func newDistinctHostsChecker(ctx *EvalContext) *distinctHostsChecker {
	return &distinctHostsChecker{ctx: ctx}
}

// SetTaskGroup reads where distinct_hosts is set.
func (c *distinctHostsChecker) SetTaskGroup(job *structs.Job, tg *structs.TaskGroup) {
	c.jobID, c.group = job.ID, tg.Name
	c.jobLevel = hasDistinctHosts(job.Constraints)
	c.groupLevel = hasDistinctHosts(tg.Constraints)
	for _, t := range tg.Tasks {
		c.groupLevel = c.groupLevel || hasDistinctHosts(t.Constraints)
	}
}

func hasDistinctHosts(cs []*structs.Constraint) bool {
	for _, c := range cs {
		if c.Operand == structs.ConstraintDistinctHosts && (c.RTarget == "" || c.RTarget == "true") {
			return true
		}
	}
	return false
}

func (c *distinctHostsChecker) Feasible(n *structs.Node) bool {
	if !c.jobLevel && !c.groupLevel {
		return true
	}
	proposed, err := c.ctx.ProposedAllocs(n.ID)
	if err != nil {
		c.ctx.logger.Error("distinct_hosts: reading proposed allocations", "node_id", n.ID, "error", err)
		return false
	}
	for _, a := range proposed {
		if a.JobID != c.jobID {
			continue
		}
		if c.jobLevel || a.TaskGroup == c.group {
			c.ctx.filterNode(n, filterDistinctHosts)
			return false
		}
	}
	return true
}
