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
	rules []propertyRule
	// unreadable is set when the job's allocations could not be read: no
	// node can then be shown to be under its limit.
	unreadable bool
}

type propertyRule struct {
	c     *structs.Constraint
	limit int
	// used counts the proposed allocations in the rule's scope per value.
	used map[string]int
}

// newDistinctPropertyChecker needs the job's proposed allocations, so it
// runs last among the checkers.
func newDistinctPropertyChecker(ctx *EvalContext) *distinctPropertyChecker {
	return &distinctPropertyChecker{ctx: ctx}
}

// SetTaskGroup reads the distinct_property constraints that apply to tg
// and counts, once per selection, where the allocations they limit are:
// the plan does not change while one node is chosen, and counting per
// candidate node would cost nodes × allocations.
func (c *distinctPropertyChecker) SetTaskGroup(job *structs.Job, tg *structs.TaskGroup) {
	c.rules, c.unreadable = c.rules[:0], false
	var groupLevel []int
	add := func(cs []*structs.Constraint, jobLevel bool) {
		for _, con := range cs {
			if con.Operand == structs.ConstraintDistinctProperty {
				if !jobLevel {
					groupLevel = append(groupLevel, len(c.rules))
				}
				c.rules = append(c.rules, propertyRule{c: con, limit: propertyLimit(con), used: map[string]int{}})
			}
		}
	}
	add(job.Constraints, true)
	add(tg.Constraints, false)
	for _, t := range tg.Tasks {
		add(t.Constraints, false)
	}
	if len(c.rules) == 0 {
		return
	}
	inGroup := map[int]bool{}
	for _, i := range groupLevel {
		inGroup[i] = true
	}
	allocs, err := c.ctx.proposedJobAllocs(job)
	if err != nil {
		c.ctx.logger.Error("distinct_property: reading the job's allocations", "error", err)
		c.unreadable = true
		return
	}
	for _, a := range allocs {
		node, err := c.ctx.node(a.NodeID)
		if err != nil || node == nil {
			continue
		}
		for i, r := range c.rules {
			if inGroup[i] && a.TaskGroup != tg.Name {
				continue
			}
			if v, ok := resolveTarget(r.c.LTarget, node); ok {
				r.used[v]++
			}
		}
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
	for _, r := range c.rules {
		v, ok := resolveTarget(r.c.LTarget, n)
		if !ok || c.unreadable || r.used[v] >= r.limit {
			c.ctx.filterNode(n, r.c.String())
			return false
		}
	}
	return true
}
