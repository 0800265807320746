package scheduler

import (
	"github.com/nomad-edge/nomad/nomad/structs"
)

// This file writes the reconnect decision record (structs.ReconnectDecision)
// onto both copies of an instance whenever reconcileReconnecting resolves a
// returning allocation, so `nomad alloc status` on either one says which
// rule kept which copy (see docs/concepts/disconnected-clients.md,
// "Reconnect decision record").

// decide records that rule kept kept and stopped stopped (either may be
// nil). The kept copy gets the record in the plan (recordOn), unless it is
// out of contact or this evaluation stops it too (a job update replacing
// it); the stopped one is returned as a copy carrying it, for the stop
// request.
func (r *reconciler) decide(g *groupState, rule string, kept, stopped *structs.Allocation) *structs.Allocation {
	rec := &structs.ReconnectDecision{
		Rule:     rule,
		Strategy: olderOf(g, kept, stopped).DisconnectPolicy().Reconcile,
		EvalID:   r.in.EvalID,
		Time:     r.in.Now.UnixNano(),
	}
	if kept != nil {
		rec.KeptAllocID = kept.ID
		rec.KeptScore, _ = kept.Metrics.NodeScore(kept.NodeID)
		// A stand-in the servers cannot reach is named, not written to:
		// its node could not take the update.
		if r.reachable(kept) {
			g.recordOn(kept, rec)
		}
	}
	if stopped == nil {
		return nil
	}
	rec.StoppedAllocID = stopped.ID
	rec.StoppedScore, _ = stopped.Metrics.NodeScore(stopped.NodeID)
	c := *stopped // shallow: the plan copies it again, and nothing shared is changed
	c.ReconnectDecision = rec
	return &c
}

// stopAlone stops a returning allocation that a rule judged by itself
// (failed, finished, migrated, outdated), recording the member of its chain
// that stays, if there is one.
func (r *reconciler) stopAlone(g *groupState, o *structs.Allocation, rule, desc, clientStatus string) {
	r.stop(g, r.decide(g, rule, standIn(g, o), o), desc, clientStatus)
	g.gone = append(g.gone, o)
}

// contestRule names the rule by which survivor kept keep over a, in the
// order replacementWins applies them.
func contestRule(keep, a *structs.Allocation) string {
	if keep.Job != nil && a.Job != nil && keep.Job.Version != a.Job.Version {
		return structs.ReconnectRuleJobVersion
	}
	return structs.ReconnectRuleStrategy
}

// standIn returns the newest live member of o's chain, other than o, that
// the group keeps: the copy that serves the instance once o is stopped.
func standIn(g *groupState, o *structs.Allocation) *structs.Allocation {
	members := g.chains.members[g.chains.rootOf[o.ID]].filter(func(a *structs.Allocation) bool {
		_, kept := g.keep[a.ID]
		return a.ID != o.ID && kept && isLive(a)
	})
	if len(members) == 0 {
		return nil
	}
	ordered := g.chains.ordered(members)
	return ordered[len(ordered)-1]
}

// olderOf returns whichever of a and b is nearer its chain's root (a nil
// one aside): the original, whose group strategy decides.
func olderOf(g *groupState, a, b *structs.Allocation) *structs.Allocation {
	switch {
	case a == nil:
		return b
	case b == nil || g.chains.depth[a.ID] <= g.chains.depth[b.ID]:
		return a
	}
	return b
}
