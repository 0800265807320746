package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
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
// accepts only the unknown marking of its own allocations; a down node only
// lost writes to its own; an initializing node no placements at all. A new
// allocation is refused on any non-ready node whatever client status it
// carries: written as unknown to a disconnected node it would count as a
// live copy that nothing runs.
func TestEvaluatePlan_NonReadyNodes(t *testing.T) {
	const (
		newAlloc  = "new"       // not yet in the state store
		onNode    = "on node"   // stored on the plan's node, running
		unknownOn = "unknown"   // stored on the plan's node, already unknown
		elsewhere = "elsewhere" // stored on another node
	)
	cases := []struct {
		name         string
		nodeStatus   string
		stored       string
		clientStatus string
		accepted     bool
	}{
		{"disconnected accepts the unknown marking", structs.NodeStatusDisconnected, onNode, structs.AllocClientStatusUnknown, true},
		{"disconnected accepts an in-place update of an unknown alloc", structs.NodeStatusDisconnected, unknownOn, structs.AllocClientStatusUnknown, true},
		{"disconnected refuses a new alloc written as unknown", structs.NodeStatusDisconnected, newAlloc, structs.AllocClientStatusUnknown, false},
		{"disconnected refuses another node's alloc written as unknown", structs.NodeStatusDisconnected, elsewhere, structs.AllocClientStatusUnknown, false},
		{"disconnected refuses a placement", structs.NodeStatusDisconnected, newAlloc, structs.AllocClientStatusPending, false},
		{"disconnected refuses a running write", structs.NodeStatusDisconnected, onNode, structs.AllocClientStatusRunning, false},
		{"down accepts lost", structs.NodeStatusDown, onNode, structs.AllocClientStatusLost, true},
		{"down refuses a new alloc written as lost", structs.NodeStatusDown, newAlloc, structs.AllocClientStatusLost, false},
		{"down refuses unknown", structs.NodeStatusDown, onNode, structs.AllocClientStatusUnknown, false},
		{"initializing refuses a placement", structs.NodeStatusInit, newAlloc, structs.AllocClientStatusPending, false},
		{"initializing refuses a new alloc written as unknown", structs.NodeStatusInit, newAlloc, structs.AllocClientStatusUnknown, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node, other := mock.Node(), mock.Node()
			node.Status = tc.nodeStatus
			st := planTestState(t, node, other)
			a := allocWithMem(node, 100)
			switch tc.stored {
			case onNode, unknownOn, elsewhere:
				stored := a.Copy()
				stored.ClientStatus = structs.AllocClientStatusRunning
				if tc.stored == unknownOn {
					stored.ClientStatus = structs.AllocClientStatusUnknown
				}
				if tc.stored == elsewhere {
					stored.NodeID = other.ID
				}
				must.NoError(t, st.UpsertAllocs(200, []*structs.Allocation{stored}))
			}
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

// Stops land on every node, whatever its status: an operator's alloc stop
// or a job stop must reach the servers' state even while the node is away.
func TestEvaluatePlan_StopsOnAnyNodeStatus(t *testing.T) {
	for _, status := range []string{structs.NodeStatusReady, structs.NodeStatusInit,
		structs.NodeStatusDisconnected, structs.NodeStatusDown} {
		t.Run(status, func(t *testing.T) {
			node := mock.Node()
			node.Status = status
			st := planTestState(t, node)
			a := allocWithMem(node, 100)
			must.NoError(t, st.UpsertAllocs(200, []*structs.Allocation{a}))
			plan := &structs.Plan{}
			plan.AppendStoppedAlloc(a, structs.AllocNotNeeded, "", "")
			result, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
			must.NoError(t, err)
			must.MapEmpty(t, rejected)
			must.Len(t, 1, result.NodeUpdate[node.ID])
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

// Property: whatever the nodes' statuses and whatever client status a
// write carries, the applier never commits to a node that is not ready an
// allocation that node did not already have, nor a pending or running one
// to a node the servers cannot hear.
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
		// Some allocations already exist, so updates of them are drawn too.
		var stored []*structs.Allocation
		for i := rapid.IntRange(0, 5).Draw(rt, "stored"); i > 0; i-- {
			a := allocWithMem(rapid.SampledFrom(nodes).Draw(rt, "stored_node"), 100)
			a.ClientStatus = rapid.SampledFrom(clientStatuses).Draw(rt, "stored_status")
			stored = append(stored, a)
		}
		must.NoError(rt, st.UpsertAllocs(200, stored))
		before := map[string]string{} // alloc ID -> node ID
		for _, a := range stored {
			before[a.ID] = a.NodeID
		}
		plan := &structs.Plan{AllAtOnce: rapid.Bool().Draw(rt, "all_at_once")}
		for i := rapid.IntRange(0, 10).Draw(rt, "allocs"); i > 0; i-- {
			var a *structs.Allocation
			if len(stored) > 0 && rapid.Bool().Draw(rt, "update") {
				a = rapid.SampledFrom(stored).Draw(rt, "updated").Copy()
				// Sometimes the write names another node than the stored one.
				a.NodeID = rapid.SampledFrom(nodes).Draw(rt, "write_node").ID
			} else {
				a = allocWithMem(rapid.SampledFrom(nodes).Draw(rt, "node"), int64(rapid.IntRange(10, 3000).Draw(rt, "mem")))
			}
			a.ClientStatus = rapid.SampledFrom(clientStatuses).Draw(rt, "client_status")
			plan.AppendAlloc(a)
		}
		result, _, err := evaluatePlan(snapshotOf(rt, st), plan)
		must.NoError(rt, err)
		for _, node := range nodes {
			if node.Status == structs.NodeStatusReady {
				continue
			}
			for _, a := range result.NodeAllocation[node.ID] {
				if before[a.ID] != node.ID {
					rt.Fatalf("committed allocation %s (%s), which it did not have, to a %s node", a.ID, a.ClientStatus, node.Status)
				}
				// An initializing node takes in-place updates of its own
				// allocations; the servers cannot hear the others.
				live := a.ClientStatus == structs.AllocClientStatusPending || a.ClientStatus == structs.AllocClientStatusRunning
				if live && node.Status != structs.NodeStatusInit {
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

// A plan's follow-up evaluations commit in the plan's own raft entry: an
// allocation marked unknown is never stored without the evaluation that
// expires its window, whatever happens to the leader between two writes.
func TestApplyPlan_FollowUpEvalsCommitWithThePlan(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	node, _ := readyNodeOn(t, s)

	alloc := mock.AllocForNode(node)
	followUp := mock.Eval()
	followUp.Status = structs.EvalStatusPending
	followUp.WaitUntil = time.Now().Add(time.Hour)
	plan := &structs.Plan{
		EvalID:         structs.GenerateUUID(),
		Job:            alloc.Job,
		NodeAllocation: map[string][]*structs.Allocation{node.ID: {alloc}},
		FollowUpEvals:  []*structs.Evaluation{followUp},
	}
	result, err := s.applyPlan(plan)
	must.NoError(t, err)
	must.MapLen(t, 1, result.NodeAllocation)

	storedAlloc, err := s.State().AllocByID(nil, alloc.ID)
	must.NoError(t, err)
	storedEval, err := s.State().EvalByID(nil, followUp.ID)
	must.NoError(t, err)
	must.NotNil(t, storedEval)
	must.Eq(t, storedAlloc.CreateIndex, storedEval.CreateIndex, must.Sprint("one raft entry holds both"))
}
