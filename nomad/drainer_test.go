package nomad

import (
	"testing"
	"time"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/shoenig/test/must"
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
