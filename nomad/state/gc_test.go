package state

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func downNode(t *testing.T, s *StateStore, index uint64) *structs.Node {
	t.Helper()
	n := mock.Node()
	must.NoError(t, s.UpsertNode(index, n))
	must.NoError(t, s.UpdateNodeStatus(index+1, n.ID, structs.NodeStatusDown, 1, nil))
	out, err := s.NodeByID(nil, n.ID)
	must.NoError(t, err)
	return out
}

// The collector decides on a snapshot; by the time its raft entry applies
// a node may have come back, gone down again, or been given work. Each of
// those keeps the node: deleting a node that is back would cut off a
// client that is talking, and deleting one with an unknown allocation
// would forget a workload that may be running.
func TestDeleteDownNodes_RechecksWhenApplied(t *testing.T) {
	s := testStateStore(t)
	gone := downNode(t, s, 10)
	back := downNode(t, s, 20)
	must.NoError(t, s.UpdateNodeStatus(22, back.ID, structs.NodeStatusReady, 2, nil))
	flapped := downNode(t, s, 30)
	seen := flapped.ModifyIndex
	must.NoError(t, s.UpdateNodeStatus(32, flapped.ID, structs.NodeStatusReady, 3, nil))
	must.NoError(t, s.UpdateNodeStatus(33, flapped.ID, structs.NodeStatusDown, 4, nil))
	busy := downNode(t, s, 40)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 42, job, busy.ID, 2)
	markUnknown(t, s, 44, allocs[0].ID)
	must.NoError(t, s.UpsertPlanResults(45, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{{ID: allocs[0].ID}}, UpdatedAt: 45}))
	must.NoError(t, s.UpsertPlanResults(46, &structs.ApplyPlanResultsRequest{AllocsStopped: []*structs.Allocation{{ID: allocs[1].ID, ClientStatus: structs.AllocClientStatusLost}}, UpdatedAt: 46}))

	deleted, err := s.DeleteDownNodes(50, map[string]uint64{
		gone.ID: gone.ModifyIndex, back.ID: back.ModifyIndex, flapped.ID: seen,
		busy.ID: mustNode(t, s, busy.ID).ModifyIndex, "missing": 1,
	})
	must.NoError(t, err)
	must.Eq(t, []string{gone.ID}, deleted)
	for _, id := range []string{back.ID, flapped.ID, busy.ID} {
		must.NotNil(t, mustNode(t, s, id), must.Sprintf("node %s must stay", id))
	}
	n, err := s.NodeByID(nil, gone.ID)
	must.NoError(t, err)
	must.Nil(t, n)
	idx, _ := s.Index(TableNodes)
	must.Eq(t, 50, idx)
}

func mustNode(t *testing.T, s *StateStore, id string) *structs.Node {
	t.Helper()
	n, err := s.NodeByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, n)
	return n
}

// A dead job goes only once nothing of it is left; one registered again
// since the collector looked has a pending evaluation and stays, as does
// one that is no longer dead.
func TestDeleteDeadJobs_OnlyWhenNothingIsLeft(t *testing.T) {
	s := testStateStore(t)
	empty := mock.Job()
	empty.Stop = true
	must.NoError(t, s.UpsertJob(10, 1, empty))
	must.Eq(t, structs.JobStatusDead, jobStatus(t, s, empty))

	withEval := mock.Job()
	withEval.Stop = true
	must.NoError(t, s.UpsertJob(11, 1, withEval))
	must.NoError(t, s.UpsertEvals(12, []*structs.Evaluation{evalFor(withEval, structs.EvalStatusComplete)}))
	must.Eq(t, structs.JobStatusDead, jobStatus(t, s, withEval))

	pending := mock.Job()
	must.NoError(t, s.UpsertJob(13, 1, pending))

	deleted, err := s.DeleteDeadJobs(20, []structs.NamespacedID{
		empty.NamespacedID(), withEval.NamespacedID(), pending.NamespacedID(), {ID: "missing", Namespace: "default"},
	})
	must.NoError(t, err)
	must.Eq(t, []structs.NamespacedID{empty.NamespacedID()}, deleted)
	out, _ := s.JobByID(nil, empty.Namespace, empty.ID)
	must.Nil(t, out)
	sum, _ := s.JobSummaryByID(nil, empty.Namespace, empty.ID)
	must.Nil(t, sum, must.Sprint("the summary goes with the job"))
	must.Eq(t, structs.JobStatusDead, jobStatus(t, s, withEval))
	must.Eq(t, structs.JobStatusPending, jobStatus(t, s, pending))
}

// A node that flaps for a week appends a status change to its
// allocations every time it goes and comes back; the store keeps only the
// newest MaxRetainedAllocStates, and the newest still decides: the
// allocation knows it is unknown and since when.
func TestAllocStates_BoundedAcrossFlaps(t *testing.T) {
	s := testStateStore(t)
	allocs := jobWithAllocs(t, s, 10, mock.Job(), "n1", 1)
	id := allocs[0].ID
	index := uint64(100)
	for flap := range 7 * 24 {
		index += 2
		markUnknown(t, s, index, id)
		must.NoError(t, s.UpdateAllocsFromClient(index+1, []*structs.Allocation{clientUpdate(id, structs.AllocClientStatusRunning)}))
		u := allocByID(t, s, id).CopySkipJob()
		u.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusRunning, time.Unix(int64(flap), 0))
		must.NoError(t, s.UpsertPlanResults(index+1, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{u}, UpdatedAt: 1}))
	}
	markUnknown(t, s, index+10, id)
	a := allocByID(t, s, id)
	must.Len(t, structs.MaxRetainedAllocStates, a.AllocStates)
	since, ok := a.UnknownSince()
	must.True(t, ok)
	must.Eq(t, time.Unix(int64(index+10), 0), since)
}

// A client's task events are bounded by the servers too: a client that
// sends its whole history (an old or misbehaving one) cannot grow the
// replicated state.
func TestUpdateAllocsFromClient_TaskEventsBounded(t *testing.T) {
	s := testStateStore(t)
	allocs := jobWithAllocs(t, s, 10, mock.Job(), "n1", 1)
	ts := &structs.TaskState{State: structs.TaskStateRunning}
	for i := range 50 {
		ts.Events = append(ts.Events, &structs.TaskEvent{Type: structs.TaskRestarting, DisplayMessage: fmt.Sprint(i)})
	}
	update := clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)
	update.TaskStates = map[string]*structs.TaskState{"web": ts}
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{update}))
	events := allocByID(t, s, allocs[0].ID).TaskStates["web"].Events
	must.Len(t, structs.MaxRetainedTaskEvents, events)
	must.Eq(t, "49", events[len(events)-1].DisplayMessage, must.Sprint("the newest events are kept"))
}

// A registering node's own event list is bounded like the history the
// servers append to.
func TestUpsertNode_NewNodeEventsBounded(t *testing.T) {
	s := testStateStore(t)
	n := mock.Node()
	for i := range 30 {
		n.Events = append(n.Events, &structs.NodeEvent{Message: fmt.Sprint(i)})
	}
	must.NoError(t, s.UpsertNode(10, n))
	events := mustNode(t, s, n.ID).Events
	must.Len(t, structs.MaxRetainedNodeEvents, events)
	must.Eq(t, "29", events[len(events)-1].Message)
}
