package scheduler

import (
	"github.com/nomad-edge/nomad/nomad/structs"
)

// GroupResults is what the reconciler decided for one group, as named sets.
// An allocation is in at most one of Stop, Updates and Ignore; the counts of
// DesiredUpdates are read from these sets, never kept alongside them.
type GroupResults struct {
	Name string
	// DeploymentID is the deployment new and updated allocations join;
	// empty when the group does not deploy.
	DeploymentID string
	// Place are new allocations: missing instances, replacements of lost,
	// failed, migrating and unknown ones.
	Place []placementRequest
	// DestructiveUpdate replace an allocation of an older job version by
	// one of the current version with the same name.
	DestructiveUpdate []placementRequest
	// Stop are allocations to stop.
	Stop []stopRequest
	// Updates holds the new version of every allocation changed without a
	// restart, once whatever changed; the sets below say what changed.
	Updates allocSet
	// InplaceUpdate are moved to the current job version.
	InplaceUpdate allocSet
	// Disconnect are marked unknown (see docs/concepts/disconnected-clients.md,
	// "Disconnecting allocations").
	Disconnect allocSet
	// Reconnect are reconnected originals that were kept (see
	// docs/concepts/disconnected-clients.md, "Reconnect").
	Reconnect allocSet
	// FollowupTagged carry the evaluation that will replace them
	// (FollowupEvalID).
	FollowupTagged allocSet
	// Ignore need nothing.
	Ignore allocSet
	// Recorded are kept allocations, also in Ignore, whose only change is
	// the reconnect decision record they get (see reconnect_record.go);
	// the plan writes them as in-place updates.
	Recorded allocSet
	// RescheduleLater are replaced by a follow-up evaluation, when their
	// reschedule delay or their client's own stop has passed.
	RescheduleLater allocSet
	// FollowupEvals are evaluations to create with the plan:
	// reschedule-later (alloc-failure) and disconnect-timeout ones.
	FollowupEvals []*structs.Evaluation
}

// DesiredUpdates counts the group's decisions.
func (g *GroupResults) DesiredUpdates() *structs.DesiredUpdates {
	du := &structs.DesiredUpdates{
		Ignore:            uint64(len(g.Ignore)),
		Stop:              uint64(len(g.Stop)),
		InPlaceUpdate:     uint64(len(g.InplaceUpdate)),
		DestructiveUpdate: uint64(len(g.DestructiveUpdate)),
		Disconnect:        uint64(len(g.Disconnect)),
		Reconnect:         uint64(len(g.Reconnect)),
		RescheduleLater:   uint64(len(g.RescheduleLater)),
	}
	for _, p := range g.Place {
		switch {
		case p.canary:
			du.Canary++
		case p.reschedule:
			du.RescheduleNow++
		case p.migrate:
			du.Migrate++
		default:
			du.Place += uint64(p.instances())
		}
	}
	for _, s := range g.Stop {
		if s.migrate {
			du.Migrate++
		}
	}
	return du
}

// decisions gathers what the rules of one group decide, in the order they
// decide it. A later rule may override an earlier one (a scale-down stops
// an allocation a reconnect kept); results resolves that once, at the end.
type decisions struct {
	stops   []stopRequest
	stopped allocSet
	// changed holds the newest copy of each allocation changed in place:
	// a second change to the same allocation edits that copy.
	changed allocSet
	// What changed; each a subset of changed.
	inplace, disconnected, reconnected, tagged allocSet
	ignored                                    allocSet
	// recorded are copies that only carry a reconnect decision record;
	// a later change takes the copy over (change).
	recorded allocSet
	// delayed are replaced by a follow-up evaluation.
	delayed   allocSet
	followups []*structs.Evaluation
}

func newDecisions() decisions {
	return decisions{
		stopped: allocSet{}, changed: allocSet{}, inplace: allocSet{}, disconnected: allocSet{},
		reconnected: allocSet{}, tagged: allocSet{}, ignored: allocSet{}, delayed: allocSet{},
		recorded: allocSet{},
	}
}

// change returns the copy of a to change in place: the one an earlier rule
// already changed, or a fresh one.
func (d *decisions) change(a *structs.Allocation) *structs.Allocation {
	if u, ok := d.changed[a.ID]; ok {
		return u
	}
	u, ok := d.recorded[a.ID]
	if ok {
		delete(d.recorded, a.ID)
	} else {
		u = a.Copy()
	}
	d.changed[u.ID] = u
	return u
}

// recordOn puts a reconnect decision record on the kept allocation a: on
// its changed copy when a rule changed it, else on a copy that carries
// only the record.
func (d *decisions) recordOn(a *structs.Allocation, rec *structs.ReconnectDecision) {
	if u, ok := d.changed[a.ID]; ok {
		u.ReconnectDecision = rec
		return
	}
	if u, ok := d.recorded[a.ID]; ok {
		u.ReconnectDecision = rec
		return
	}
	u := a.Copy()
	u.ReconnectDecision = rec
	d.recorded[a.ID] = u
}

func (d *decisions) stop(req stopRequest) {
	d.stops = append(d.stops, req)
	d.stopped[req.alloc.ID] = req.alloc
}

// stopOf returns this evaluation's stop request for the allocation, to
// amend, or nil.
func (d *decisions) stopOf(id string) *stopRequest {
	for i := range d.stops {
		if d.stops[i].alloc.ID == id {
			return &d.stops[i]
		}
	}
	return nil
}

func (d *decisions) ignore(s allocSet) {
	for id, a := range s {
		d.ignored[id] = a
	}
}

// results is the group's final answer. An allocation that is stopped is
// not also updated: its stop wins. What is kept and unchanged is ignored.
func (d *decisions) results(name string, keep allocSet, place, destructive []placementRequest) *GroupResults {
	updates := d.changed.difference(d.stopped)
	within := func(s allocSet) allocSet { return s.difference(s.difference(updates)) }
	return &GroupResults{
		Name:              name,
		Place:             place,
		DestructiveUpdate: destructive,
		Stop:              d.stops,
		Updates:           updates,
		InplaceUpdate:     within(d.inplace),
		Disconnect:        within(d.disconnected),
		Reconnect:         within(d.reconnected),
		FollowupTagged:    within(d.tagged),
		Ignore:            d.ignored.union(keep.difference(updates, d.stopped)),
		Recorded:          d.recorded.difference(d.stopped),
		RescheduleLater:   d.delayed,
		FollowupEvals:     d.followups,
	}
}
