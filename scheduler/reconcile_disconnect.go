package scheduler

import (
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// This file holds the reconciler's rules for allocations whose node lost
// contact with the servers: see docs/concepts/disconnected-clients.md,
// "Disconnecting allocations" and "Replacement while unknown" (disconnecting,
// unknown, expiring), "Reconnect" and "Resolution strategies"
// (reconnecting), and "stop_on_client_after" (lost allocations whose client
// stops them itself,
// stop_on_client_after: their replacement waits).
//
// TODO("Mixed versions and upgrades" in
// docs/concepts/disconnected-clients.md): take "disconnect feature enabled"
// (all servers new enough) as
// a ReconcilerInput field; until then a group's window is always honoured.

// markDisconnecting marks running allocations on disconnected nodes
// unknown, creates their disconnect-timeout follow-ups, and starts their
// replacement when the group asks for one (see
// docs/concepts/disconnected-clients.md, "Disconnecting allocations",
// "Replacement while unknown").
//
// It returns the marked allocations that are already replaced (they came
// back and went again before their reconnect was resolved): they wait on
// standby like other replaced unknown allocations.
func (r *reconciler) markDisconnecting(g *groupState, disconnecting allocSet, replaced map[string]bool) allocSet {
	standby := allocSet{}
	if len(disconnecting) == 0 {
		return standby
	}
	now := r.in.Now
	var timeouts, later []*delayedReschedule
	updates := map[string]*structs.Allocation{}
	for _, a := range disconnecting.sorted() {
		upd := a.Copy()
		upd.ClientStatus = structs.AllocClientStatusUnknown
		upd.ClientDescription = structs.AllocUnknown
		upd.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, now)
		r.res.DisconnectUpdates[upd.ID] = upd
		updates[upd.ID] = upd
		g.du.Disconnect++

		if expiry, ok := upd.DisconnectTimeout(); ok {
			timeouts = append(timeouts, &delayedReschedule{alloc: upd, at: expiry})
		}
		if replaced[a.ID] {
			standby[upd.ID] = upd
			continue
		}
		if upd.LookupTaskGroup().ReplaceOnDisconnect() {
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
	// server can cancel it when the whole set reconnects (see
	// docs/concepts/disconnected-clients.md, "Reconnect"), step 3.
	evals, byAlloc := r.batchFollowups(timeouts, structs.EvalTriggerMaxDisconnectTimeout)
	r.res.DesiredFollowupEvals[g.tg.Name] = append(r.res.DesiredFollowupEvals[g.tg.Name], evals...)
	for id, evalID := range byAlloc {
		updates[id].FollowupEvalID = evalID
	}
	// The replacement's own follow-up is found again by time, not by
	// FollowupEvalID: see replaceUnknown.
	r.rescheduleLater(g, later, structs.EvalTriggerRetryFailedAlloc, false)
	return standby
}

// replaceUnknown replaces the counted unknown allocations whose group
// replaces on disconnect and whose reschedule delay, counted from the
// moment they became unknown, has passed (see
// docs/concepts/disconnected-clients.md, "Replacement while unknown"). With
// replace = false, or
// with the attempts used up, they wait for their node or their expiry.
func (r *reconciler) replaceUnknown(g *groupState) {
	for _, a := range g.keep.sorted() {
		if a.ClientStatus != structs.AllocClientStatusUnknown {
			continue
		}
		if _, marked := r.res.DisconnectUpdates[a.ID]; marked {
			continue // decided by markDisconnecting in this evaluation
		}
		if !a.LookupTaskGroup().ReplaceOnDisconnect() {
			continue
		}
		since, ok := a.UnknownSince()
		if !ok {
			continue
		}
		at, ok := nextRescheduleTime(a, since)
		if ok && !at.After(r.in.Now.Add(rescheduleWindow)) {
			delete(g.keep, a.ID)
			r.rescheduleNow(g, a)
		}
	}
}

// reconcileReconnecting resolves each allocation whose client reported
// again after it was unknown (see docs/concepts/disconnected-clients.md,
// "Reconnect"), step 5. It returns the live allocations
// that lost to a kept original, already stopped, for the caller to remove
// from its other sets.
func (r *reconciler) reconcileReconnecting(g *groupState, reconnecting allocSet) allocSet {
	losers := allocSet{}
	if len(reconnecting) == 0 {
		return losers
	}
	for _, o := range reconnecting.sorted() {
		switch {
		case o.ClientStatus == structs.AllocClientStatusFailed:
			// Its replacement, if any, stays; if none, the count places one.
			r.stop(o, structs.AllocRescheduled, structs.AllocClientStatusFailed, g.du)
			g.gone = append(g.gone, o)

		case o.ClientTerminalStatus() && r.isBatch():
			// A batch allocation that finished while away did its work.
			r.keepReconnected(g, o)

		case o.ClientTerminalStatus():
			r.stop(o, structs.AllocNotNeeded, o.ClientStatus, g.du)
			g.gone = append(g.gone, o)

		case o.DesiredTransition.ShouldMigrate() || o.DesiredTransition.ShouldReschedule() ||
			o.Job == nil || o.Job.Version < r.in.Job.Version:
			r.stop(o, structs.AllocNotNeeded, "", g.du)
			g.gone = append(g.gone, o)

		default:
			// Every live, counted member of the chain, not only the
			// direct successor (upstream's bug #24165).
			reps := chain(o.ID, g.successors, func(a *structs.Allocation) bool {
				_, counted := g.keep[a.ID]
				return counted && isLive(a)
			})
			originalWins := true
			for _, rep := range reps {
				if replacementWins(o, rep) {
					originalWins = false
					break
				}
			}
			if !originalWins {
				r.stop(o, structs.AllocNotNeeded, "", g.du)
				continue
			}
			r.keepReconnected(g, o)
			for _, rep := range reps {
				losers[rep.ID] = rep
				r.stop(rep, structs.AllocReconnected, "", g.du)
			}
		}
	}
	return losers
}

// keepReconnected keeps a reconnected original. The AllocState entry with
// its current status ends its "needs to reconnect" state, so later job
// updates apply to it like to any other allocation.
func (r *reconciler) keepReconnected(g *groupState, o *structs.Allocation) {
	upd := o.Copy()
	upd.AppendState(structs.AllocStateFieldClientStatus, o.ClientStatus, r.in.Now)
	r.res.ReconnectUpdates[upd.ID] = upd
	g.keep[upd.ID] = upd
	g.du.Reconnect++
}

// replacementWins reports whether a live replacement beats the
// reconnected original under the original's group strategy (see
// docs/concepts/disconnected-clients.md, "Resolution strategies").
func replacementWins(o, rep *structs.Allocation) bool {
	if rep.Job != nil && o.Job != nil && rep.Job.Version > o.Job.Version {
		return true
	}
	switch o.LookupTaskGroup().ReconcileStrategy() {
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

// reviveStandby puts back in the count the unknown originals whose every
// live successor is being stopped in this evaluation (lost, or beaten by
// another reconnect): once those are gone the original stands for its
// instance again. It returns the live successors that keep standing in,
// which a scale-down must leave alone: stopping one would only hand its
// instance back to the unknown original.
func (r *reconciler) reviveStandby(g *groupState, standby allocSet) allocSet {
	standIns := allocSet{}
	for _, o := range standby.sorted() {
		live := chain(o.ID, g.successors, func(a *structs.Allocation) bool {
			return isLive(a) && !r.stopped[a.ID]
		})
		if len(live) == 0 {
			g.keep[o.ID] = o
			continue
		}
		for _, a := range live {
			standIns[a.ID] = a
		}
	}
	return standIns
}

// stopLost stops lost and expired allocations as lost. The count replaces
// them (placeMissing) at once, except in groups whose client stops the
// allocations itself after stop_on_client_after (see
// docs/concepts/disconnected-clients.md, "stop_on_client_after"): there the
// original
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
			r.stop(a, structs.AllocLost, structs.AllocClientStatusLost, g.du)
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
	r.res.DesiredFollowupEvals[g.tg.Name] = append(r.res.DesiredFollowupEvals[g.tg.Name], evals...)
	g.du.RescheduleLater += uint64(len(later))
	for _, l := range later {
		r.addStop(stopRequest{
			alloc: l.alloc, statusDescription: structs.AllocLost,
			clientStatus: structs.AllocClientStatusLost, followupEvalID: byAlloc[l.alloc.ID],
		}, g.du)
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
		r.res.DesiredFollowupEvals[g.tg.Name] = append(r.res.DesiredFollowupEvals[g.tg.Name], evals...)
	}
}

// clientStopsAt returns when the client of an allocation lost at lostAt has
// surely stopped it: lostAt + stop_on_client_after + the largest
// kill_timeout of the group's tasks, read from the allocation's own job
// version (see docs/concepts/disconnected-clients.md,
// "stop_on_client_after"). ok is false when the group has no
// stop_on_client_after, or
// has a lost window, which validation refuses together with it: an
// allocation that may come back is not stopped by its client.
func clientStopsAt(a *structs.Allocation, lostAt time.Time) (time.Time, bool) {
	tg := a.LookupTaskGroup()
	stop := tg.StopOnClientAfter()
	if stop <= 0 || tg.LostAfter() > 0 {
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
