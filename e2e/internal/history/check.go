package history

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Violation is one thing the history shows that must not happen.
type Violation struct {
	// Rule names the invariant: "linearizable", "lost-write",
	// "stale-read", "version-order", "one-leader-per-term",
	// "index-unique", "phantom-read".
	Rule string
	Key  string
	What string
	// Slice is the smallest part of the history that shows it.
	Slice []Op
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s violated on %s: %s", v.Rule, v.Key, v.What)
	for _, op := range v.Slice {
		fmt.Fprintf(&b, "\n    %s", op)
	}
	return b.String()
}

// Result is what Check found.
type Result struct {
	// Checked is how many ops porcupine checked; Keys how many keys.
	Checked, Keys int
	// Linearizable is the verdict over every key: Ok, Illegal, or Unknown
	// when porcupine ran out of time. A key is judged first on the history
	// narrowed to the unanswered writes that some read saw (Narrowed); a
	// key that fails that is judged again with every unanswered write
	// allowed to land late, and only a key that fails both is not
	// linearizable.
	Linearizable porcupine.CheckResult
	// Narrowed is porcupine's verdict on the narrowed history of every
	// key, the one the visualization shows.
	Narrowed   porcupine.CheckResult
	Violations []Violation

	info porcupine.LinearizationInfo
}

// Check checks ops and the leader samples, giving porcupine timeout for
// the whole history (0: no limit).
func Check(ops []Op, samples []LeaderSample, timeout time.Duration) Result {
	pops := operations(ops, false)
	res, info := porcupine.CheckOperationsVerbose(model(), pops, timeout)
	keys := 0
	for k := range byKey(ops) {
		if !strings.HasPrefix(k, "alloc/") {
			keys++
		}
	}
	r := Result{Checked: len(pops), Keys: keys, Linearizable: res, Narrowed: res, info: info}
	if res != porcupine.Ok {
		lin, verdict := nonLinearizable(ops, timeout)
		r.Violations = append(r.Violations, lin...)
		r.Linearizable = verdict
	}
	r.Violations = append(r.Violations, lostWrites(ops)...)
	r.Violations = append(r.Violations, staleReads(ops)...)
	r.Violations = append(r.Violations, versionOrder(ops)...)
	r.Violations = append(r.Violations, phantomReads(ops)...)
	r.Violations = append(r.Violations, indexUnique(ops)...)
	r.Violations = append(r.Violations, leadersPerTerm(samples)...)
	return r
}

// Visualize writes porcupine's HTML view of the checked history to path.
func (r Result) Visualize(path string) error {
	return porcupine.VisualizePath(model(), r.info, path)
}

// nonLinearizable finds the keys whose ops are not linearizable and, for
// each, the slice around the first op no linearization could place: the
// ops concurrent with it and the few that completed just before it. The
// verdict is Ok when every key is linearizable, Unknown when none is
// found not to be but one was undecided in time, Illegal otherwise.
func nonLinearizable(ops []Op, timeout time.Duration) ([]Violation, porcupine.CheckResult) {
	var out []Violation
	verdictAll := porcupine.Ok
	groups := byKey(ops)
	for _, key := range sortedKeys(groups) {
		pops := operations(groups[key], false)
		if len(pops) == 0 {
			continue
		}
		res, info := porcupine.CheckOperationsVerbose(model(), pops, timeout)
		if res == porcupine.Ok {
			continue
		}
		// The narrowed history fails; the full one decides.
		verdict := "no order of the ops on %s explains %s"
		switch porcupine.CheckOperationsTimeout(model(), operations(groups[key], true), timeout) {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			verdict = "undecided in time with every unanswered write allowed to land late; without the unseen ones, no order of the ops on %s explains %s"
			if verdictAll == porcupine.Ok {
				verdictAll = porcupine.Unknown
			}
		default:
			verdictAll = porcupine.Illegal
		}
		// Per segment, the ops its longest partial linearization placed.
		placed := map[[2]int]bool{}
		for _, part := range info.PartialLinearizationsOperations() {
			var longest []porcupine.Operation
			for _, lin := range part {
				if len(lin) > len(longest) {
					longest = lin
				}
			}
			for _, o := range longest {
				op := o.Input.(Op)
				placed[[2]int{op.ID, op.part}] = true
			}
		}
		// The first op (by completion) that the longest linearization
		// leaves out is where the history went wrong.
		var bad *Op
		for _, p := range pops {
			op := p.Input.(Op)
			if !placed[[2]int{op.ID, op.part}] && (bad == nil || returnOf(op) < returnOf(*bad)) {
				bad = &op
			}
		}
		if bad == nil {
			// Every op was placed by some partial linearization, yet no
			// whole one exists: the key is still reported, with its ops
			// that completed last as the slice.
			out = append(out, Violation{
				Rule: "linearizable", Key: key,
				What:  fmt.Sprintf(verdict, key, "its whole history"),
				Slice: lastOps(groups[key], 8),
			})
			continue
		}
		out = append(out, Violation{
			Rule: "linearizable", Key: key,
			What:  fmt.Sprintf(verdict, key, bad),
			Slice: around(groups[key], *bad),
		})
	}
	return out, verdictAll
}

// lastOps is the n ops of one key that completed last, in the order they
// completed.
func lastOps(ops []Op, n int) []Op {
	sorted := slices.Clone(ops)
	slices.SortStableFunc(sorted, func(a, b Op) int { return cmp.Compare(returnOf(a), returnOf(b)) })
	return sorted[max(0, len(sorted)-n):]
}

// around is the ops of one key that overlap bad, with the three before
// it, and bad itself.
func around(ops []Op, bad Op) []Op {
	var before, during []Op
	for _, op := range ops {
		switch {
		case op.Stale || (op.Kind.IsRead() && op.Outcome != OK):
		case op.ID == bad.ID:
			during = append(during, op)
		case returnOf(op) < bad.Call:
			before = append(before, op)
		case op.Call <= returnOf(bad):
			during = append(during, op)
		}
	}
	return append(before[max(0, len(before)-3):], during...)
}

// lostWrites: an acknowledged register or variable write whose tag is not
// the key's final value, with nothing written after it that could have
// replaced it, was lost. The final value is the last non-stale read that
// began after every write completed.
func lostWrites(ops []Op) []Violation {
	var out []Violation
	for key, g := range byKey(ops) {
		var writes []Op
		lastEnd := int64(0)
		for _, op := range g {
			if op.Kind == JobRegister || op.Kind == VarWrite {
				writes = append(writes, op)
				if op.Outcome != Fail {
					lastEnd = max(lastEnd, returnOf(op))
				}
			}
		}
		var final *Op
		for i := range g {
			op := g[i]
			if (op.Kind == JobRead || op.Kind == VarRead) && !op.Stale && op.Outcome == OK && op.Call > lastEnd {
				final = &g[i]
			}
		}
		if final == nil || len(writes) == 0 {
			continue
		}
		for _, w := range writes {
			if w.Outcome != OK || w.In.Tag == final.Out.Tag {
				continue
			}
			replaced := false
			for _, w2 := range writes {
				if w2.ID != w.ID && w2.Outcome != Fail && returnOf(w2) >= w.Call {
					replaced = true
					break
				}
			}
			if !replaced {
				out = append(out, Violation{
					Rule: "lost-write", Key: key,
					What:  fmt.Sprintf("write #%d (%s) was acknowledged, nothing replaced it, yet the key reads %q", w.ID, w.In.Tag, final.Out.Tag),
					Slice: []Op{w, *final},
				})
			}
		}
	}
	return sortViolations(out)
}

// staleReads: a non-stale read that began after a write on its key was
// acknowledged must see that write's index or a later one.
func staleReads(ops []Op) []Violation {
	var out []Violation
	for key, g := range byKey(ops) {
		for _, r := range g {
			if !(r.Kind == JobRead || r.Kind == VarRead) || r.Stale || r.Outcome != OK {
				continue
			}
			for _, w := range g {
				if (w.Kind != JobRegister && w.Kind != VarWrite) || w.Outcome != OK || w.Return >= r.Call {
					continue
				}
				if !r.Out.Exists || r.Out.Index < w.Out.Index {
					out = append(out, Violation{
						Rule: "stale-read", Key: key,
						What:  fmt.Sprintf("read #%d began after write #%d was acknowledged at index %d but saw index %d", r.ID, w.ID, w.Out.Index, r.Out.Index),
						Slice: []Op{w, r},
					})
					break
				}
			}
		}
	}
	return sortViolations(out)
}

// versionOrder: on one key, acknowledged writes one after the other get
// increasing indexes, and non-stale reads one after the other never see a
// lower version or index; one version is one content.
func versionOrder(ops []Op) []Violation {
	var out []Violation
	for key, g := range byKey(ops) {
		var writes, reads []Op
		for _, op := range g {
			switch {
			case (op.Kind == JobRegister || op.Kind == VarWrite) && op.Outcome == OK:
				writes = append(writes, op)
			case op.Kind == JobRead && !op.Stale && op.Outcome == OK && op.Out.Exists:
				reads = append(reads, op)
			}
		}
		found := func(a, b Op, what string) {
			out = append(out, Violation{Rule: "version-order", Key: key, What: what, Slice: []Op{a, b}})
		}
	pairs:
		for _, a := range writes {
			for _, b := range writes {
				if a.Return < b.Call && b.Out.Index <= a.Out.Index {
					found(a, b, fmt.Sprintf("write #%d at index %d followed write #%d at index %d", b.ID, b.Out.Index, a.ID, a.Out.Index))
					break pairs
				}
			}
		}
		seen := map[uint64]Op{}
	reads:
		for _, a := range reads {
			if s, ok := seen[a.Out.Version]; ok && (s.Out.Tag != a.Out.Tag || s.Out.Count != a.Out.Count || s.Out.Stop != a.Out.Stop) {
				found(s, a, fmt.Sprintf("version %d read as two different jobs", a.Out.Version))
				break
			}
			seen[a.Out.Version] = a
			for _, b := range reads {
				if a.Return < b.Call && (b.Out.Version < a.Out.Version || b.Out.Index < a.Out.Index) {
					found(a, b, fmt.Sprintf("read #%d saw v%d index %d after read #%d saw v%d index %d", b.ID, b.Out.Version, b.Out.Index, a.ID, a.Out.Version, a.Out.Index))
					break reads
				}
			}
		}
	}
	return sortViolations(out)
}

// phantomReads: a stale read may be old, but never of a value no write
// (answered or not) wrote.
func phantomReads(ops []Op) []Violation {
	var out []Violation
	for key, g := range byKey(ops) {
		written := map[string]bool{}
		for _, op := range g {
			if op.Kind == JobRegister || op.Kind == VarWrite {
				written[op.In.Tag] = true
			}
		}
		for _, op := range g {
			if (op.Kind == JobRead || op.Kind == VarRead) && op.Outcome == OK && op.Out.Exists && !written[op.Out.Tag] {
				out = append(out, Violation{Rule: "phantom-read", Key: key, What: fmt.Sprintf("read #%d saw %q, which nothing wrote", op.ID, op.Out.Tag), Slice: []Op{op}})
				break
			}
		}
	}
	return sortViolations(out)
}

// indexUnique: every acknowledged write is its own raft entry, so two at
// one index mean two leaders committed different entries there.
func indexUnique(ops []Op) []Violation {
	at := map[uint64]Op{}
	var out []Violation
	for _, op := range ops {
		if op.Kind.IsRead() || op.Outcome != OK || op.Out.Index == 0 {
			continue
		}
		if prev, ok := at[op.Out.Index]; ok {
			out = append(out, Violation{Rule: "index-unique", Key: op.Key, What: fmt.Sprintf("writes #%d and #%d were both acknowledged at raft index %d", prev.ID, op.ID, op.Out.Index), Slice: []Op{prev, op}})
			continue
		}
		at[op.Out.Index] = op
	}
	return out
}

// leadersPerTerm: two servers that each said they led in the same term.
func leadersPerTerm(samples []LeaderSample) []Violation {
	leader := map[uint64]LeaderSample{}
	var out []Violation
	for _, s := range samples {
		if s.State != "Leader" {
			continue
		}
		if prev, ok := leader[s.Term]; ok && prev.Server != s.Server {
			out = append(out, Violation{Rule: "one-leader-per-term", Key: fmt.Sprintf("term/%d", s.Term),
				What: fmt.Sprintf("%s led term %d at %.3fs and %s at %.3fs", prev.Server, s.Term, float64(prev.At)/1e9, s.Server, float64(s.At)/1e9)})
			continue
		}
		leader[s.Term] = s
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortViolations(vs []Violation) []Violation {
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Key < vs[j].Key })
	return vs
}
