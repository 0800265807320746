package scheduler

import (
	"strconv"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// distinctPropertyChecker rejects a node when the value of a
// distinct_property attribute on it already holds the constraint's limit
// of allocations (1 unless the constraint's value says more): of the whole
// job for a job-level constraint, of the group for a group or task one. A
// node without the attribute is rejected, as upstream.
type distinctPropertyChecker struct {
	ctx   *EvalContext
	job   *structs.Job
	group string
	rules []propertyRule
}

type propertyRule struct {
	c        *structs.Constraint
	jobLevel bool
	limit    int
}

// newDistinctPropertyChecker needs the job's proposed allocations, so it
// runs last among the checkers.
func newDistinctPropertyChecker(ctx *EvalContext) *distinctPropertyChecker {
	return &distinctPropertyChecker{ctx: ctx}
}

// SetTaskGroup reads the distinct_property constraints that apply to tg.
func (c *distinctPropertyChecker) SetTaskGroup(job *structs.Job, tg *structs.TaskGroup) {
	c.job, c.group, c.rules = job, tg.Name, c.rules[:0]
	add := func(cs []*structs.Constraint, jobLevel bool) {
		for _, con := range cs {
			if con.Operand == structs.ConstraintDistinctProperty {
				c.rules = append(c.rules, propertyRule{c: con, jobLevel: jobLevel, limit: propertyLimit(con)})
			}
		}
	}
	add(job.Constraints, true)
	add(tg.Constraints, false)
	for _, t := range tg.Tasks {
		add(t.Constraints, false)
	}
}

// propertyLimit is the constraint's value, 1 when unset; validation
// refuses anything but a positive integer.
func propertyLimit(c *structs.Constraint) int {
	if n, err := strconv.Atoi(c.RTarget); err == nil && n > 0 {
		return n
	}
	return 1
}

func (c *distinctPropertyChecker) Feasible(n *structs.Node) bool {
	if len(c.rules) == 0 {
		return true
	}
	allocs, err := c.ctx.proposedJobAllocs(c.job)
	if err != nil {
		c.ctx.logger.Error("distinct_property: reading the job's allocations", "error", err)
		return false
	}
	for _, r := range c.rules {
		want, ok := resolveTarget(r.c.LTarget, n)
		if !ok {
			c.ctx.filterNode(n, r.c.String())
			return false
		}
		used := 0
		for _, a := range allocs {
			if !r.jobLevel && a.TaskGroup != c.group {
				continue
			}
			node, err := c.ctx.node(a.NodeID)
			if err != nil || node == nil {
				continue
			}
			if v, ok := resolveTarget(r.c.LTarget, node); ok && v == want {
				used++
			}
		}
		if used >= r.limit {
			c.ctx.filterNode(n, r.c.String())
			return false
		}
	}
	return true
}
