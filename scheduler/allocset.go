package scheduler

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// allocSet is a set of allocations keyed by ID. The reconciler is written
// as set algebra over it so that each rule reads like the spec.
type allocSet map[string]*structs.Allocation

func newAllocSet(allocs []*structs.Allocation) allocSet {
	s := make(allocSet, len(allocs))
	for _, a := range allocs {
		s[a.ID] = a
	}
	return s
}

// byTaskGroup splits allocations by group name.
func byTaskGroup(allocs []*structs.Allocation) map[string]allocSet {
	out := map[string]allocSet{}
	for _, a := range allocs {
		s, ok := out[a.TaskGroup]
		if !ok {
			s = allocSet{}
			out[a.TaskGroup] = s
		}
		s[a.ID] = a
	}
	return out
}

// difference returns the members of s in none of others.
func (s allocSet) difference(others ...allocSet) allocSet {
	// Sized for the common case, where little is taken away: growing a
	// set of thousands was a good part of a reconcile's time.
	out := make(allocSet, len(s))
outer:
	for id, a := range s {
		for _, o := range others {
			if _, ok := o[id]; ok {
				continue outer
			}
		}
		out[id] = a
	}
	return out
}

// union returns the members of s and of every other set.
func (s allocSet) union(others ...allocSet) allocSet {
	size := len(s)
	for _, o := range others {
		size += len(o)
	}
	out := make(allocSet, size)
	for id, a := range s {
		out[id] = a
	}
	for _, o := range others {
		for id, a := range o {
			out[id] = a
		}
	}
	return out
}

// filter returns the members for which keep is true.
func (s allocSet) filter(keep func(*structs.Allocation) bool) allocSet {
	out := allocSet{}
	for id, a := range s {
		if keep(a) {
			out[id] = a
		}
	}
	return out
}

// sorted returns the members ordered by name index, then ID, so that
// everything derived from a set is deterministic.
func (s allocSet) sorted() []*structs.Allocation {
	// The name index is parsed once per member, not once per comparison:
	// sorting sets of 10,000 was most of a reconcile's time.
	keyed := make([]indexedAlloc, 0, len(s))
	for _, a := range s {
		keyed = append(keyed, indexedAlloc{index: a.Index(), alloc: a})
	}
	slices.SortFunc(keyed, func(x, y indexedAlloc) int {
		if c := cmp.Compare(x.index, y.index); c != 0 {
			return c
		}
		return strings.Compare(x.alloc.ID, y.alloc.ID)
	})
	out := make([]*structs.Allocation, len(keyed))
	for i, k := range keyed {
		out[i] = k.alloc
	}
	return out
}

type indexedAlloc struct {
	index uint
	alloc *structs.Allocation
}

// filterByTerminal returns the members that are not terminal. Unknown
// allocations are not terminal and stay.
func (s allocSet) filterByTerminal() allocSet {
	return s.filter(func(a *structs.Allocation) bool { return !a.TerminalStatus() })
}

// taintedSets is the classification of a group's allocations by the state
// of their node and their own disconnect history (see
// docs/concepts/disconnected-clients.md, "Disconnecting allocations"). Every
// allocation lands in exactly one set; the first matching rule wins.
type taintedSets struct {
	// untainted allocations count toward the group and are subject to the
	// ordinary rules (updates, scaling, rescheduling of failed ones).
	untainted allocSet
	// migrate allocations are marked to move off a draining node.
	migrate allocSet
	// lost allocations are on a down or vanished node, or on a
	// disconnected node without a lost window, or still pending there:
	// they are stopped as lost and replaced.
	lost allocSet
	// disconnecting allocations run on a disconnected node whose group has
	// a lost window: they are marked unknown in this evaluation. Those
	// already replaced (a reconnect not yet resolved) do not count.
	disconnecting allocSet
	// reconnecting allocations were unknown and their client has reported
	// again: they are resolved against their replacements (see
	// docs/concepts/disconnected-clients.md, "Reconnect").
	reconnecting allocSet
	// expiring allocations are unknown past their lost window: stopped as
	// lost and replaced (see docs/concepts/disconnected-clients.md,
	// "Disconnecting allocations").
	expiring allocSet
	// standby allocations are unknown and replaced: another live member
	// of their chain stands for their instance until they reconnect or
	// expire.
	standby allocSet
	// ignore allocations need nothing: already stopped by the server or
	// lost.
	ignore allocSet
}

// taintFilter is the input of filterByTainted.
type taintFilter struct {
	now time.Time
	// nodes holds the nodes of the allocations that are down,
	// disconnected, draining or ineligible; a nil entry is a node that no
	// longer exists.
	nodes map[string]*structs.Node
	// batch keeps the successful allocations of batch jobs counted even
	// once stopped: a batch job's finished work is never redone.
	batch bool
	// replaced holds the allocations another member of their chain stands
	// in for (see chainSet.replaced).
	replaced map[string]bool
}

// successors maps an allocation ID to the allocations that replaced it
// (their PreviousAllocation), in a stable order.
func (s allocSet) successors() map[string][]*structs.Allocation {
	out := map[string][]*structs.Allocation{}
	replacements := s.filter(func(a *structs.Allocation) bool { return a.PreviousAllocation != "" })
	for _, a := range replacements.sorted() {
		out[a.PreviousAllocation] = append(out[a.PreviousAllocation], a)
	}
	return out
}

func isLive(a *structs.Allocation) bool { return !a.TerminalStatus() }

// holdsInstance reports whether a stands for its instance: it is live, or
// it failed and, still desired run, waits for its reschedule or has used
// up its attempts (waitsForReschedule). Such a failed allocation keeps its
// place in the count (filterByRescheduleable) and the policy decides its
// successor, so the unknown members older than it in its chain wait on
// standby: replacing one of them afresh would restart the policy's count
// (see docs/concepts/disconnected-clients.md, "A replacement that fails").
//
// One that came back failed from a disconnect (still needing to reconnect)
// holds it only while no other member does: reconnectFailed stops it when
// another does, so it never stands in for them.
func holdsInstance(a *structs.Allocation) bool {
	return isLive(a) || (waitsForReschedule(a) && !a.NeedsToReconnect())
}

// waitsForReschedule reports whether a failed and is still desired run:
// the reschedule policy decides what replaces it. (Its NextAllocation may
// name a replacement that lost to it when it came back, before it failed;
// which member stands is the chain's to say: chainSet.replaced.)
func waitsForReschedule(a *structs.Allocation) bool {
	return a.ClientStatus == structs.AllocClientStatusFailed && !a.ServerTerminalStatus()
}

// chainSet splits a group's allocations into replacement chains, O → R1 →
// R2 …, linked by PreviousAllocation. A chain stands for one instance of
// the group, so the reconciler counts and resolves it as one unit (see docs/concepts/disconnected-clients.md, "Reconnect"):
// whichever members are heard from are compared, members still unknown wait.
type chainSet struct {
	rootOf  map[string]string   // allocation ID → its chain's first member
	members map[string]allocSet // first member's ID → the whole chain
	depth   map[string]int      // replacements between the member and its root
}

// chains returns the replacement chains of s. A PreviousAllocation outside
// s (collected, or never known) starts a chain.
func (s allocSet) chains() chainSet {
	c := chainSet{
		rootOf: make(map[string]string, len(s)), members: make(map[string]allocSet, len(s)),
		depth: make(map[string]int, len(s)),
	}
	for id, a := range s {
		root, depth := a, 0
		// Most allocations start their chain: the cycle guard is only
		// built for the others.
		if p := s[a.PreviousAllocation]; p != nil {
			seen := map[string]bool{id: true}
			for ; p != nil && !seen[p.ID]; p = s[p.PreviousAllocation] {
				seen[p.ID] = true
				root, depth = p, depth+1
			}
		}
		c.rootOf[id], c.depth[id] = root.ID, depth
		chain, ok := c.members[root.ID]
		if !ok {
			chain = make(allocSet, 1)
			c.members[root.ID] = chain
		}
		chain[id] = a
	}
	return c
}

// ordered returns the members of s oldest first: by place in their chain,
// then creation. Whatever is decided from this order does not depend on map
// iteration or on the order in which members came back.
func (c chainSet) ordered(s allocSet) []*structs.Allocation {
	out := s.sorted()
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if c.depth[a.ID] != c.depth[b.ID] {
			return c.depth[a.ID] < c.depth[b.ID]
		}
		return a.CreateIndex < b.CreateIndex
	})
	return out
}

// newest returns the most recently placed member of s (by CreateIndex;
// ties by place in the chain): the last replacement of an instance, where
// its reschedule chain goes on.
func (c chainSet) newest(s allocSet) *structs.Allocation {
	ordered := c.ordered(s)
	out := ordered[len(ordered)-1]
	for _, a := range ordered {
		if a.CreateIndex > out.CreateIndex {
			out = a
		}
	}
	return out
}

// byChain groups the members of s by chain, keyed by root ID.
func (c chainSet) byChain(s allocSet) map[string]allocSet {
	out := map[string]allocSet{}
	for id, a := range s {
		root := c.rootOf[id]
		if out[root] == nil {
			out[root] = allocSet{}
		}
		out[root][id] = a
	}
	return out
}

// replaced returns the IDs of the members that another member of their
// chain stands in for. Members that hold the instance (holdsInstance: live,
// or failed and waiting for their reschedule) and are heard from stand
// before the others: live ones that are reachable (not unknown, their node
// neither disconnected, down nor gone), and failed ones wherever they are,
// since their failure is known and final. So a kept original stands in for
// the replacements that are still unknown, and so does one that failed
// since, whose failure the policy reschedules. Among those heard from, and
// among the rest when none is, the newest stands. So of a chain whose every
// live member is unknown, only the newest counts, unless a newer
// replacement failed: then the failed one holds the instance.
func (c chainSet) replaced(reachable func(*structs.Allocation) bool) map[string]bool {
	out := map[string]bool{}
	for _, members := range c.members {
		if len(members) < 2 {
			continue // a chain of one stands for itself
		}
		ordered := c.ordered(members)
		heard := func(a *structs.Allocation) bool {
			return holdsInstance(a) && (reachable(a) || waitsForReschedule(a))
		}
		for i, a := range ordered {
			for j, b := range ordered {
				if i == j || !holdsInstance(b) {
					continue
				}
				if (heard(a) && heard(b) && j > i) || (!heard(a) && (heard(b) || j > i)) {
					out[a.ID] = true
					break
				}
			}
		}
	}
	return out
}

// filterByTainted classifies the set.
func (s allocSet) filterByTainted(f taintFilter) taintedSets {
	now, taintedNodes, isBatch := f.now, f.nodes, f.batch
	out := taintedSets{
		untainted: make(allocSet, len(s)), migrate: allocSet{}, lost: allocSet{}, disconnecting: allocSet{},
		reconnecting: allocSet{}, expiring: allocSet{}, standby: allocSet{}, ignore: allocSet{},
	}
	for id, a := range s {
		node, tainted := taintedNodes[a.NodeID]
		gone := tainted && (node == nil || node.TerminalStatus())
		disconnected := tainted && node != nil && node.Status == structs.NodeStatusDisconnected
		window := a.SupportsDisconnect()

		switch {
		case a.ServerTerminalStatus():
			// A batch allocation that finished counts as done, unless it
			// was replaced first: a lost one whose client returned and
			// reported the kill as complete did not do the work, its
			// replacement does.
			if isBatch && a.ClientStatus == structs.AllocClientStatusComplete && a.NextAllocation == "" {
				out.untainted[id] = a
			} else {
				out.ignore[id] = a
			}

		case a.ClientStatus == structs.AllocClientStatusLost:
			// Lost is terminal; the replacement is decided by the count.
			out.ignore[id] = a

		case window && a.NeedsToReconnect() && !gone && !disconnected:
			// The client is talking again (node ready or initializing).
			// An allocation it has not reported yet is still unknown.
			switch {
			case a.ClientStatus != structs.AllocClientStatusUnknown:
				out.reconnecting[id] = a
			case a.Expired(now):
				out.expiring[id] = a
			case f.replaced[id]:
				out.standby[id] = a
			case a.DesiredTransition.ShouldMigrate():
				out.migrate[id] = a
			default:
				out.untainted[id] = a
			}

		case !isBatch && a.ClientStatus == structs.AllocClientStatusComplete:
			// A service allocation that finished (its client stopped it,
			// e.g. after stop_on_client_after) no longer serves: it does
			// not count, so the group gets a replacement.
			out.ignore[id] = a

		case a.ClientTerminalStatus():
			// Finished allocations never migrate: they are counted and
			// possibly rescheduled by filterByRescheduleable.
			out.untainted[id] = a

		case gone:
			out.lost[id] = a

		case disconnected && !window:
			// Groups without a window keep the pre-feature behaviour.
			out.lost[id] = a

		case disconnected && a.ClientStatus == structs.AllocClientStatusPending:
			// It never started: there is nothing to resume.
			out.lost[id] = a

		case disconnected && a.ClientStatus == structs.AllocClientStatusRunning && a.DesiredTransition.ShouldMigrate():
			// An operator stopped it as its node dropped: it is stopped
			// now, not marked (see docs/concepts/disconnected-clients.md, "Operator actions").
			out.migrate[id] = a

		case disconnected && a.ClientStatus == structs.AllocClientStatusRunning:
			out.disconnecting[id] = a

		case a.ClientStatus == structs.AllocClientStatusUnknown && a.Expired(now):
			out.expiring[id] = a

		case a.ClientStatus == structs.AllocClientStatusUnknown && f.replaced[id]:
			out.standby[id] = a

		case a.DesiredTransition.ShouldMigrate():
			out.migrate[id] = a

		default:
			out.untainted[id] = a
		}
	}
	return out
}

// rescheduleSets splits the allocations that may be replaced by the
// reschedule policy.
type rescheduleSets struct {
	untainted allocSet
	now       allocSet
	later     []*delayedReschedule
}

// delayedReschedule is an allocation to replace at a later time, through a
// follow-up evaluation.
type delayedReschedule struct {
	alloc *structs.Allocation
	at    time.Time
}

// filterByRescheduleable separates failed allocations to replace now or
// later from those that stay counted. A failed allocation that another
// member of its chain stands in for (replaced: chainSet.replaced) is
// dropped: that one counts instead. The chain decides, not NextAllocation:
// an original kept over its replacement on its return still names it, and
// when it fails later it is the one to reschedule.
func (s allocSet) filterByRescheduleable(now time.Time, evalID string, replaced map[string]bool) rescheduleSets {
	out := rescheduleSets{untainted: make(allocSet, len(s)), now: allocSet{}}
	for id, a := range s {
		if a.ClientStatus != structs.AllocClientStatusFailed {
			out.untainted[id] = a
			continue
		}
		if replaced[id] {
			continue
		}
		at, eligible := nextRescheduleTime(a, lastEventTime(a))
		switch {
		case eligible && ((evalID != "" && a.FollowupEvalID == evalID) || !at.After(now.Add(rescheduleWindow))):
			out.now[id] = a
		case eligible && a.FollowupEvalID == "":
			out.untainted[id] = a
			out.later = append(out.later, &delayedReschedule{alloc: a, at: at})
		default:
			// Not eligible (attempts used up) or already waiting on a
			// follow-up evaluation: it keeps its place in the count.
			out.untainted[id] = a
		}
	}
	sort.Slice(out.later, func(i, j int) bool { return out.later[i].alloc.ID < out.later[j].alloc.ID })
	return out
}

// nameIndex tracks which instance indexes of a group are in use so that
// new allocations fill gaps and scale-downs remove the highest ones.
type nameIndex struct {
	job, group string
	count      int
	used       map[uint]int
	// free is at or below the lowest index that may be unused, so that
	// taking names one at a time costs what the names skipped, once.
	free uint
}

func newNameIndex(job, group string, count int, in ...allocSet) *nameIndex {
	n := &nameIndex{job: job, group: group, count: count, used: map[uint]int{}}
	for _, s := range in {
		for _, a := range s {
			n.used[a.Index()]++
		}
	}
	return n
}

// next takes the lowest unused name; past the group's count it keeps
// counting up.
func (n *nameIndex) next() string {
	for n.used[n.free] > 0 {
		n.free++
	}
	n.used[n.free]++
	return structs.AllocName(n.job, n.group, n.free)
}

// take marks a name in use, reporting false when it already was.
func (n *nameIndex) take(a *structs.Allocation) bool {
	if n.used[a.Index()] > 0 {
		return false
	}
	n.used[a.Index()]++
	return true
}

// release marks a stopped allocation's index free again.
func (n *nameIndex) release(a *structs.Allocation) {
	if i := a.Index(); n.used[i] > 0 {
		n.used[i]--
		n.free = min(n.free, i)
	}
}

// stopOrder sorts the candidates for a scale-down: names at or above the
// count first, then duplicated names, then highest index; ties go to the
// most recently created. Unknown allocations are never candidates.
func (n *nameIndex) stopOrder(s allocSet) []*structs.Allocation {
	out := slices.DeleteFunc(s.sorted(), func(a *structs.Allocation) bool {
		return a.ClientStatus == structs.AllocClientStatusUnknown
	})
	rank := func(a *structs.Allocation) (bool, bool) {
		i := a.Index()
		return i >= uint(n.count), n.used[i] > 1
	}
	sort.SliceStable(out, func(i, j int) bool {
		ai, aj := out[i], out[j]
		aOver, aDup := rank(ai)
		bOver, bDup := rank(aj)
		if aOver != bOver {
			return aOver
		}
		if aDup != bDup {
			return aDup
		}
		if ai.Index() != aj.Index() {
			return ai.Index() > aj.Index()
		}
		return ai.CreateIndex > aj.CreateIndex
	})
	return out
}
