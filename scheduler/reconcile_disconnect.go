package scheduler

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// This file holds the reconciler's rules for allocations whose node lost
// contact with the servers, as docs/concepts/disconnected-clients.md states
// them: "Disconnecting allocations" (disconnecting, unknown, expiring),
// "Reconnect" (reconnecting) and "stop_on_client_after" (lost allocations
// whose client stops them itself: their replacement waits).

// markDisconnecting marks running allocations on disconnected nodes
// unknown, creates their disconnect-timeout follow-ups, and starts their
// replacement when the group asks for one (see docs/concepts/disconnected-clients.md, "Disconnecting allocations").
//
// It returns the marked allocations that another member of their chain
// stands in for (a replacement whose own node dropped, or an original that
// came back and went again before its reconnect was resolved): they wait on
// standby like other replaced unknown allocations.
func (r *reconciler) markDisconnecting(g *groupState, disconnecting allocSet) allocSet {
	standby := allocSet{}
	if len(disconnecting) == 0 {
		return standby
	}
	now := r.in.Now
	var timeouts, later []*delayedReschedule
	for _, a := range disconnecting.sorted() {
		upd := g.change(a)
		upd.ClientStatus = structs.AllocClientStatusUnknown
		upd.ClientDescription = structs.AllocUnknown
		upd.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, now)
		g.disconnected[upd.ID] = upd

		if expiry, ok := upd.DisconnectTimeout(); ok {
			timeouts = append(timeouts, &delayedReschedule{alloc: upd, at: expiry})
		}
		if g.replaced[a.ID] {
			standby[upd.ID] = upd
			continue
		}
		upd = r.withChainTracker(g, upd)
		if upd.DisconnectPolicy().Replace && !r.siteHeld(upd) {
			at, ok := nextRescheduleTime(upd, now)
			if ok && !at.After(now.Add(rescheduleWindow)) {
				r.rescheduleNow(g, upd)
				continue
			}
			if ok {
				later = append(later, &delayedReschedule{alloc: upd, at: at})
			}
		}
		g.keep[upd.ID] = upd
	}

	// The timeout evaluation is recorded on the allocation so that the
	// server can cancel it when the whole set reconnects (see docs/concepts/disconnected-clients.md, "Reconnect").
	evals, byAlloc := r.batchFollowups(timeouts, structs.EvalTriggerMaxDisconnectTimeout)
	g.followups = append(g.followups, evals...)
	for id, evalID := range byAlloc {
		g.disconnected[id].FollowupEvalID = evalID
	}
	// The replacement's own follow-up is found again by time, not by
	// FollowupEvalID: see replaceUnknown.
	r.rescheduleLater(g, later, false)
	return standby
}

// siteHeld reports whether a's node is one of a site in a declared
// outage that is disconnected or reconnecting: then a is not replaced
// while it is unknown; it waits for its client's report, or becomes lost
// when its window ends and is replaced then (see
// docs/concepts/disconnected-clients.md, "Site outages").
func (r *reconciler) siteHeld(a *structs.Allocation) bool {
	return r.in.SiteHeldNodes[a.NodeID] != ""
}

// siteHeldNodes finds, among the nodes of the live allocations (unknown
// ones, and running ones this evaluation may mark unknown), those whose
// replacements a declared site outage holds: disconnected ones, and
// initializing ones, whose clients are back and about to report (replacing
// what they report a moment later would only have one of the two stopped).
// It reads nothing more while no outage is declared. The values name the
// sites, as the operator reads them (SiteOutage.Site).
func siteHeldNodes(st State, allocs []*structs.Allocation) (map[string]string, error) {
	outages, err := st.SiteOutages(nil)
	if err != nil || len(outages) == 0 {
		return nil, err
	}
	held := map[string]string{}
	seen := map[string]bool{}
	for _, a := range allocs {
		if a.TerminalStatus() || seen[a.NodeID] {
			continue
		}
		seen[a.NodeID] = true
		node, err := st.NodeByID(nil, a.NodeID)
		if err != nil {
			return nil, fmt.Errorf("looking up node %s: %w", a.NodeID, err)
		}
		if node == nil || (node.Status != structs.NodeStatusDisconnected && node.Status != structs.NodeStatusInit) {
			continue
		}
		for _, o := range outages {
			if o.Covers(node) {
				held[node.ID] = o.Site()
			}
		}
	}
	return held, nil
}

// siteHeldDescription is the evaluation's description when a site outage
// held replacements in it, which `nomad eval status` shows: "replacements
// held by a site outage: 2 allocations on dc1 in node pool edge". It is
// read from the results: the unknown allocations (or those marked so now)
// on held nodes, in groups that replace, that nothing replaces or stops.
func siteHeldDescription(held map[string]string, allocs []*structs.Allocation, res ReconcileResults) string {
	if len(held) == 0 {
		return ""
	}
	settled, marked := map[string]bool{}, map[string]bool{}
	for _, g := range res.Groups {
		for _, p := range g.Place {
			if p.previousAlloc != nil {
				settled[p.previousAlloc.ID] = true
			}
		}
		for _, st := range g.Stop {
			settled[st.alloc.ID] = true
		}
		for id := range g.Disconnect {
			marked[id] = true
		}
	}
	bySite := map[string]int{}
	for _, a := range allocs {
		site := held[a.NodeID]
		unknown := a.ClientStatus == structs.AllocClientStatusUnknown || marked[a.ID]
		if site == "" || !unknown || a.ServerTerminalStatus() || a.NextAllocation != "" || settled[a.ID] || !a.DisconnectPolicy().Replace {
			continue
		}
		bySite[site]++
	}
	if len(bySite) == 0 {
		return ""
	}
	sites := make([]string, 0, len(bySite))
	for site := range bySite {
		sites = append(sites, site)
	}
	sort.Strings(sites)
	parts := make([]string, len(sites))
	for i, site := range sites {
		parts[i] = fmt.Sprintf("%d allocations on %s", bySite[site], site)
	}
	return "replacements held by a site outage: " + strings.Join(parts, "; ")
}

// replaceUnknown replaces the counted unknown allocations whose group
// replaces on disconnect and whose reschedule delay, counted from the
// moment they became unknown, has passed (see docs/concepts/disconnected-clients.md, "Disconnecting allocations"). With replace = false, or
// with the attempts used up, they wait for their node or their expiry.
//
// When a replacement placed while the allocation was unknown has since been
// lost, or came back failed, the chain goes on from that replacement instead
// (continueChain): replacing the unknown one afresh would start its
// reschedule count again. Precondition: chooseStandIns put the unknown
// allocations that stand for their instance into g.keep, and
// markDisconnecting already decided those marked in this evaluation.
func (r *reconciler) replaceUnknown(g *groupState) {
	for _, a := range g.keep.sorted() {
		if a.ClientStatus != structs.AllocClientStatusUnknown {
			continue
		}
		if _, marked := g.disconnected[a.ID]; marked {
			continue // decided by markDisconnecting in this evaluation
		}
		if !a.DisconnectPolicy().Replace || g.heldCanary(a) || r.siteHeld(a) {
			continue
		}
		since, ok := a.UnknownSince()
		if !ok {
			continue
		}
		if ended := r.endedReplacement(g, a, since); ended != nil {
			r.continueChain(g, a, ended)
			continue
		}
		v := chainView(g, a)
		at, ok := nextRescheduleTime(v, since)
		if ok && !at.After(r.in.Now.Add(rescheduleWindow)) {
			delete(g.keep, a.ID)
			r.rescheduleNow(g, v)
		}
	}
}

// endedReplacement returns the newest member of a's chain when it was placed
// while a was unknown (since its latest unknown entry), nothing replaced it,
// and the servers stopped it, in this evaluation or before, as lost or as
// failed (one that came back failed: reconnectFailed); nil otherwise. A
// failed one that was not away is not looked for: it holds the instance
// (holdsInstance), so a waits on standby and is never here.
func (r *reconciler) endedReplacement(g *groupState, a *structs.Allocation, since time.Time) *structs.Allocation {
	members := g.chains.members[g.chains.rootOf[a.ID]]
	if len(members) < 2 {
		return nil
	}
	last := g.chains.newest(members)
	if last.ID == a.ID || last.CreateTime < since.UnixNano() || len(g.successors[last.ID]) > 0 {
		return nil
	}
	if st := g.stopOf(last.ID); st != nil {
		if st.clientStatus == structs.AllocClientStatusLost || st.clientStatus == structs.AllocClientStatusFailed {
			return last
		}
		return nil
	}
	if !last.ServerTerminalStatus() {
		return nil
	}
	lost := last.DesiredDescription == structs.AllocLost
	failed := last.ClientStatus == structs.AllocClientStatusFailed && last.DesiredDescription == structs.AllocRescheduled
	if lost || failed {
		return last
	}
	return nil
}

// continueChain reschedules ended, the replacement of the counted unknown
// allocation a that was lost or came back failed, by the group's
// reschedule policy, as a failed allocation is (see
// docs/concepts/disconnected-clients.md, "A replacement that fails"): its
// successor extends the chain's newest reschedule tracker and avoids ended's
// node, once the policy's delay, counted from the failure or the loss, has
// passed; until then a follow-up evaluation waits for it, recorded on
// ended's stop when this evaluation stops it. With the attempts used up
// nothing is placed: a keeps standing for the instance until it returns or
// expires.
func (r *reconciler) continueChain(g *groupState, a, ended *structs.Allocation) {
	g.gone = slices.DeleteFunc(g.gone, func(x *structs.Allocation) bool { return x.ID == ended.ID })
	st := g.stopOf(ended.ID)
	view := chainView(g, ended)
	since := time.Unix(0, ended.ModifyTime)
	switch {
	case ended.ClientStatus == structs.AllocClientStatusFailed:
		since = lastEventTime(ended)
	case st != nil:
		since = r.in.Now
	}
	at, ok := nextRescheduleTime(view, since)
	if !ok {
		return
	}
	own := r.in.EvalID != "" && ended.FollowupEvalID == r.in.EvalID
	if own || !at.After(r.in.Now.Add(rescheduleWindow)) {
		delete(g.keep, a.ID)
		g.ignored[a.ID] = a
		g.replacements = append(g.replacements, placementRequest{
			name: ended.Name, taskGroup: g.tg, previousAlloc: view, reschedule: true, standsFor: a,
			rescheduleDelay: rescheduleDelay(ended.LookupTaskGroup().ReschedulePolicy, view.RescheduleTracker),
		})
		return
	}
	if st == nil {
		return // the follow-up recorded when it was stopped comes at its time
	}
	evals, byAlloc := r.batchFollowups([]*delayedReschedule{{alloc: ended, at: at}}, structs.EvalTriggerRetryFailedAlloc)
	g.followups = append(g.followups, evals...)
	st.followupEvalID = byAlloc[ended.ID]
	g.delayed[ended.ID] = ended
}

// reconcileReconnecting resolves the allocations whose client reported
// again after they were unknown (see docs/concepts/disconnected-clients.md, "Reconnect"). Each is first judged alone:
// failed, finished, stopped and outdated ones are stopped. The others are
// resolved chain by chain, as one unit per instance: with the members of
// their chain that are heard from and counted, they contend for the
// instance, and exactly one survives (survivor). Members still unknown take
// no part: they are neither counted nor stopped, and are resolved the same
// way when they return, or lost when their window ends.
func (r *reconciler) reconcileReconnecting(g *groupState, reconnecting allocSet) {
	back := allocSet{}
	for _, o := range reconnecting.sorted() {
		switch {
		case o.ClientStatus == structs.AllocClientStatusFailed:
			r.reconnectFailed(g, o)

		case o.ClientTerminalStatus() && r.isBatch():
			// A batch allocation that finished while away did its work.
			r.decide(g, structs.ReconnectRuleFinished, o, nil)
			r.keepReconnected(g, o)

		case o.ClientTerminalStatus():
			r.stopAlone(g, o, structs.ReconnectRuleFinished, structs.AllocNotNeeded, o.ClientStatus)

		case o.DesiredTransition.ShouldMigrate():
			r.stopAlone(g, o, structs.ReconnectRuleMigrated, r.migrateDesc(o), "")

		case o.DesiredTransition.ShouldReschedule():
			r.stopAlone(g, o, structs.ReconnectRuleRescheduled, structs.AllocNotNeeded, "")

		case o.Job == nil || o.Job.Version < r.in.Job.Version:
			r.stopAlone(g, o, structs.ReconnectRuleJobVersion, structs.AllocNotNeeded, "")

		default:
			back[o.ID] = o
		}
	}
	byChain := g.chains.byChain(back)
	for _, root := range sortedRoots(byChain) {
		counted := g.chains.members[root].filter(func(a *structs.Allocation) bool {
			_, ok := g.keep[a.ID]
			return ok && r.heard(a)
		})
		contenders := g.chains.ordered(byChain[root].union(counted))
		keep := survivor(contenders)
		r.stopFailedMembers(g, root, keep)
		r.withChainTracker(g, keep)
		for _, a := range contenders {
			_, returned := back[a.ID]
			switch {
			case a.ID == keep.ID && returned:
				r.keepReconnected(g, a)
			case a.ID == keep.ID:
			case returned:
				r.stop(g, r.decide(g, contestRule(keep, a), keep, a), structs.AllocNotNeeded, "")
			default:
				delete(g.keep, a.ID)
				r.stop(g, r.decide(g, contestRule(keep, a), keep, a), structs.AllocReconnected, "")
			}
		}
	}
}

// reconnectFailed resolves an allocation that came back failed. When
// another member of its chain holds the instance (holdsInstance: live,
// unknown ones included, or failed and waiting), it is stopped as failed and
// that member stays; an unknown original it replaced goes on with the
// chain from it (continueChain), so its failure counts. Otherwise it is
// rescheduled by its group's policy as any failed allocation (see
// docs/concepts/disconnected-clients.md, "A replacement that fails"),
// counting the attempts its chain used (withChainTracker): stopped now and
// replaced as its successor (placeMissing) when the policy's delay has
// passed; else kept, failed and desired run, with an alloc-failure
// follow-up for its time, or for good once its attempts are used up. A new
// history entry ends its reconnect either way. Replacing it regardless of
// the policy would let a task that keeps failing on a flaky node be placed
// again at every return.
func (r *reconciler) reconnectFailed(g *groupState, o *structs.Allocation) {
	others := g.chains.members[g.chains.rootOf[o.ID]].filter(func(a *structs.Allocation) bool {
		return a.ID != o.ID && holdsInstance(a)
	})
	if len(others) > 0 {
		r.stopAlone(g, o, structs.ReconnectRuleFailedOriginal, structs.AllocRescheduled, structs.AllocClientStatusFailed)
		return
	}
	o = r.withChainTracker(g, o)
	at, ok := nextRescheduleTime(o, lastEventTime(o))
	if ok && !at.After(r.in.Now.Add(rescheduleWindow)) {
		r.stopAlone(g, o, structs.ReconnectRuleFailedOriginal, structs.AllocRescheduled, structs.AllocClientStatusFailed)
		return
	}
	upd := g.change(o)
	upd.AppendState(structs.AllocStateFieldClientStatus, o.ClientStatus, r.in.Now)
	g.keep[upd.ID] = upd
	if ok {
		r.rescheduleLater(g, []*delayedReschedule{{alloc: upd, at: at}}, true)
	}
}

// stopFailedMembers stops the members of the chain that failed and wait
// for their reschedule (waitsForReschedule): a member that came back, keep,
// now serves the instance, so they give way as a replacement does. They
// took no part in the contest: a failed copy never wins over a live one,
// whatever the strategy. The contest's own record, when there is one,
// later replaces theirs on keep.
func (r *reconciler) stopFailedMembers(g *groupState, root string, keep *structs.Allocation) {
	for _, a := range g.chains.ordered(g.chains.members[root]) {
		if a.ID == keep.ID || !waitsForReschedule(a) || g.stopped[a.ID] != nil {
			continue
		}
		delete(g.keep, a.ID)
		r.stop(g, r.decide(g, structs.ReconnectRuleFailedReplacement, keep, a), structs.AllocReconnected, "")
	}
}

// withChainTracker gives a, a member that stands for its instance again,
// the reschedule history of its whole chain when a newer member has it
// (chainTracker), and returns a's changed copy (or a when it has the newest
// already). A kept original that drops or fails again then counts the
// attempts its chain already used (see docs/concepts/disconnected-clients.md,
// "A replacement that fails"): without this, each return would start the
// policy's count afresh.
func (r *reconciler) withChainTracker(g *groupState, a *structs.Allocation) *structs.Allocation {
	t := chainTracker(g, a)
	if t == nil {
		return a
	}
	upd := g.change(a)
	upd.RescheduleTracker = t.Copy()
	if _, kept := g.keep[upd.ID]; kept {
		g.keep[upd.ID] = upd
	}
	return upd
}

// chainView is a as its reschedule is decided: a copy carrying its chain's
// newest tracker when a has an older one (chainTracker), else a. Nothing is
// written: the copy only extends into its replacement's tracker.
func chainView(g *groupState, a *structs.Allocation) *structs.Allocation {
	t := chainTracker(g, a)
	if t == nil {
		return a
	}
	c := *a
	c.RescheduleTracker = t
	return &c
}

// chainTracker returns the newest reschedule tracker of a's chain when it
// records more than a's own, else nil. The newest holds every attempt of
// the interval, since each replacement extends its predecessor's; a member
// that stands for the instance again (an original kept over its
// replacements, one that dropped again, one older than a replacement that
// was lost) would otherwise count from a stale one.
func chainTracker(g *groupState, a *structs.Allocation) *structs.RescheduleTracker {
	latest := latestTracker(g.chains.members[g.chains.rootOf[a.ID]])
	if latest == nil {
		return nil
	}
	if own := latestTracker(allocSet{a.ID: a}); own != nil && !newerTracker(latest, own) {
		return nil
	}
	return latest
}

// latestTracker returns the reschedule tracker, among the members of s,
// with the most recent last attempt (newerTracker); nil when none has one.
func latestTracker(s allocSet) *structs.RescheduleTracker {
	var out *structs.RescheduleTracker
	for _, a := range s.sorted() {
		t := a.RescheduleTracker
		if t == nil || len(t.Events) == 0 {
			continue
		}
		if out == nil || newerTracker(t, out) {
			out = t
		}
	}
	return out
}

// newerTracker reports whether tracker t records a later history than u
// (both non-empty): a later last attempt, or as late and more attempts, as
// when several happened at one instant.
func newerTracker(t, u *structs.RescheduleTracker) bool {
	tl, ul := t.Events[len(t.Events)-1].RescheduleTime, u.Events[len(u.Events)-1].RescheduleTime
	return tl > ul || (tl == ul && len(t.Events) > len(u.Events))
}

// survivor returns the one contender of a chain to keep. They are taken
// oldest first (chainSet.ordered); each newer one takes the place of the
// pick so far if it wins against it (replacementWins). Because the order is
// the chain's, the result depends neither on map iteration nor on which
// members came back in which evaluation.
func survivor(ordered []*structs.Allocation) *structs.Allocation {
	keep := ordered[0]
	for _, a := range ordered[1:] {
		if replacementWins(keep, a) {
			keep = a
		}
	}
	return keep
}

// stopByOperator stops the allocations an operator stopped (alloc stop
// marks them for migration) and returns what is left of standby. One the
// servers cannot reach (unknown, or on a disconnected node) is stopped at
// once, whether or not a node can take its replacement: its client stops it
// when it returns (see docs/concepts/disconnected-clients.md, "Operator actions"), and the group replaces it if it falls short. One
// the servers reach is
// stopped with its replacement, in the same plan, so that it keeps serving
// while no node can take the replacement.
func (r *reconciler) stopByOperator(g *groupState, migrate, standby allocSet) allocSet {
	left := allocSet{}
	for id, a := range standby {
		if !a.DesiredTransition.ShouldMigrate() {
			left[id] = a
		}
	}
	for _, a := range standby.difference(left).sorted() {
		r.stop(g, a, r.migrateDesc(a), "")
	}
	for _, a := range migrate.sorted() {
		desc := r.migrateDesc(a)
		if r.heard(a) && !r.drainDeadlinePassed(a) {
			g.replacements = append(g.replacements, placementRequest{
				name: a.Name, taskGroup: g.tg, previousAlloc: a, stopPrevious: true, stopDesc: desc, migrate: true,
			})
			continue
		}
		// The count replaces it (placeMissing), as its successor, unless
		// the group has enough without it: another member of its chain
		// may stand in already, or the group was scaled down meanwhile.
		g.decisions.stop(stopRequest{alloc: a, statusDescription: desc, migrate: true})
		g.gone = append(g.gone, a)
	}
	return left
}

// drainDeadlinePassed reports whether a's node is draining past its
// deadline: then a is stopped whether or not its replacement can be placed.
func (r *reconciler) drainDeadlinePassed(a *structs.Allocation) bool {
	node := r.in.TaintedNodes[a.NodeID]
	if node == nil {
		return false
	}
	has, at := node.DrainStrategy.DeadlineTime()
	return has && !r.in.Now.Before(at)
}

// migrateDesc is the description of an allocation stopped for its
// migration: a drain moves it; otherwise an operator stopped it.
func (r *reconciler) migrateDesc(a *structs.Allocation) string {
	if node := r.in.TaintedNodes[a.NodeID]; node != nil && node.Drain {
		return structs.AllocMigrating
	}
	return structs.AllocStopped
}

// keepReconnected keeps a reconnected original. The AllocState entry with
// its current status ends its "needs to reconnect" state, so later job
// updates apply to it like to any other allocation.
func (r *reconciler) keepReconnected(g *groupState, o *structs.Allocation) {
	upd := g.change(o)
	upd.AppendState(structs.AllocStateFieldClientStatus, o.ClientStatus, r.in.Now)
	g.reconnected[upd.ID] = upd
	g.keep[upd.ID] = upd
}

// replacementWins reports whether a live replacement beats the original
// (an older member of its chain) under the original's group strategy (see docs/concepts/disconnected-clients.md, "Reconnect").
func replacementWins(o, rep *structs.Allocation) bool {
	if rep.Job != nil && o.Job != nil && rep.Job.Version != o.Job.Version {
		return rep.Job.Version > o.Job.Version // the newer job version always wins
	}
	switch o.DisconnectPolicy().Reconcile {
	case structs.ReconcileOptionKeepOriginal:
		return false
	case structs.ReconcileOptionKeepReplacement:
		return true
	case structs.ReconcileOptionLongestRunning:
		os, rs := startedAt(o), startedAt(rep)
		switch {
		case !os.IsZero() && !rs.IsZero():
			return rs.Before(os)
		case !rs.IsZero():
			return true
		case !os.IsZero():
			return false
		}
	}
	return bestScoreWins(o, rep)
}

// bestScoreWins compares the normalised node scores recorded at placement
// time, never recomputed: the replacement wins only if strictly better and
// not worse off (running, or the original is not). Ties keep the original.
func bestScoreWins(o, rep *structs.Allocation) bool {
	os, _ := o.Metrics.NodeScore(o.NodeID)
	rs, _ := rep.Metrics.NodeScore(rep.NodeID)
	running := func(a *structs.Allocation) bool { return a.ClientStatus == structs.AllocClientStatusRunning }
	return rs > os && (running(rep) || !running(o))
}

// startedAt is when the allocation's leader task started, or its earliest
// task when it has no leader; zero when nothing started.
func startedAt(a *structs.Allocation) time.Time {
	if tg := a.LookupTaskGroup(); tg != nil {
		for _, t := range tg.Tasks {
			if t.Leader {
				if ts := a.TaskStates[t.Name]; ts != nil {
					return ts.StartedAt
				}
				return time.Time{}
			}
		}
	}
	var first time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && !ts.StartedAt.IsZero() && (first.IsZero() || ts.StartedAt.Before(first)) {
			first = ts.StartedAt
		}
	}
	return first
}

// reviveStandby decides, chain by chain, who stands for the instance of
// the standby allocations (unknown, replaced). When nothing else of their
// chain holds the instance after this evaluation's stops (holdsInstance: a
// failed member waiting for its reschedule still does), and no replacement
// is being placed for a member, the newest of them counts again. Otherwise
// what is left stands in for them, and is returned: a scale-down leaves
// those alone, since stopping one would only hand the instance back to an
// allocation that may never return.
func (r *reconciler) reviveStandby(g *groupState, standby allocSet) allocSet {
	standIns := allocSet{}
	replacing := requestsSet(g.replacements)
	byChain := g.chains.byChain(standby)
	for _, root := range sortedRoots(byChain) {
		waiting := byChain[root]
		left := g.chains.members[root].filter(func(a *structs.Allocation) bool {
			_, waits := waiting[a.ID]
			_, replaced := replacing[a.ID]
			return !waits && (replaced || (holdsInstance(a) && g.stopped[a.ID] == nil))
		})
		if len(left) == 0 {
			ordered := g.chains.ordered(waiting)
			newest := ordered[len(ordered)-1]
			g.keep[newest.ID] = newest
			continue
		}
		for id, a := range left {
			standIns[id] = a
		}
	}
	return standIns
}

func sortedRoots(m map[string]allocSet) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stopLost stops lost and expired allocations as lost. The count replaces
// them (placeMissing) at once, except in groups whose client stops the
// allocations itself after stop_on_client_after (see docs/concepts/disconnected-clients.md, "Client while disconnected"): there the original
// may still run on a node that merely lost its link, so the replacement
// waits, through a follow-up evaluation, until the client has surely
// stopped it; two copies never run at once.
func (r *reconciler) stopLost(g *groupState, lost allocSet) {
	now := r.in.Now
	var later []*delayedReschedule
	for _, a := range lost.sorted() {
		// No rescheduleWindow here: a replacement a moment early is
		// exactly the second copy this delay exists to prevent.
		at, ok := clientStopsAt(a, now)
		if !ok {
			r.stop(g, a, structs.AllocLost, structs.AllocClientStatusLost)
			g.gone = append(g.gone, a)
			continue
		}
		later = append(later, &delayedReschedule{alloc: a, at: at})
		g.waiting[a.ID] = a
	}
	if len(later) == 0 {
		return
	}
	// The evaluation is recorded on the stopped allocation: when it runs,
	// its allocations are due whatever the clocks say (awaitClientStop).
	evals, byAlloc := r.batchFollowups(later, structs.EvalTriggerRetryFailedAlloc)
	g.followups = append(g.followups, evals...)
	for _, l := range later {
		g.delayed[l.alloc.ID] = l.alloc
		g.decisions.stop(stopRequest{
			alloc: l.alloc, statusDescription: structs.AllocLost,
			clientStatus: structs.AllocClientStatusLost, followupEvalID: byAlloc[l.alloc.ID],
		})
	}
}

// awaitClientStop finds, among the allocations ignored as already stopped,
// those that stopLost left waiting for their client to stop them and that
// nothing has replaced yet. Until their time they hold their name and place
// in the count; from then on the count replaces them, as their successors.
//
// The time is counted from the allocation's ModifyTime, the server time of
// the plan that made it lost (a moment after the evaluation that decided
// it): nothing else writes a lost allocation but its returning client,
// which only moves the time later. The follow-up evaluation recorded on the
// allocation is due at the decision's time, so it replaces the allocation
// whatever ModifyTime says. But the broker may have canceled it in favour of
// this very evaluation (it keeps only a job's newest pending one), so every
// evaluation that leaves an allocation waiting creates a follow-up for its
// time: a spare evaluation costs less than a replacement that never comes.
func (r *reconciler) awaitClientStop(g *groupState, ignored allocSet) {
	var later []*delayedReschedule
	for _, a := range ignored.sorted() {
		if a.ClientStatus != structs.AllocClientStatusLost || !a.ServerTerminalStatus() ||
			a.NextAllocation != "" || len(g.successors[a.ID]) > 0 || a.ModifyTime == 0 {
			continue
		}
		at, ok := clientStopsAt(a, time.Unix(0, a.ModifyTime))
		if !ok {
			continue
		}
		ownFollowup := r.in.EvalID != "" && a.FollowupEvalID == r.in.EvalID
		if !at.After(r.in.Now) || ownFollowup || tasksDead(a) {
			g.gone = append(g.gone, a)
			continue
		}
		g.waiting[a.ID] = a
		later = append(later, &delayedReschedule{alloc: a, at: at})
	}
	if len(later) > 0 {
		evals, _ := r.batchFollowups(later, structs.EvalTriggerRetryFailedAlloc)
		g.followups = append(g.followups, evals...)
	}
}

// clientStopsAt returns when the client of an allocation lost at lostAt has
// surely stopped it: lostAt + stop_on_client_after + the largest
// kill_timeout of the group's tasks, read from the allocation's own job
// version (see docs/concepts/disconnected-clients.md, "Client while disconnected"). ok is false when the group has no stop_on_client_after, or
// has a lost window, which validation refuses together with it: an
// allocation that may come back is not stopped by its client.
func clientStopsAt(a *structs.Allocation, lostAt time.Time) (time.Time, bool) {
	tg := a.LookupTaskGroup()
	stop := tg.StopOnClientAfter()
	if stop <= 0 || a.DisconnectPolicy().LostAfter > 0 {
		return time.Time{}, false
	}
	var kill time.Duration
	for _, t := range tg.Tasks {
		k := t.KillTimeout
		if k <= 0 {
			k = structs.DefaultKillTimeout // what the client uses
		}
		kill = max(kill, k)
	}
	return lostAt.Add(stop + kill), true
}

// tasksDead reports whether the allocation's client has reported every
// task of its group dead: then no copy runs, whatever the time.
func tasksDead(a *structs.Allocation) bool {
	tg := a.LookupTaskGroup()
	if tg == nil || len(tg.Tasks) == 0 {
		return false
	}
	for _, t := range tg.Tasks {
		ts := a.TaskStates[t.Name]
		if ts == nil || ts.State != structs.TaskStateDead {
			return false
		}
	}
	return true
}

// reconnectOutcome is what an evaluation decided for an allocation whose
// client reported again after it was unknown, or for a replacement that
// gave way to it: logged once its plan commits, so an operator can follow
// a reconnect in the server log.
type reconnectOutcome struct {
	alloc *structs.Allocation
	msg   string
	rule  string
	// outcome names msg for the reconnect counter (see Recorder).
	outcome string
}

// Outcomes of a reconnect, as counted.
const (
	outcomeResumed            = "resumed"
	outcomeReplacementStopped = "replacement_stopped"
	outcomeReconnectedStopped = "reconnected_stopped"
)

// reconnectOutcomes reads the reconnect decisions from the reconciler's
// results for job (nil when purged): kept originals, stopped originals and
// stopped replacements.
func reconnectOutcomes(job *structs.Job, res ReconcileResults) []reconnectOutcome {
	var out []reconnectOutcome
	for _, g := range res.Groups {
		for _, a := range sortedAllocs(g.Reconnect) {
			if u, ok := g.Updates[a.ID]; ok {
				a = u
			}
			rule := a.DisconnectPolicy().Reconcile
			if a.ClientTerminalStatus() {
				rule = "finished while disconnected"
			}
			out = append(out, reconnectOutcome{alloc: a, msg: "allocation resumed after its node reconnected", rule: rule, outcome: outcomeResumed})
		}
		for _, st := range g.Stop {
			a := st.alloc
			switch {
			case st.statusDescription == structs.AllocReconnected:
				out = append(out, reconnectOutcome{alloc: a, msg: "replacement stopped: its original reconnected and was kept",
					rule: a.DisconnectPolicy().Reconcile, outcome: outcomeReplacementStopped})
			case a.NeedsToReconnect() && a.ClientStatus != structs.AllocClientStatusUnknown:
				out = append(out, reconnectOutcome{alloc: a, msg: "reconnected allocation stopped", rule: stopRule(job, a, st),
					outcome: outcomeReconnectedStopped})
			}
		}
	}
	return out
}

// stopRule names why a reconnected allocation was stopped, in the terms of
// docs/concepts/disconnected-clients.md, "Reconnect".
func stopRule(job *structs.Job, a *structs.Allocation, st stopRequest) string {
	switch {
	case job == nil || job.Stopped():
		return "job stopped"
	case a.Job == nil || a.Job.Version < job.Version:
		return "older job version"
	case a.ClientStatus == structs.AllocClientStatusFailed:
		return "failed while disconnected"
	case a.ClientTerminalStatus():
		return "finished while disconnected"
	case st.statusDescription == structs.AllocStopped || st.statusDescription == structs.AllocMigrating:
		return st.statusDescription
	case a.DesiredTransition.ShouldReschedule():
		return "rescheduled while disconnected"
	}
	return a.DisconnectPolicy().Reconcile + ": a member of its replacement chain is kept"
}

// reconnectReport is what reportReconnectOutcomes needs from one plan
// submission.
type reconnectReport struct {
	Logger   hclog.Logger
	Recorder Recorder
	Outcomes []reconnectOutcome
	// Replacing are the plan's new allocations that replace unknown ones.
	Replacing map[string]bool
	Result    *structs.PlanResult
}

// reportReconnectOutcomes logs at INFO, and counts, the outcomes whose
// allocation the committed plan holds, and counts the committed
// replacements of unknown allocations; what a rejected part of a plan
// decided is reported when a later attempt commits it.
func reportReconnectOutcomes(r reconnectReport) {
	if r.Result == nil || (len(r.Outcomes) == 0 && len(r.Replacing) == 0) {
		return
	}
	committed := map[string]bool{}
	for _, m := range []map[string][]*structs.Allocation{r.Result.NodeUpdate, r.Result.NodeAllocation} {
		for _, allocs := range m {
			for _, a := range allocs {
				committed[a.ID] = true
			}
		}
	}
	placed, stopped := 0, 0
	for id := range r.Replacing {
		if committed[id] {
			placed++
		}
	}
	for _, o := range r.Outcomes {
		if !committed[o.alloc.ID] {
			continue
		}
		r.Logger.Info(o.msg, "alloc_id", o.alloc.ID, "alloc_name", o.alloc.Name, "node_id", o.alloc.NodeID, "rule", o.rule)
		r.Recorder.Reconnect(o.outcome, o.rule)
		if o.outcome == outcomeReplacementStopped {
			stopped++
		}
	}
	if placed > 0 || stopped > 0 {
		r.Recorder.DisconnectReplacements(placed, stopped)
	}
}
