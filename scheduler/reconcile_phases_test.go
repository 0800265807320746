package scheduler

import (
	"sort"
	"testing"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// checkPhases runs the reconciler on in phase by phase and checks, around
// each phase of groupPhases, the preconditions its doc comment states that
// are cheap to check. Every reconcile of the golden scenarios goes through
// it, so a reordering of the phases that breaks one fails there.
func checkPhases(t *testing.T, in ReconcilerInput) {
	t.Helper()
	if in.Job == nil || in.Job.Stopped() {
		return // computeGroup runs no phases: stopAll
	}
	copies := make([]*structs.Allocation, len(in.Allocs))
	for i, a := range in.Allocs {
		copies[i] = a.Copy()
	}
	in.Allocs = copies
	r := &reconciler{in: in}
	r.ds = r.newDeployState()
	groups := byTaskGroup(in.Allocs)
	names := make([]string, 0, len(in.Job.TaskGroups))
	for _, tg := range in.Job.TaskGroups {
		names = append(names, tg.Name)
	}
	sort.Strings(names)
	for _, name := range names {
		tg := in.Job.LookupTaskGroup(name)
		all := groups[name]
		if all == nil {
			all = allocSet{}
		}
		g := r.newGroupState(tg, all)
		for _, p := range groupPhases {
			checkBefore(t, p.name, g)
			p.run(r, g)
			checkAfter(t, p.name, g)
		}
	}
}

// checkBefore checks what a phase needs the earlier ones to have decided.
func checkBefore(t *testing.T, phase string, g *groupState) {
	t.Helper()
	switch phase {
	case "ignore-old-batch":
		if g.chains.rootOf != nil {
			t.Errorf("group %s: ignore-old-batch runs after classify", g.tg.Name)
		}
	case "reschedule-later":
		for _, l := range g.resched.later {
			if g.stopped[l.alloc.ID] != nil {
				t.Errorf("group %s: %s is stopped and still to reschedule later", g.tg.Name, l.alloc.ID)
			}
		}
	case "scale-down":
		if len(g.destructive) > 0 {
			t.Errorf("group %s: scale-down runs after a destructive update was decided", g.tg.Name)
		}
	case "reschedule-now", "revive-standby":
		if g.standby == nil {
			t.Errorf("group %s: %s runs before mark-disconnecting decided the standby set", g.tg.Name, phase)
		}
	}
}

// checkAfter checks what holds once a phase has run: classify gives every
// allocation exactly one taint class, and from then on a replaced
// allocation is never also counted as kept.
func checkAfter(t *testing.T, phase string, g *groupState) {
	t.Helper()
	if phase == "classify" {
		seen := map[string]bool{}
		for _, s := range []allocSet{g.c.untainted, g.c.migrate, g.c.lost, g.c.disconnecting, g.c.reconnecting, g.c.expiring, g.c.standby, g.c.ignore} {
			for id := range s {
				if seen[id] {
					t.Errorf("group %s: allocation %s is in two taint classes", g.tg.Name, id)
				}
				seen[id] = true
			}
		}
		if len(seen) != len(g.all) {
			t.Errorf("group %s: classify placed %d of %d allocations", g.tg.Name, len(seen), len(g.all))
		}
	}
	for _, reqs := range [][]placementRequest{g.replacements, g.destructive} {
		for _, p := range reqs {
			if p.previousAlloc == nil {
				continue
			}
			if _, ok := g.keep[p.previousAlloc.ID]; ok {
				t.Errorf("group %s: after %s, %s is both kept and replaced", g.tg.Name, phase, p.previousAlloc.ID)
			}
		}
	}
}
