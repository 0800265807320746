package history

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// Kind is what an Op asked.
type Kind string

const (
	// JobRegister registers a job (Value.Tag, Value.Count), with
	// check-index when CAS is set.
	JobRegister Kind = "job-register"
	// JobScale sets the job's count to Value.Count.
	JobScale Kind = "job-scale"
	// JobStop stops (deregisters without purge) the job; stopping a job
	// that does not exist succeeds and writes nothing (index 0).
	JobStop Kind = "job-stop"
	// JobRead reads the job.
	JobRead Kind = "job-read"
	// VarWrite writes a variable with cas=CASIndex (0: it must not exist).
	VarWrite Kind = "var-write"
	// VarRead reads a variable.
	VarRead Kind = "var-read"
	// NodeEligibility sets the node's eligibility to Value.Eligible.
	NodeEligibility Kind = "node-eligibility"
	// NodeDrain starts (Value.Draining) or cancels a drain.
	NodeDrain Kind = "node-drain"
	// NodeRead reads the node's eligibility and drain.
	NodeRead Kind = "node-read"
	// AllocStop stops one allocation (Key is "alloc/<id>"): not a
	// register, checked by the run against the final state.
	AllocStop Kind = "alloc-stop"
)

// IsRead says whether the kind changes nothing.
func (k Kind) IsRead() bool { return k == JobRead || k == VarRead || k == NodeRead }

// Outcome is how an Op ended.
type Outcome int

const (
	// OK: the server acknowledged the write or answered the read.
	OK Outcome = iota
	// Fail: the server refused (a CAS conflict, a 4xx): nothing happened.
	Fail
	// Unknown: no answer (timeout, reset, 5xx): it may have happened.
	Unknown
)

func (o Outcome) String() string {
	return [...]string{"ok", "fail", "unknown"}[o]
}

// Value is the state of one key as a read sees it or a write sets it.
type Value struct {
	Exists bool
	// Tag is what the last register or variable write wrote (unique per
	// write): a job's meta, a variable's item.
	Tag   string
	Count int
	Stop  bool
	// Version is a job's version.
	Version uint64
	// Index is a job's JobModifyIndex or a variable's ModifyIndex as read,
	// or the raft index a write was acknowledged at.
	Index uint64
	// Eligible and Draining are a node's.
	Eligible bool
	Draining bool
}

// Op is one call of the API.
type Op struct {
	// ID is the op's position in the history.
	ID     int
	Worker int
	// Server is the agent the call went to.
	Server string
	Kind   Kind
	// Key is "job/<id>", "var/<path>", "node/<id>" or "alloc/<id>".
	Key   string
	Stale bool
	// CAS and CASIndex: a register with check-index, or a variable write
	// (always CAS) with the index it expects.
	CAS      bool
	CASIndex uint64
	// In is what a write asked for; Out what the server answered (a read's
	// value; a write's Index).
	In, Out Value
	Outcome Outcome
	Err     string
	// Call and Return are nanoseconds since the run began (Return is when
	// the caller gave up on an Unknown op).
	Call, Return int64
	// Settled, for an Unknown op, is when the cluster next settled (see
	// History.Settle): the latest it can have taken effect. 0: never
	// settled, so any time.
	Settled int64
	// Segment counts the settles before the op. Final marks a read made
	// settled, before any worker resumed: it pins the key's state, and
	// the checker checks each segment of a key on its own, from the
	// state the final reads before it saw (see operations).
	Segment int
	Final   bool

	// part is the segment the checker puts this copy of the op in.
	part int
}

func (op Op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d w%d %s %s %s", op.ID, op.Worker, op.Server, op.Kind, op.Key)
	if op.Stale {
		b.WriteString(" stale")
	}
	if op.CAS {
		fmt.Fprintf(&b, " cas=%d", op.CASIndex)
	}
	if !op.Kind.IsRead() {
		fmt.Fprintf(&b, " in{%s}", op.In.describe(op.Kind))
	}
	fmt.Fprintf(&b, " -> %s", op.Outcome)
	switch {
	case op.Outcome == OK && op.Kind.IsRead():
		fmt.Fprintf(&b, " {%s}", op.Out.describe(op.Kind))
	case op.Outcome == OK:
		fmt.Fprintf(&b, " index %d", op.Out.Index)
	case op.Err != "":
		fmt.Fprintf(&b, " (%s)", op.Err)
	}
	ret := "∞"
	if r := returnOf(op); r != math.MaxInt64 {
		ret = fmt.Sprintf("%.3fs", float64(r)/1e9)
	}
	fmt.Fprintf(&b, " [%.3fs, %s]", float64(op.Call)/1e9, ret)
	return b.String()
}

func (v Value) describe(k Kind) string {
	switch {
	case k == NodeEligibility || k == NodeDrain || k == NodeRead:
		return fmt.Sprintf("eligible=%v draining=%v", v.Eligible, v.Draining)
	case !v.Exists && k.IsRead():
		return "absent"
	case k == VarWrite || k == VarRead:
		return fmt.Sprintf("%s index=%d", v.Tag, v.Index)
	case k == JobScale:
		return fmt.Sprintf("count=%d", v.Count)
	case k == JobStop || k == AllocStop:
		return ""
	}
	return fmt.Sprintf("%s count=%d stop=%v v%d index=%d", v.Tag, v.Count, v.Stop, v.Version, v.Index)
}

// LeaderSample is one server's raft state as its /v1/agent/self said.
type LeaderSample struct {
	Server string
	State  string // "Leader", "Follower", "Candidate"
	Term   uint64
	At     int64
}

// History is a run's ops, safe for concurrent workers.
type History struct {
	start time.Time

	mu      sync.Mutex
	ops     []Op
	samples []LeaderSample
	segment int
}

// New begins a history now.
func New() *History { return &History{start: time.Now()} }

// Now is nanoseconds since the history began.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records a finished op (Call and Return set by the caller with Now)
// and returns it with its ID.
func (h *History) Add(op Op) Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	op.ID = len(h.ops)
	op.Segment = h.segment
	h.ops = append(h.ops, op)
	return op
}

// Settle says the cluster has settled now: every fault healed, every
// server up, a leader that has committed in its term, no call in flight.
// An unanswered call made before now took effect before now or never (a
// raft entry not in the settled leader's log is gone for good), which
// bounds the interval the checker gives it: without the bound every
// unknown write overlaps the rest of the run, and the search for a
// linearization grows with every one of them.
func (h *History) Settle() {
	now := h.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.ops {
		if h.ops[i].Outcome == Unknown && h.ops[i].Settled == 0 {
			h.ops[i].Settled = now
		}
	}
	h.segment++
}

// Sample records a server's raft state.
func (h *History) Sample(s LeaderSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples = append(h.samples, s)
}

// Ops is a copy of every op so far.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// Samples is a copy of every leader sample so far.
func (h *History) Samples() []LeaderSample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]LeaderSample(nil), h.samples...)
}

// Counts is how many ops of each kind and outcome were recorded:
// "job-register ok" -> n.
func Counts(ops []Op) map[string]int {
	out := map[string]int{}
	for _, op := range ops {
		k := string(op.Kind)
		if op.Stale {
			k += "(stale)"
		}
		out[k+" "+op.Outcome.String()]++
	}
	return out
}

// returnOf is the op's completion for the checker: for an Unknown op the
// settle after it, or never.
func returnOf(op Op) int64 {
	switch {
	case op.Outcome != Unknown:
		return op.Return
	case op.Settled != 0:
		return op.Settled
	}
	return math.MaxInt64
}

// byKey groups ops by key, each group in call order.
func byKey(ops []Op) map[string][]Op {
	out := map[string][]Op{}
	for _, op := range ops {
		out[op.Key] = append(out[op.Key], op)
	}
	for _, g := range out {
		sort.SliceStable(g, func(i, j int) bool { return g[i].Call < g[j].Call })
	}
	return out
}
