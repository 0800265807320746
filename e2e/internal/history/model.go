package history

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
)

// state is one key's state in the sequential model. indexKnown is false
// after an Unknown write was taken as applied: its index was never seen,
// so the next read teaches it, and a CAS against it may go either way.
type state struct {
	Value
	indexKnown bool
}

// initial is every key's state before the run's first op: no job, no
// variable, every node eligible and not draining (the run starts so).
func initial(key string) state {
	if strings.HasPrefix(key, "node/") {
		return state{Value: Value{Exists: true, Eligible: true}, indexKnown: true}
	}
	return state{indexKnown: true}
}

// casHolds says whether a CAS against index would succeed in s: yes, no,
// or either (the index is not known).
func casHolds(s state, op Op) (yes, no bool) {
	if !op.CAS {
		return true, false
	}
	if !s.Exists {
		return op.CASIndex == 0, op.CASIndex != 0
	}
	if !s.indexKnown {
		return true, true
	}
	return s.Index == op.CASIndex, s.Index != op.CASIndex
}

// apply is s after the write op took effect; idx is the index it was
// acknowledged at (0: unknown).
func apply(s state, op Op, idx uint64) (state, bool) {
	n := s
	setIndex := func() {
		n.Index, n.indexKnown = idx, idx != 0
	}
	switch op.Kind {
	case JobRegister:
		if s.Exists {
			n.Version = s.Version + 1
		} else {
			n.Version = 0
		}
		n.Exists, n.Tag, n.Count, n.Stop = true, op.In.Tag, op.In.Count, false
		setIndex()
	case JobScale:
		if !s.Exists || s.Stop {
			return s, false
		}
		if op.In.Count != s.Count {
			n.Count, n.Version = op.In.Count, s.Version+1
			setIndex()
		}
	case JobStop:
		if !s.Exists {
			return s, true // nothing to stop: a success that writes nothing
		}
		if !s.Stop {
			n.Stop, n.Version = true, s.Version+1
			setIndex()
		}
	case VarWrite:
		n.Exists, n.Tag = true, op.In.Tag
		setIndex()
	case NodeEligibility:
		if s.Draining && op.In.Eligible {
			return s, false
		}
		n.Eligible = op.In.Eligible
	case NodeDrain:
		n.Draining, n.Eligible = op.In.Draining, !op.In.Draining
	}
	return n, true
}

// step is the model: the states s may move to when op happens with the
// outcome it had (none: op cannot happen in s).
func step(s state, op Op) []state {
	if op.Kind.IsRead() {
		return read(s, op)
	}
	yes, no := casHolds(s, op)
	switch op.Outcome {
	case OK:
		if !yes {
			return nil
		}
		if s.indexKnown && s.Exists && op.Out.Index <= s.Index && op.Kind != NodeEligibility && op.Kind != NodeDrain {
			return nil // an acknowledged write at an index not past the one it replaced
		}
		n, ok := apply(s, op, op.Out.Index)
		if !ok {
			return nil
		}
		return []state{n}
	case Fail:
		// A refusal changes nothing. A CAS refused where it would hold is
		// allowed only for what may also refuse for other reasons (scale
		// during a rollout, a node's drain).
		if op.CAS && !no {
			return nil
		}
		return []state{s}
	default: // Unknown: it happened or it did not.
		out := []state{s}
		if yes {
			if n, ok := apply(s, op, 0); ok {
				out = append(out, n)
			}
		}
		return out
	}
}

// read is the model's answer to a non-stale read: the value must be the
// state's; an index the state does not know is learnt from it. A drain
// may end by itself (every allocation moved): a read may see it ended.
func read(s state, op Op) []state {
	if op.Outcome != OK {
		return []state{s}
	}
	got := op.Out
	switch op.Kind {
	case NodeRead:
		if got.Eligible == s.Eligible && got.Draining == s.Draining {
			return []state{s}
		}
		if s.Draining && !got.Draining && !got.Eligible {
			n := s
			n.Draining = false
			return []state{n}
		}
		return nil
	case VarRead:
		if got.Exists != s.Exists || (s.Exists && got.Tag != s.Tag) {
			return nil
		}
	case JobRead:
		if got.Exists != s.Exists || (s.Exists && (got.Tag != s.Tag || got.Count != s.Count || got.Stop != s.Stop || got.Version != s.Version)) {
			return nil
		}
	}
	if !s.Exists {
		return []state{s}
	}
	if s.indexKnown {
		if got.Index != s.Index {
			return nil
		}
		return []state{s}
	}
	n := s
	n.Index, n.indexKnown = got.Index, true
	return []state{n}
}

// model is porcupine's view of step; each key is checked on its own, so
// the state is one key's. The key is in every op, so Init cannot know it:
// the first step of a partition starts from initial(op.Key).
func model() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			groups := map[string][]porcupine.Operation{}
			var keys []string
			for _, o := range h {
				op := o.Input.(Op)
				k := fmt.Sprintf("%s#%d", op.Key, op.part)
				if groups[k] == nil {
					keys = append(keys, k)
				}
				groups[k] = append(groups[k], o)
			}
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, groups[k])
			}
			return out
		},
		Init: func() []any { return []any{unset{}} },
		Step: func(st, in, _ any) []any {
			op := in.(Op)
			s, ok := st.(state)
			switch {
			case ok:
			case op.part == 0:
				s = initial(op.Key)
			case op.Final && op.Kind.IsRead():
				// A later segment starts from what its final reads saw.
				return []any{state{Value: op.Out, indexKnown: true}}
			default:
				return nil // a segment with no final read before it
			}
			var out []any
			for _, n := range step(s, op) {
				out = append(out, n)
			}
			return out
		},
		Equal: func(a, b any) bool { return a == b },
		DescribeOperation: func(in, _ any) string {
			op := in.(Op)
			s := op.String()
			return s[strings.Index(s, " ")+1:]
		},
		DescribeState: func(st any) string {
			s, ok := st.(state)
			if !ok {
				return "initial"
			}
			idx := fmt.Sprint(s.Index)
			if !s.indexKnown {
				idx = "?"
			}
			return fmt.Sprintf("exists=%v %s count=%d stop=%v v%d index=%s eligible=%v draining=%v",
				s.Exists, s.Tag, s.Count, s.Stop, s.Version, idx, s.Eligible, s.Draining)
		},
	}
	return nm.ToModel()
}

// unset is the state before a partition's first op.
type unset struct{}

// operations are the ops porcupine checks: every non-stale op but
// unanswered reads and allocation stops (they are not registers), each in
// its segment; a final read is also the last op of the segment before.
// Segments make the search small: without them, proving one bad step
// late in a long run means trying every order of every unknown write
// before it.
func operations(ops []Op) []porcupine.Operation {
	var out []porcupine.Operation
	add := func(op Op, part int) {
		op.part = part
		out = append(out, porcupine.Operation{
			ClientId: op.Worker, Input: op, Output: op, Call: op.Call, Return: returnOf(op),
		})
	}
	for _, op := range ops {
		if op.Stale || op.Kind == AllocStop || (op.Kind.IsRead() && op.Outcome != OK) {
			continue
		}
		add(op, op.Segment)
		if op.Final && op.Segment > 0 {
			add(op, op.Segment-1)
		}
	}
	return out
}
