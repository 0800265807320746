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
	if s.Draining && (op.Kind == NodeEligibility || op.Kind == NodeDrain || op.Kind == NodeRead) {
		// A drain ends by itself once the node is empty, at any point.
		done := s
		done.Draining = false
		return append(step1(s, op), step1(done, op)...)
	}
	return step1(s, op)
}

// step1 is step without a drain ending on its own.
func step1(s state, op Op) []state {
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
//
// An unanswered register or variable write whose tag a read saw took
// effect before that read returned: its window ends there. Without full,
// one whose tag nobody saw is not given its late copy either; that can
// only make a history look worse, never better (so an Ok stands), and
// keeps the search small.
func operations(ops []Op, full bool) []porcupine.Operation {
	seen := map[string]Op{} // key and tag -> the first read that saw it
	for _, op := range ops {
		if op.Kind.IsRead() && op.Outcome == OK && op.Out.Exists && op.Out.Tag != "" {
			k := op.Key + "\x00" + op.Out.Tag
			if prev, ok := seen[k]; !ok || op.Return < prev.Return {
				seen[k] = op
			}
		}
	}
	// A segment's final reads begin it: the first one's call bounds the
	// segment before.
	start := map[int]int64{}
	for _, op := range ops {
		if op.Final {
			if t, ok := start[op.Segment]; !ok || op.Call < t {
				start[op.Segment] = op.Call
			}
		}
	}
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
		late := op.Outcome == Unknown && op.Settled != 0
		if op.Outcome == Unknown && (op.Kind == JobRegister || op.Kind == VarWrite) {
			r, ok := seen[op.Key+"\x00"+op.In.Tag]
			switch {
			case !ok:
				late = late && full // kept below, with its whole window
			case r.Segment <= op.Segment:
				late = false
				op.Settled = min(returnOf(op), max(r.Return, op.Call))
			default:
				late = r.Segment == op.Segment+1
			}
			if late && ok {
				cp := op
				cp.Call, cp.Settled, cp.part = op.Settled, max(r.Return, op.Settled), op.Segment+1
				out = append(out, porcupine.Operation{ClientId: cp.Worker, Input: cp, Output: cp, Call: cp.Call, Return: returnOf(cp)})
				late = false
			}
		}
		add(op, op.Segment)
		if op.Final && op.Segment > 0 {
			add(op, op.Segment-1)
		}
		if late {
			// An unanswered write may still land after the settle (a
			// server held the request past the caller's timeout: seen in
			// a run, a variable write answered by nobody and applied after
			// the final read): it may take effect in the next segment too,
			// any time after its final reads, until the settle after.
			late := op
			late.Call, late.Settled = op.Settled, start[op.Segment+2]
			late.part = op.Segment + 1
			out = append(out, porcupine.Operation{
				ClientId: late.Worker, Input: late, Output: late, Call: late.Call, Return: returnOf(late),
			})
		}
	}
	return out
}
