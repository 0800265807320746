package nomad

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var drainNow = time.Unix(1_700_000_000, 0)

// drainFixture is a draining node with the given allocations in a store.
func drainFixture(t *testing.T, spec structs.DrainSpec, status string, allocs ...*structs.Allocation) (*state.StateStore, *structs.Node) {
	t.Helper()
	st, err := state.NewStateStore(nil)
	must.NoError(t, err)
	node := mock.Node()
	node.Status = status
	must.NoError(t, st.UpsertNode(10, node))
	d := &structs.DrainStrategy{DrainSpec: spec, StartedAt: drainNow}
	if spec.Deadline > 0 {
		d.ForceDeadline = drainNow.Add(spec.Deadline)
	}
	must.NoError(t, st.UpdateNodeDrain(11, node.ID, state.NodeDrainUpdate{Drain: true, Strategy: d, UpdatedAt: drainNow}))
	for _, a := range allocs {
		a.NodeID = node.ID
	}
	must.NoError(t, st.UpsertAllocs(12, allocs))
	node, err = st.NodeByID(nil, node.ID)
	must.NoError(t, err)
	return st, node
}

func allocOf(job *structs.Job, client string) *structs.Allocation {
	a := mock.Alloc()
	a.Job, a.JobID, a.ClientStatus = job, job.ID, client
	return a
}

func ids(allocs []*structs.Allocation) []string {
	out := []string{}
	for _, a := range allocs {
		out = append(out, a.ID)
	}
	return out
}

// Service allocations move one per group at a time, so a drain never takes
// a whole group down at once; unknown ones are not serving and all move.
func TestPlanNodeDrain_OnePerGroupUnknownAllAtOnce(t *testing.T) {
	job, other := mock.Job(), mock.Job()
	a1, a2 := allocOf(job, structs.AllocClientStatusRunning), allocOf(job, structs.AllocClientStatusRunning)
	b1 := allocOf(other, structs.AllocClientStatusRunning)
	st, node := drainFixture(t, structs.DrainSpec{}, structs.NodeStatusReady, a1, a2, b1)
	plan, err := planNodeDrain(nil, st, node, drainClock{now: drainNow})
	must.NoError(t, err)
	must.False(t, plan.done)
	must.Len(t, 2, plan.migrate, must.Sprint(ids(plan.migrate)))
	groups := map[string]int{}
	for _, a := range plan.migrate {
		groups[a.JobID]++
	}
	must.Eq(t, map[string]int{job.ID: 1, other.ID: 1}, groups)

	// While one is marked and not yet stopped, the group waits.
	yes := true
	marked := plan.migrate[0].JobID
	must.NoError(t, st.UpdateAllocsDesiredTransitions(13, map[string]*structs.DesiredTransition{
		plan.migrate[0].ID: {Migrate: &yes}, plan.migrate[1].ID: {Migrate: &yes},
	}, nil))
	plan, err = planNodeDrain(nil, st, node, drainClock{now: drainNow})
	must.NoError(t, err)
	must.Len(t, 0, plan.migrate, must.Sprint("group ", marked, " waits: ", ids(plan.migrate)))

	u1, u2 := allocOf(job, structs.AllocClientStatusUnknown), allocOf(job, structs.AllocClientStatusUnknown)
	u1.TaskGroup, u2.TaskGroup = "web", "web"
	st, node = drainFixture(t, structs.DrainSpec{}, structs.NodeStatusDisconnected, u1, u2)
	plan, err = planNodeDrain(nil, st, node, drainClock{now: drainNow})
	must.NoError(t, err)
	must.Len(t, 2, plan.migrate)
}

// A group's migrate block sets how many of its allocations move at a
// time: with max_parallel = 2, two of three move in the first pass.
func TestPlanNodeDrain_MigrateMaxParallel(t *testing.T) {
	job := mock.Job()
	job.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: 2}
	a1, a2, a3 := allocOf(job, structs.AllocClientStatusRunning), allocOf(job, structs.AllocClientStatusRunning), allocOf(job, structs.AllocClientStatusRunning)
	st, node := drainFixture(t, structs.DrainSpec{}, structs.NodeStatusReady, a1, a2, a3)
	plan, err := planNodeDrain(nil, st, node, drainClock{now: drainNow})
	must.NoError(t, err)
	must.Len(t, 2, plan.migrate, must.Sprint(ids(plan.migrate)))
}

// Batch allocations finish on their own until the deadline; past it
// everything left is stopped.
func TestPlanNodeDrain_BatchWaitsForDeadline(t *testing.T) {
	a := allocOf(mock.BatchJob(), structs.AllocClientStatusRunning)
	st, node := drainFixture(t, structs.DrainSpec{Deadline: time.Hour}, structs.NodeStatusReady, a)
	plan, err := planNodeDrain(nil, st, node, drainClock{now: drainNow})
	must.NoError(t, err)
	must.Len(t, 0, plan.migrate)
	must.False(t, plan.done)

	plan, err = planNodeDrain(nil, st, node, drainClock{now: drainNow.Add(time.Hour)})
	must.NoError(t, err)
	must.Eq(t, []string{a.ID}, ids(plan.migrate))
	must.True(t, plan.forced)

	// Once the deadline was acted on, what is marked is not sent again.
	yes := true
	must.NoError(t, st.UpdateAllocsDesiredTransitions(30, map[string]*structs.DesiredTransition{a.ID: {Migrate: &yes}}, nil))
	plan, err = planNodeDrain(nil, st, node, drainClock{now: drainNow.Add(time.Hour), forcedDone: true})
	must.NoError(t, err)
	must.Len(t, 0, plan.migrate)
	must.False(t, plan.forced)
}

// System allocations go last, and stay when the drain ignores them.
func TestPlanNodeDrain_SystemLastOrIgnored(t *testing.T) {
	sys := mock.Job()
	sys.Type = structs.JobTypeSystem
	svc := allocOf(mock.Job(), structs.AllocClientStatusRunning)
	s := allocOf(sys, structs.AllocClientStatusRunning)
	st, node := drainFixture(t, structs.DrainSpec{}, structs.NodeStatusReady, svc, s)
	plan, err := planNodeDrain(nil, st, node, drainClock{now: drainNow})
	must.NoError(t, err)
	must.Eq(t, []string{svc.ID}, ids(plan.migrate))

	svc.DesiredStatus = structs.AllocDesiredStatusStop
	must.NoError(t, st.UpsertAllocs(20, []*structs.Allocation{svc}))
	plan, err = planNodeDrain(nil, st, node, drainClock{now: drainNow})
	must.NoError(t, err)
	must.Eq(t, []string{s.ID}, ids(plan.migrate))

	st, node = drainFixture(t, structs.DrainSpec{IgnoreSystemJobs: true}, structs.NodeStatusReady,
		allocOf(sys, structs.AllocClientStatusRunning))
	plan, err = planNodeDrain(nil, st, node, drainClock{now: drainNow})
	must.NoError(t, err)
	must.True(t, plan.done)
}

// A disconnected node's drain waits for the node: its client may still run
// what the servers stopped. It ends when the node returns or goes down.
func TestPlanNodeDrain_DisconnectedWaitsForNode(t *testing.T) {
	a := allocOf(mock.Job(), structs.AllocClientStatusUnknown)
	a.DesiredStatus = structs.AllocDesiredStatusStop
	st, node := drainFixture(t, structs.DrainSpec{}, structs.NodeStatusDisconnected, a)
	plan, err := planNodeDrain(nil, st, node, drainClock{now: drainNow})
	must.NoError(t, err)
	must.False(t, plan.done)

	for _, status := range []string{structs.NodeStatusReady, structs.NodeStatusDown} {
		n := node.Copy()
		n.Status = status
		plan, err = planNodeDrain(nil, st, n, drainClock{now: drainNow})
		must.NoError(t, err)
		must.True(t, plan.done, must.Sprint(status))
	}
	// A down node's drain ends whatever it still holds: its allocations are lost.
	b := allocOf(mock.Job(), structs.AllocClientStatusRunning)
	st, node = drainFixture(t, structs.DrainSpec{}, structs.NodeStatusDown, b)
	plan, err = planNodeDrain(nil, st, node, drainClock{now: drainNow})
	must.NoError(t, err)
	must.True(t, plan.done)
}

// Whatever a node holds, one pass before the deadline marks at most
// the group's migrate max_parallel (1 or 2 here) reachable service allocations per group (counting those
// already moving), no batch one, and no system one while others remain;
// and the drain is done exactly when nothing it covers is left on a node
// that is not disconnected.
func TestPlanNodeDrain_Invariants(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		types := []string{structs.JobTypeService, structs.JobTypeBatch, structs.JobTypeSystem}
		jobs := map[string]*structs.Job{}
		maxParallel := rapid.IntRange(0, 2).Draw(rt, "maxParallel") // 0: no migrate block
		for _, typ := range types {
			j := mock.Job()
			j.Type = typ
			if maxParallel > 0 {
				j.TaskGroups[0].Migrate = &structs.MigrateStrategy{MaxParallel: maxParallel}
			}
			jobs[typ] = j
		}
		budget := max(maxParallel, 1)
		n := rapid.IntRange(0, 8).Draw(rt, "allocs")
		var allocs []*structs.Allocation
		for i := range n {
			typ := rapid.SampledFrom(types).Draw(rt, fmt.Sprintf("type%d", i))
			client := rapid.SampledFrom([]string{structs.AllocClientStatusRunning, structs.AllocClientStatusPending,
				structs.AllocClientStatusUnknown, structs.AllocClientStatusComplete}).Draw(rt, fmt.Sprintf("client%d", i))
			a := allocOf(jobs[typ], client)
			if rapid.Bool().Draw(rt, fmt.Sprintf("stopped%d", i)) {
				a.DesiredStatus = structs.AllocDesiredStatusStop
			}
			if rapid.Bool().Draw(rt, fmt.Sprintf("marked%d", i)) {
				yes := true
				a.DesiredTransition.Migrate = &yes
			}
			allocs = append(allocs, a)
		}
		status := rapid.SampledFrom([]string{structs.NodeStatusReady, structs.NodeStatusDisconnected}).Draw(rt, "status")
		ignore := rapid.Bool().Draw(rt, "ignoreSystem")
		st, node := drainFixture(t, structs.DrainSpec{Deadline: time.Hour, IgnoreSystemJobs: ignore}, status, allocs...)
		plan, err := planNodeDrain(nil, st, node, drainClock{now: drainNow})
		must.NoError(rt, err)

		left, nonSystemLeft := 0, false
		moving := 0
		for _, a := range allocs {
			if a.TerminalStatus() || (ignore && a.Job.Type == structs.JobTypeSystem) {
				continue
			}
			left++
			nonSystemLeft = nonSystemLeft || a.Job.Type != structs.JobTypeSystem
			if a.Job.Type == structs.JobTypeService && (a.DesiredTransition.ShouldMigrate() || a.ClientStatus == structs.AllocClientStatusPending) {
				moving++
			}
		}
		must.Eq(rt, left == 0 && status != structs.NodeStatusDisconnected, plan.done)
		reachable := 0
		for _, a := range plan.migrate {
			must.False(rt, a.TerminalStatus())
			must.False(rt, a.DesiredTransition.ShouldMigrate(), must.Sprint("marked twice"))
			switch a.Job.Type {
			case structs.JobTypeBatch:
				must.Eq(rt, structs.AllocClientStatusUnknown, a.ClientStatus, must.Sprint("batch moved before the deadline"))
			case structs.JobTypeSystem:
				must.False(rt, ignore)
				must.False(rt, nonSystemLeft, must.Sprint("system moved while others remain"))
			case structs.JobTypeService:
				if a.ClientStatus != structs.AllocClientStatusUnknown {
					reachable++
				}
			}
		}
		must.LessEq(rt, max(budget-moving, 0), reachable) // reachable ≤ the budget
	})
}
