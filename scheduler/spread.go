package scheduler

import (
	"github.com/nomad-edge/nomad/nomad/structs"
)

const scorerSpread = "allocation-spread"

// spreadIterator scores nodes by how far their attribute values are from
// the share of the group's allocations each value should hold: a value
// under its share scores up to 1, one over it down to -1, a node without
// the attribute -1. A spread without targets wants the same share for
// every value its candidate nodes have.
type spreadIterator struct {
	ctx     *EvalContext
	source  rankIterator
	spreads []*structs.Spread
	total   float64
	count   int
	// used counts, per attribute, the group's proposed allocations per
	// value; values lists the values the candidate nodes have.
	used   map[string]map[string]int
	values map[string]map[string]bool
	nodes  []*structs.Node
}

// newSpreadIterator always scores when the group has spreads, even 0: a
// node on its target must not rank by bin packing alone against nodes
// whose mean includes a spread score.
func newSpreadIterator(ctx *EvalContext, source rankIterator) *spreadIterator {
	return &spreadIterator{ctx: ctx, source: source}
}

// SetNodes takes the candidates, whose values an even spread divides over.
func (it *spreadIterator) SetNodes(nodes []*structs.Node) { it.nodes = nodes }

// SetTaskGroup reads the job's and the group's spreads and counts where
// the group's allocations are, the plan so far included.
func (it *spreadIterator) SetTaskGroup(job *structs.Job, tg *structs.TaskGroup) {
	it.spreads = append(append([]*structs.Spread(nil), job.Spreads...), tg.Spreads...)
	it.total, it.count = 0, tg.Count
	for _, s := range it.spreads {
		it.total += float64(s.Weight)
	}
	if len(it.spreads) == 0 {
		return
	}
	it.used, it.values = map[string]map[string]int{}, map[string]map[string]bool{}
	for _, s := range it.spreads {
		it.used[s.Attribute], it.values[s.Attribute] = map[string]int{}, map[string]bool{}
		for _, n := range it.nodes {
			if v, ok := resolveTarget(s.Attribute, n); ok {
				it.values[s.Attribute][v] = true
			}
		}
	}
	allocs, err := it.ctx.proposedJobAllocs(job)
	if err != nil {
		it.ctx.logger.Error("spread: reading the job's allocations", "error", err)
		return
	}
	for _, a := range allocs {
		if a.TaskGroup != tg.Name {
			continue
		}
		node, err := it.ctx.node(a.NodeID)
		if err != nil || node == nil {
			continue
		}
		for attr, counts := range it.used {
			if v, ok := resolveTarget(attr, node); ok {
				counts[v]++
			}
		}
	}
}

func (it *spreadIterator) Next() *rankedNode {
	opt := it.source.Next()
	if opt == nil || len(it.spreads) == 0 || it.total == 0 {
		return opt
	}
	sum := 0.0
	for _, s := range it.spreads {
		sum += float64(s.Weight) * it.boost(s, opt.Node)
	}
	score := clamp(sum/it.total, -1, 1)
	opt.scores = append(opt.scores, score)
	it.ctx.scoreNode(opt.Node, scorerSpread, score)
	return opt
}

// boost is one spread's score of node in [-1, 1]: (desired - used) /
// desired for the node's value.
func (it *spreadIterator) boost(s *structs.Spread, node *structs.Node) float64 {
	v, ok := resolveTarget(s.Attribute, node)
	if !ok {
		return -1
	}
	used := it.used[s.Attribute]
	var percent float64
	var have int
	switch {
	case len(s.SpreadTarget) == 0:
		if n := len(it.values[s.Attribute]); n > 0 {
			percent = 100 / float64(n)
		}
		have = used[v]
	default:
		named := map[string]bool{}
		sum := 0
		for _, t := range s.SpreadTarget {
			named[t.Value] = true
			sum += int(t.Percent)
			if t.Value == v {
				percent = float64(t.Percent)
				have = used[v]
			}
		}
		if !named[v] {
			// The values no target names share what the targets leave.
			percent = float64(100 - sum)
			for val, c := range used {
				if !named[val] {
					have += c
				}
			}
		}
	}
	desired := percent / 100 * float64(it.count)
	if desired <= 0 {
		return -1
	}
	return clamp((desired-float64(have))/desired, -1, 1)
}

func (it *spreadIterator) Reset() { it.source.Reset() }
