package state

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// clientSnapshot is what a client reports about an allocation after n
// task events: pending until the task starts (event 2), running after.
func clientSnapshot(id string, n int) *structs.Allocation {
	status, state := structs.AllocClientStatusPending, structs.TaskStatePending
	if n >= 2 {
		status, state = structs.AllocClientStatusRunning, structs.TaskStateRunning
	}
	ts := &structs.TaskState{State: state}
	for i := 1; i <= n; i++ {
		ts.Events = append(ts.Events, &structs.TaskEvent{Type: fmt.Sprintf("event-%d", i), Time: int64(1_700_000_000 + i)})
	}
	return &structs.Allocation{ID: id, ClientStatus: status, ClientDescription: fmt.Sprintf("after %d events", n),
		TaskStates: map[string]*structs.TaskState{"web": ts}}
}

// A client's update that reaches the leader after a newer one (the call
// timed out on the client, which sent a newer state, while the old call
// was still on its way) must not turn the allocation back: a running
// allocation shown pending again would make the scheduler and the
// operator act on a state that no longer exists.
func TestUpdateAllocsFromClient_OlderUpdateAfterNewerIsIgnored(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
	id := allocs[0].ID

	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{clientSnapshot(id, 3)}))
	must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{clientSnapshot(id, 1)}))
	out := allocByID(t, s, id)
	must.Eq(t, structs.AllocClientStatusRunning, out.ClientStatus)
	must.Len(t, 3, out.TaskStates["web"].Events)
	must.Eq(t, 12, out.ModifyIndex, must.Sprint("the stale update wrote nothing"))
	must.Eq(t, 1, summaryOf(t, s, job).Running)

	// The same state again, and a newer one, are applied.
	must.NoError(t, s.UpdateAllocsFromClient(14, []*structs.Allocation{clientSnapshot(id, 3)}))
	must.Eq(t, 14, allocByID(t, s, id).ModifyIndex)
	must.NoError(t, s.UpdateAllocsFromClient(15, []*structs.Allocation{clientSnapshot(id, 4)}))
	must.Len(t, 4, allocByID(t, s, id).TaskStates["web"].Events)

	// Within one batch (one raft entry) the order holds too.
	must.NoError(t, s.UpdateAllocsFromClient(16, []*structs.Allocation{clientSnapshot(id, 5), clientSnapshot(id, 2)}))
	must.Len(t, 5, allocByID(t, s, id).TaskStates["web"].Events)
}

// Whatever order a client's successive reports reach the state store in,
// the allocation ends as the newest of them says: a newer report always
// applies, an older one never undoes it.
func TestUpdateAllocsFromClient_AnyArrivalOrderEndsAtNewest(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, structs.MaxRetainedTaskEvents).Draw(rt, "reports")
		order := rapid.Permutation(seq(n)).Draw(rt, "order")
		s := testStateStore(rt)
		job := mock.Job()
		allocs := jobWithAllocs(rt, s, 10, job, "n1", 1)
		id := allocs[0].ID
		for i, k := range order {
			must.NoError(rt, s.UpdateAllocsFromClient(uint64(12+i), []*structs.Allocation{clientSnapshot(id, k)}))
		}
		out := allocByID(rt, s, id)
		want := clientSnapshot(id, n)
		must.Eq(rt, want.ClientStatus, out.ClientStatus)
		must.Eq(rt, want.ClientDescription, out.ClientDescription)
		must.Len(rt, n, out.TaskStates["web"].Events)
	})
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// A plan computed while a node was still disconnected marks its
// allocations unknown; if it lands after the node came back and its
// client reported them running, the report stands: the marking is for a
// node that is no longer disconnected. Without this, every plan of a
// reconnect storm that touched such an allocation sent it back to
// unknown, the client reported again, and its node waited another
// heartbeat to become ready. While the node is disconnected the marking
// applies as before.
func TestUpsertAllocs_UnknownMarkingAfterTheNodeCameBack(t *testing.T) {
	s := testStateStore(t)
	node := mock.Node()
	node.Status = structs.NodeStatusDisconnected
	must.NoError(t, s.UpsertNode(5, node))
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, node.ID, 2)
	for _, a := range allocs {
		must.NoError(t, s.UpdateAllocsFromClient(11, []*structs.Allocation{clientUpdate(a.ID, structs.AllocClientStatusRunning)}))
	}
	// The scheduler's copy from its snapshot, marked unknown (a write
	// takes it over, so each gets a fresh one).
	snapshot := allocByID(t, s, allocs[0].ID)
	marked := func() []*structs.Allocation {
		p := snapshot.Copy()
		p.ClientStatus, p.ClientDescription = structs.AllocClientStatusUnknown, structs.AllocUnknown
		return []*structs.Allocation{p}
	}

	must.NoError(t, s.UpdateNodeStatus(12, node.ID, structs.NodeStatusInit, 0, nil))
	must.NoError(t, s.UpsertAllocs(13, marked()))
	must.Eq(t, structs.AllocClientStatusRunning, allocByID(t, s, allocs[0].ID).ClientStatus)
	must.NoError(t, s.UpsertPlanResults(14, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{
		{ID: allocs[1].ID, ClientStatus: structs.AllocClientStatusUnknown, DesiredDescription: "stale"}}}))
	must.Eq(t, structs.AllocClientStatusRunning, allocByID(t, s, allocs[1].ID).ClientStatus)
	must.Eq(t, 2, summaryOf(t, s, job).Running)

	must.NoError(t, s.UpdateNodeStatus(15, node.ID, structs.NodeStatusDisconnected, 0, nil))
	must.NoError(t, s.UpsertAllocs(16, marked()))
	must.Eq(t, structs.AllocClientStatusUnknown, allocByID(t, s, allocs[0].ID).ClientStatus)
	must.Eq(t, 1, summaryOf(t, s, job).Unknown)
}
