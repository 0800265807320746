package nomad

import (
	"testing"
	"time"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/shoenig/test/must"
	"pgregory.net/rapid"
)

func planTestState(t must.T, nodes ...*structs.Node) *state.StateStore {
	st, err := state.NewStateStore(&state.StateStoreConfig{})
	must.NoError(t, err)
	for i, n := range nodes {
		must.NoError(t, st.UpsertNode(uint64(100+i), n))
	}
	return st
}

func snapshotOf(t must.T, st *state.StateStore) *state.StateSnapshot {
	snap, err := st.Snapshot()
	must.NoError(t, err)
	return snap
}

// allocWithMem returns a pending allocation asking for mem MB on node.
func allocWithMem(node *structs.Node, mem int64) *structs.Allocation {
	a := mock.AllocForNode(node)
	for _, tr := range a.AllocatedResources.Tasks {
		tr.Memory.MemoryMB = mem
		tr.Cpu.CpuShares = 10
	}
	a.AllocatedResources.Shared.DiskMB = 10
	return a
}

// A placement that fits on a ready node is committed as planned.
func TestEvaluatePlan_FitsOnReadyNode(t *testing.T) {
	node := mock.Node()
	st := planTestState(t, node)
	plan := &structs.Plan{}
	plan.AppendAlloc(allocWithMem(node, 512))

	result, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.MapEmpty(t, rejected)
	must.Len(t, 1, result.NodeAllocation[node.ID])
	must.Eq(t, uint64(0), result.RefreshIndex)
}

// Schedulers work from snapshots: a node that filled up since must not be
// overcommitted. Only the full node's part is dropped, and the scheduler is
// told to refresh.
func TestEvaluatePlan_PartialWhenNodeFull(t *testing.T) {
	full, roomy := mock.Node(), mock.Node()
	st := planTestState(t, full, roomy)
	// mock nodes offer 8192 MB with 256 reserved
	existing := allocWithMem(full, 7000)
	must.NoError(t, st.UpsertAllocs(200, []*structs.Allocation{existing}))

	plan := &structs.Plan{}
	plan.AppendAlloc(allocWithMem(full, 1000))
	plan.AppendAlloc(allocWithMem(roomy, 1000))

	result, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.Eq(t, "resources exhausted: memory", rejected[full.ID])
	must.SliceEmpty(t, result.NodeAllocation[full.ID])
	must.Len(t, 1, result.NodeAllocation[roomy.ID])
	must.NonZero(t, result.RefreshIndex)
}

// Stopping an allocation in the same plan frees its room for a placement.
func TestEvaluatePlan_StopsFreeCapacity(t *testing.T) {
	node := mock.Node()
	st := planTestState(t, node)
	old := allocWithMem(node, 7000)
	must.NoError(t, st.UpsertAllocs(200, []*structs.Allocation{old}))

	plan := &structs.Plan{}
	plan.AppendStoppedAlloc(old, structs.AllocNotNeeded, "", "")
	plan.AppendAlloc(allocWithMem(node, 7000))

	result, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.MapEmpty(t, rejected)
	must.Len(t, 1, result.NodeUpdate[node.ID])
	must.Len(t, 1, result.NodeAllocation[node.ID])
}

// An unknown allocation still holds its resources on its node: the node may
// come back with it running.
func TestEvaluatePlan_UnknownAllocsHoldResources(t *testing.T) {
	node := mock.Node()
	st := planTestState(t, node)
	unknown := allocWithMem(node, 7000)
	unknown.ClientStatus = structs.AllocClientStatusUnknown
	must.NoError(t, st.UpsertAllocs(200, []*structs.Allocation{unknown}))

	plan := &structs.Plan{}
	plan.AppendAlloc(allocWithMem(node, 1000))
	_, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.MapContainsKey(t, rejected, node.ID)
}

// Stops always land, even for a node that no longer exists.
func TestEvaluatePlan_StopsOnMissingNode(t *testing.T) {
	st := planTestState(t)
	gone := mock.Node()
	plan := &structs.Plan{}
	plan.AppendStoppedAlloc(mock.AllocForNode(gone), structs.AllocNotNeeded, "", "")

	result, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.MapEmpty(t, rejected)
	must.Len(t, 1, result.NodeUpdate[gone.ID])
}

// "Plan applier" (docs/concepts/disconnected-clients.md): a disconnected node
// accepts only the unknown marking; a down
// node only lost writes; an initializing node no placements at all.
func TestEvaluatePlan_NonReadyNodes(t *testing.T) {
	cases := []struct {
		name         string
		nodeStatus   string
		clientStatus string
		accepted     bool
	}{
		{"disconnected accepts unknown marking", structs.NodeStatusDisconnected, structs.AllocClientStatusUnknown, true},
		{"disconnected refuses a placement", structs.NodeStatusDisconnected, structs.AllocClientStatusPending, false},
		{"down accepts lost", structs.NodeStatusDown, structs.AllocClientStatusLost, true},
		{"down refuses unknown", structs.NodeStatusDown, structs.AllocClientStatusUnknown, false},
		{"initializing refuses a placement", structs.NodeStatusInit, structs.AllocClientStatusPending, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := mock.Node()
			node.Status = tc.nodeStatus
			st := planTestState(t, node)
			a := allocWithMem(node, 100)
			a.ClientStatus = tc.clientStatus
			plan := &structs.Plan{}
			plan.AppendAlloc(a)
			result, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
			must.NoError(t, err)
			if tc.accepted {
				must.MapEmpty(t, rejected)
				must.Len(t, 1, result.NodeAllocation[node.ID])
			} else {
				must.MapContainsKey(t, rejected, node.ID)
				must.SliceEmpty(t, result.NodeAllocation[node.ID])
			}
		})
	}
}

// With all_at_once, a rejection anywhere rejects the whole plan.
func TestEvaluatePlan_AllAtOnce(t *testing.T) {
	ready, down := mock.Node(), mock.Node()
	down.Status = structs.NodeStatusDown
	st := planTestState(t, ready, down)
	plan := &structs.Plan{AllAtOnce: true}
	plan.AppendAlloc(allocWithMem(ready, 100))
	plan.AppendAlloc(allocWithMem(down, 100))

	result, _, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.True(t, result.IsNoOp())
	must.NonZero(t, result.RefreshIndex)
}

// Property: whatever the nodes' statuses, the applier never commits a new
// pending or running allocation to a node that is not ready.
func TestEvaluatePlan_NeverPlacesOnNonReadyNode(t *testing.T) {
	statuses := []string{structs.NodeStatusInit, structs.NodeStatusReady, structs.NodeStatusDown, structs.NodeStatusDisconnected}
	clientStatuses := []string{structs.AllocClientStatusPending, structs.AllocClientStatusRunning,
		structs.AllocClientStatusUnknown, structs.AllocClientStatusLost}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(rt, "nodes")
		nodes := make([]*structs.Node, n)
		for i := range nodes {
			nodes[i] = mock.Node()
			nodes[i].Status = rapid.SampledFrom(statuses).Draw(rt, "status")
		}
		st := planTestState(rt, nodes...)
		plan := &structs.Plan{AllAtOnce: rapid.Bool().Draw(rt, "all_at_once")}
		for i := rapid.IntRange(0, 10).Draw(rt, "allocs"); i > 0; i-- {
			node := rapid.SampledFrom(nodes).Draw(rt, "node")
			a := allocWithMem(node, int64(rapid.IntRange(10, 3000).Draw(rt, "mem")))
			a.ClientStatus = rapid.SampledFrom(clientStatuses).Draw(rt, "client_status")
			plan.AppendAlloc(a)
		}
		result, _, err := evaluatePlan(snapshotOf(rt, st), plan)
		must.NoError(rt, err)
		for _, node := range nodes {
			for _, a := range result.NodeAllocation[node.ID] {
				live := a.ClientStatus == structs.AllocClientStatusPending || a.ClientStatus == structs.AllocClientStatusRunning
				if live && node.Status != structs.NodeStatusReady {
					rt.Fatalf("committed a %s allocation to a %s node", a.ClientStatus, node.Status)
				}
			}
		}
	})
}

// A node coming back from a disconnect is initializing: its reconnected
// allocations are updated in place (the scheduler records that they came
// back), but nothing new is placed until it is ready.
func TestEvaluatePlan_InitializingNodeTakesOnlyUpdates(t *testing.T) {
	node := mock.Node()
	node.Status = structs.NodeStatusInit
	st := planTestState(t, node)
	existing := allocWithMem(node, 100)
	must.NoError(t, st.UpsertAllocs(200, []*structs.Allocation{existing}))

	update := existing.Copy()
	update.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusRunning, time.Unix(1, 0))
	plan := &structs.Plan{}
	plan.AppendAlloc(update)
	result, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.MapEmpty(t, rejected)
	must.Len(t, 1, result.NodeAllocation[node.ID])

	plan.AppendAlloc(allocWithMem(node, 100))
	_, rejected, err = evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.Eq(t, "node is initializing", rejected[node.ID])
}
