package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func ids(s allocSet) []string {
	var out []string
	for _, a := range s.sorted() {
		out = append(out, a.ID)
	}
	return out
}

// Set operations return new sets and leave their operands alone; unknown
// survives filterByTerminal because it is not terminal.
func TestAllocSet_Algebra(t *testing.T) {
	a, b, c := mock.Alloc(), mock.Alloc(), mock.Alloc()
	x := newAllocSet([]*structs.Allocation{a, b})
	y := newAllocSet([]*structs.Allocation{b, c})
	must.MapLen(t, 1, x.difference(y))
	must.MapContainsKey(t, x.difference(y), a.ID)
	must.MapLen(t, 3, x.union(y))
	must.MapLen(t, 2, x, must.Sprint("operands unchanged"))
	c.ClientStatus = structs.AllocClientStatusUnknown
	b.ClientStatus = structs.AllocClientStatusLost
	must.MapLen(t, 1, y.filterByTerminal(), must.Sprint("unknown is not terminal"))
}

// sorted, which parses each name's index once, orders any set as the
// plain rule does (name index, then ID): everything the reconciler derives
// from a set depends on that order being deterministic.
func TestAllocSet_SortedMatchesOracle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := allocSet{}
		for i := range rapid.IntRange(0, 30).Draw(rt, "n") {
			a := mock.Alloc()
			a.ID = fmt.Sprintf("%02d-%s", rapid.IntRange(0, 9).Draw(rt, "id"), a.ID)
			a.Name = rapid.SampledFrom([]string{
				structs.AllocName("j", "g", uint(rapid.IntRange(0, 12).Draw(rt, fmt.Sprint("index", i)))),
				"j.g[", "no-index", "j.g[x]",
			}).Draw(rt, "name")
			s[a.ID] = a
		}
		want := slices.AppendSeq(make([]*structs.Allocation, 0, len(s)), maps.Values(s))
		sort.Slice(want, func(i, j int) bool {
			if want[i].Index() != want[j].Index() {
				return want[i].Index() < want[j].Index()
			}
			return want[i].ID < want[j].ID
		})
		must.Eq(rt, want, s.sorted())
	})
}

// Each classification rule of "Disconnecting allocations" (see
// docs/concepts/disconnected-clients.md), one
// allocation each.
func TestAllocSet_FilterByTainted(t *testing.T) {
	job := withWindow(mock.Job(), time.Hour)
	noWindow := mock.Job()
	down := nodeWithStatus(structs.NodeStatusDown)
	disc := nodeWithStatus(structs.NodeStatusDisconnected)
	draining := mock.Node()
	draining.Drain = true
	ready := mock.Node()
	tainted := map[string]*structs.Node{down.ID: down, disc.ID: disc, draining.ID: draining, "gone": nil}

	mk := func(j *structs.Job, node string, status string) *structs.Allocation {
		a := allocsFor(j, 1, status)[0]
		a.NodeID = node
		return a
	}
	untainted := mk(job, ready.ID, structs.AllocClientStatusRunning)
	onDrain := mk(job, draining.ID, structs.AllocClientStatusRunning)
	migrate := mk(job, draining.ID, structs.AllocClientStatusRunning)
	yes := true
	migrate.DesiredTransition.Migrate = &yes
	lostDown := mk(job, down.ID, structs.AllocClientStatusRunning)
	lostGone := mk(job, "gone", structs.AllocClientStatusRunning)
	lostPending := mk(job, disc.ID, structs.AllocClientStatusPending)
	lostNoWindow := mk(noWindow, disc.ID, structs.AllocClientStatusRunning)
	disconnecting := mk(job, disc.ID, structs.AllocClientStatusRunning)
	unknown := mk(job, disc.ID, "")
	unknownSinceT(unknown, disc, testNow.Add(-time.Minute))
	expiring := mk(job, disc.ID, "")
	unknownSinceT(expiring, disc, testNow.Add(-2*time.Hour))
	replaced := mk(job, disc.ID, "")
	unknownSinceT(replaced, disc, testNow.Add(-time.Minute))
	reconnecting := mk(job, ready.ID, structs.AllocClientStatusRunning)
	reconnecting.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: testNow.Add(-time.Minute)}}
	stopped := mk(job, ready.ID, structs.AllocClientStatusRunning)
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	failedOnDown := mk(job, down.ID, structs.AllocClientStatusFailed)

	all := newAllocSet([]*structs.Allocation{untainted, onDrain, migrate, lostDown, lostGone, lostPending,
		lostNoWindow, disconnecting, unknown, expiring, replaced, reconnecting, stopped, failedOnDown})
	successor := mk(job, ready.ID, structs.AllocClientStatusRunning)
	successor.PreviousAllocation = replaced.ID
	withSucc := all.union(newAllocSet([]*structs.Allocation{successor}))
	c := all.filterByTainted(taintFilter{now: testNow, nodes: tainted, replaced: withSucc.chains().replaced(func(a *structs.Allocation) bool {
		return a.ClientStatus != structs.AllocClientStatusUnknown
	})})

	must.Eq(t, ids(newAllocSet([]*structs.Allocation{untainted, onDrain, unknown, failedOnDown})), ids(c.untainted))
	must.Eq(t, ids(newAllocSet([]*structs.Allocation{migrate})), ids(c.migrate))
	must.Eq(t, ids(newAllocSet([]*structs.Allocation{lostDown, lostGone, lostPending, lostNoWindow})), ids(c.lost))
	must.Eq(t, ids(newAllocSet([]*structs.Allocation{disconnecting})), ids(c.disconnecting))
	must.Eq(t, ids(newAllocSet([]*structs.Allocation{reconnecting})), ids(c.reconnecting))
	must.Eq(t, ids(newAllocSet([]*structs.Allocation{expiring})), ids(c.expiring))
	must.Eq(t, ids(newAllocSet([]*structs.Allocation{replaced})), ids(c.standby))
	must.Eq(t, ids(newAllocSet([]*structs.Allocation{stopped})), ids(c.ignore))
}

// New names fill the gaps first; stops take names above the count, then
// duplicates, then the highest, and never an unknown allocation.
func TestNameIndex(t *testing.T) {
	job := mock.Job()
	allocs := allocsFor(job, 6, structs.AllocClientStatusRunning)
	s := newAllocSet([]*structs.Allocation{allocs[0], allocs[2], allocs[5]})
	n := newNameIndex(job.ID, "web", 4, s)
	must.Eq(t, []string{
		structs.AllocName(job.ID, "web", 1), structs.AllocName(job.ID, "web", 3), structs.AllocName(job.ID, "web", 4),
	}, []string{n.next(), n.next(), n.next()})

	dup := allocsFor(job, 2, structs.AllocClientStatusRunning)[1] // a second "[1]"
	allocs[4].ClientStatus = structs.AllocClientStatusUnknown
	s = newAllocSet(append(allocs, dup))
	n = newNameIndex(job.ID, "web", 3, s)
	var order []uint
	for _, a := range n.stopOrder(s) {
		order = append(order, a.Index())
	}
	must.Eq(t, []uint{5, 3, 1, 1, 2, 0}, order)
}

// Reschedule delays grow as the policy says and stop at MaxDelay.
func TestRescheduleDelay(t *testing.T) {
	events := func(ds ...time.Duration) *structs.RescheduleTracker {
		tr := &structs.RescheduleTracker{}
		for _, d := range ds {
			tr.Events = append(tr.Events, &structs.RescheduleEvent{Delay: d})
		}
		return tr
	}
	exp := &structs.ReschedulePolicy{Delay: 10 * time.Second, DelayFunction: structs.DelayFunctionExponential, MaxDelay: time.Minute}
	must.Eq(t, 10*time.Second, rescheduleDelay(exp, nil))
	must.Eq(t, 40*time.Second, rescheduleDelay(exp, events(20*time.Second)))
	must.Eq(t, time.Minute, rescheduleDelay(exp, events(40*time.Second)))
	fib := &structs.ReschedulePolicy{Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionFibonacci}
	must.Eq(t, 5*time.Second, rescheduleDelay(fib, events(5*time.Second)))
	must.Eq(t, 13*time.Second, rescheduleDelay(fib, events(5*time.Second, 8*time.Second)))
	cst := &structs.ReschedulePolicy{Delay: 7 * time.Second, DelayFunction: structs.DelayFunctionConstant}
	must.Eq(t, 7*time.Second, rescheduleDelay(cst, events(time.Hour)))
}

// attempts = 0 means never (see docs/concepts/disconnected-clients.md,
// "Replacement while unknown"), and attempts count within the
// interval only.
func TestNextRescheduleTime_Attempts(t *testing.T) {
	job := mock.Job()
	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 0, Interval: time.Hour, Delay: time.Second}
	a := allocsFor(job, 1, structs.AllocClientStatusFailed)[0]
	_, ok := nextRescheduleTime(a, testNow)
	must.False(t, ok)

	job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Attempts: 1, Interval: time.Hour, Delay: time.Second, DelayFunction: structs.DelayFunctionConstant}
	a.RescheduleTracker = &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{{RescheduleTime: testNow.Add(-2 * time.Hour).UnixNano()}}}
	at, ok := nextRescheduleTime(a, testNow)
	must.True(t, ok)
	must.Eq(t, testNow.Add(time.Second), at)
	a.RescheduleTracker.Events[0].RescheduleTime = testNow.Add(-time.Minute).UnixNano()
	_, ok = nextRescheduleTime(a, testNow)
	must.False(t, ok)
}

// The datacenter glob: "*" matches any run, everything else literally.
func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"dc1", "dc1", true}, {"dc*", "dc12", true}, {"*-eu-*", "edge-eu-3", true},
		{"dc?", "dc1", false}, {"a*b*c", "abxxc", true}, {"a*b*c", "acb", false},
	} {
		must.Eq(t, tc.want, globMatch(tc.p, tc.s), must.Sprintf("%q ~ %q", tc.p, tc.s))
	}
}
