package state

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// markUnknown is the scheduler marking an allocation on a disconnected node.
func markUnknown(t *testing.T, s *StateStore, index uint64, id string) {
	t.Helper()
	u := allocByID(t, s, id).CopySkipJob()
	u.ClientStatus = structs.AllocClientStatusUnknown
	u.ClientDescription = structs.AllocUnknown
	u.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, time.Unix(int64(index), 0))
	must.NoError(t, s.UpsertPlanResults(index, &structs.ApplyPlanResultsRequest{
		AllocsUpdated: []*structs.Allocation{u},
		UpdatedAt:     int64(index),
	}))
}

// The disconnect story as the summary must tell it: an allocation starts,
// runs, goes unknown while its node is away, runs again on reconnect and
// completes. Each step moves exactly one count, and the job stays running
// while the allocation is unknown.
func TestJobSummary_DisconnectReconnectSequence(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 2)
	id := allocs[0].ID
	// The second allocation keeps running throughout, to show the first's
	// moves never disturb another count.
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{clientUpdate(allocs[1].ID, structs.AllocClientStatusRunning)}))
	must.Eq(t, structs.TaskGroupSummary{Starting: 1, Running: 1}, summaryOf(t, s, job))

	must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{clientUpdate(id, structs.AllocClientStatusRunning)}))
	must.Eq(t, structs.TaskGroupSummary{Running: 2}, summaryOf(t, s, job))

	markUnknown(t, s, 14, id)
	must.Eq(t, structs.TaskGroupSummary{Running: 1, Unknown: 1}, summaryOf(t, s, job))
	must.Eq(t, structs.JobStatusRunning, jobStatus(t, s, job))
	live, err := s.AllocsByNodeTerminal(nil, "n1", false)
	must.NoError(t, err)
	must.SliceContains(t, ids(live), id)

	must.NoError(t, s.UpdateAllocsFromClient(15, []*structs.Allocation{clientUpdate(id, structs.AllocClientStatusRunning)}))
	must.Eq(t, structs.TaskGroupSummary{Running: 2}, summaryOf(t, s, job))

	must.NoError(t, s.UpdateAllocsFromClient(16, []*structs.Allocation{clientUpdate(id, structs.AllocClientStatusComplete)}))
	must.Eq(t, structs.TaskGroupSummary{Running: 1, Complete: 1}, summaryOf(t, s, job))

	sum, err := s.JobSummaryByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, 16, sum.ModifyIndex)
}

// When the lost window expires the scheduler stops the unknown allocation
// as lost: Unknown goes down, Lost up, and the replacement starts.
func TestJobSummary_UnknownExpiresToLost(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)}))
	markUnknown(t, s, 13, allocs[0].ID)

	plan := &structs.Plan{Job: job}
	plan.AppendStoppedAlloc(allocByID(t, s, allocs[0].ID), structs.AllocLost, structs.AllocClientStatusLost, "")
	replacement := mock.Alloc()
	replacement.Job, replacement.JobID, replacement.NodeID = nil, job.ID, "n2"
	replacement.PreviousAllocation = allocs[0].ID
	must.NoError(t, s.UpsertPlanResults(14, &structs.ApplyPlanResultsRequest{
		Job:           job,
		AllocsStopped: plan.NodeUpdate["n1"],
		AllocsUpdated: []*structs.Allocation{replacement},
		UpdatedAt:     14,
	}))
	must.Eq(t, structs.TaskGroupSummary{Lost: 1, Starting: 1}, summaryOf(t, s, job))
}

// Running to lost directly: a group without a lost window on a node that
// went down.
func TestJobSummary_RunningToLost(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)}))
	must.NoError(t, s.UpsertPlanResults(13, &structs.ApplyPlanResultsRequest{
		AllocsStopped: []*structs.Allocation{{ID: allocs[0].ID, DesiredDescription: structs.AllocLost, ClientStatus: structs.AllocClientStatusLost}},
	}))
	must.Eq(t, structs.TaskGroupSummary{Lost: 1}, summaryOf(t, s, job))
	must.Eq(t, structs.JobStatusDead, jobStatus(t, s, job))
}

// Upstream semantics: an allocation told to stop still counts by its client
// status until the client reports it finished.
func TestJobSummary_ServerTerminalCountsByClientStatus(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)}))
	must.NoError(t, s.UpsertPlanResults(13, &structs.ApplyPlanResultsRequest{
		AllocsStopped: []*structs.Allocation{{ID: allocs[0].ID, DesiredDescription: structs.AllocStopped}},
	}))
	must.Eq(t, structs.TaskGroupSummary{Running: 1}, summaryOf(t, s, job))
	must.NoError(t, s.UpdateAllocsFromClient(14, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusComplete)}))
	must.Eq(t, structs.TaskGroupSummary{Complete: 1}, summaryOf(t, s, job))
}

// Allocations of a group the job no longer has are not counted anywhere,
// and do not make the write fail.
func TestJobSummary_DroppedGroupNotCounted(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
	v1 := job.Copy()
	v1.TaskGroups[0].Name = "api"
	must.NoError(t, s.UpsertJob(12, 0, v1))

	must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)}))
	sum, err := s.JobSummaryByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, map[string]structs.TaskGroupSummary{"api": {}}, sum.Summary)
	must.Eq(t, 12, sum.ModifyIndex)
}
