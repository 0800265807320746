package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

func evalFor(job *structs.Job, status string) *structs.Evaluation {
	e := mock.Eval()
	e.JobID, e.Namespace, e.Status = job.ID, job.Namespace, status
	return e
}

// The eval broker hands out ModifyIndex as the index a worker must wait
// for, so the store sets it on the caller's object; CreateIndex survives
// updates.
func TestUpsertEvals_Indexes(t *testing.T) {
	s := testStateStore(t)
	eval := mock.Eval()
	must.NoError(t, s.UpsertEvals(10, []*structs.Evaluation{eval}))
	must.Eq(t, 10, eval.CreateIndex)
	must.Eq(t, 10, eval.ModifyIndex)

	update := eval.Copy()
	update.Status = structs.EvalStatusComplete
	must.NoError(t, s.UpsertEvals(11, []*structs.Evaluation{update}))
	out, err := s.EvalByID(nil, eval.ID)
	must.NoError(t, err)
	must.Eq(t, 10, out.CreateIndex)
	must.Eq(t, 11, out.ModifyIndex)
	must.Eq(t, structs.EvalStatusComplete, out.Status)
	idx, _ := s.Index(TableEvals)
	must.Eq(t, 11, idx)

	missing, err := s.EvalByID(nil, "nope")
	must.NoError(t, err)
	must.Nil(t, missing)
	must.ErrorIs(t, s.UpsertEvals(12, []*structs.Evaluation{{}}), structs.ErrMissingField)
}

// Queued is the scheduler's count of what it could not place: an eval sets
// it, each placement takes one off, and it never goes below zero.
func TestUpsertEvals_QueuedAllocations(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	must.NoError(t, s.UpsertJob(10, 0, job))

	e := evalFor(job, structs.EvalStatusComplete)
	e.QueuedAllocations = map[string]int{"web": 2, "gone": 7}
	must.NoError(t, s.UpsertEvals(11, []*structs.Evaluation{e}))
	must.Eq(t, 2, summaryOf(t, s, job).Queued)
	sum, _ := s.JobSummaryByID(nil, job.Namespace, job.ID)
	must.MapNotContainsKey(t, sum.Summary, "gone")
	must.Eq(t, 11, sum.ModifyIndex)

	placements := make([]*structs.Allocation, 3)
	for i := range placements {
		a := mock.Alloc()
		a.Job, a.JobID = job, job.ID
		placements[i] = a
	}
	must.NoError(t, s.UpsertAllocs(12, placements[:1]))
	must.Eq(t, 1, summaryOf(t, s, job).Queued)
	must.NoError(t, s.UpsertAllocs(13, placements[1:]))
	must.Eq(t, 0, summaryOf(t, s, job).Queued)
	must.Eq(t, 3, summaryOf(t, s, job).Starting)
}

// A blocked eval waits for capacity; once an eval of the job completes
// with everything placed it is moot and is cancelled in the same write.
func TestUpsertEvals_CompleteCancelsBlocked(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	must.NoError(t, s.UpsertJob(10, 0, job))
	blocked := evalFor(job, structs.EvalStatusBlocked)
	otherJob := mock.Eval()
	otherJob.Status = structs.EvalStatusBlocked
	must.NoError(t, s.UpsertEvals(11, []*structs.Evaluation{blocked, otherJob}))

	// An eval that failed to place something keeps the blocked one.
	failed := evalFor(job, structs.EvalStatusComplete)
	failed.FailedTGAllocs = map[string]*structs.AllocMetric{"web": {}}
	must.NoError(t, s.UpsertEvals(12, []*structs.Evaluation{failed}))
	out, _ := s.EvalByID(nil, blocked.ID)
	must.Eq(t, structs.EvalStatusBlocked, out.Status)

	done := evalFor(job, structs.EvalStatusComplete)
	done.ModifyTime = 1_700_000_500
	must.NoError(t, s.UpsertEvals(13, []*structs.Evaluation{done}))
	out, _ = s.EvalByID(nil, blocked.ID)
	must.Eq(t, structs.EvalStatusCancelled, out.Status)
	must.Eq(t, 13, out.ModifyIndex)
	must.Eq(t, 1_700_000_500, out.ModifyTime)
	must.StrContains(t, out.StatusDescription, done.ID)

	out, _ = s.EvalByID(nil, otherJob.ID)
	must.Eq(t, structs.EvalStatusBlocked, out.Status)
}

// The GC deletes evals and allocs; missing IDs are fine (a repeated GC), and
// a job left with nothing is dead, not pending.
func TestDeleteEval(t *testing.T) {
	s := testStateStore(t)
	job := mock.BatchJob()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
	eval := evalFor(job, structs.EvalStatusComplete)
	must.NoError(t, s.UpsertEvals(12, []*structs.Evaluation{eval}))
	must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusComplete)}))
	must.Eq(t, structs.JobStatusDead, jobStatus(t, s, job))

	must.NoError(t, s.DeleteEval(14, []string{eval.ID, "missing"}, []string{allocs[0].ID, "missing"}))
	out, _ := s.EvalByID(nil, eval.ID)
	must.Nil(t, out)
	a, _ := s.AllocByID(nil, allocs[0].ID)
	must.Nil(t, a)
	must.Eq(t, structs.JobStatusDead, jobStatus(t, s, job))
	// Terminal counts are history: GC does not rewrite them.
	must.Eq(t, 1, summaryOf(t, s, job).Complete)
	for _, table := range []string{TableEvals, TableAllocs} {
		idx, _ := s.Index(table)
		must.Eq(t, 14, idx, must.Sprint(table))
	}
}

// Live counts must match what exists even if a live allocation is deleted.
func TestDeleteEval_LiveAllocUncounted(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 2)
	must.NoError(t, s.DeleteEval(12, nil, []string{allocs[0].ID}))
	must.Eq(t, 1, summaryOf(t, s, job).Starting)
}

// The CLI resolves short eval IDs by prefix within a namespace (or all), and
// job status reads a job's evals by job.
func TestEvalsByIDPrefixAndJob(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	a, b, c := evalFor(job, structs.EvalStatusPending), evalFor(job, structs.EvalStatusPending), mock.Eval()
	a.ID = "aaaa1111-0000-0000-0000-000000000000"
	b.ID = "aaaa2222-0000-0000-0000-000000000000"
	c.ID = "aaaa3333-0000-0000-0000-000000000000"
	c.Namespace = "other"
	must.NoError(t, s.UpsertEvals(10, []*structs.Evaluation{a, b, c}))

	got := ids(drain[*structs.Evaluation](t, mustIter(s.EvalsByIDPrefix(nil, "default", "aaaa"))))
	must.SliceContainsAll(t, []string{a.ID, b.ID}, got)
	got = ids(drain[*structs.Evaluation](t, mustIter(s.EvalsByIDPrefix(nil, AllNamespaces, "aaaa"))))
	must.Len(t, 3, got)
	got = ids(drain[*structs.Evaluation](t, mustIter(s.EvalsByIDPrefix(nil, "other", "aaaa3"))))
	must.Eq(t, []string{c.ID}, got)

	byJob, err := s.EvalsByJob(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.SliceContainsAll(t, []string{a.ID, b.ID}, ids(byJob))
	must.Len(t, 3, drain[*structs.Evaluation](t, mustIter(s.Evals(nil))))
}

// A blocking query on a job's evals wakes when one of them changes, not
// when another job's existing eval does. (Inserting new keys may restructure
// the radix tree and wake list watchers spuriously; blocking queries re-run
// and compare indexes, so that costs a re-read, never a wrong answer.)
func TestEvalsByJob_Watch(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	eval, other := evalFor(job, structs.EvalStatusPending), mock.Eval()
	must.NoError(t, s.UpsertEvals(10, []*structs.Evaluation{eval, other}))

	ws := memdb.NewWatchSet()
	_, err := s.EvalsByJob(ws, job.Namespace, job.ID)
	must.NoError(t, err)
	wsOne := memdb.NewWatchSet()
	_, err = s.EvalByID(wsOne, eval.ID)
	must.NoError(t, err)

	otherUpdate := other.Copy()
	otherUpdate.Status = structs.EvalStatusComplete
	must.NoError(t, s.UpsertEvals(11, []*structs.Evaluation{otherUpdate}))
	watchNotFired(t, ws)
	watchNotFired(t, wsOne)

	update := eval.Copy()
	update.Status = structs.EvalStatusComplete
	must.NoError(t, s.UpsertEvals(12, []*structs.Evaluation{update}))
	watchFired(t, ws)
	watchFired(t, wsOne)
}

// Canceling a max-disconnect-timeout evaluation unlinks the allocations
// that named it, in the same transaction (upstream >= 1.10.2), and a plan
// built before the cancel cannot link them again: an allocation must never
// point at a follow-up that will not run.
func TestUpsertEvals_CanceledTimeoutUnlinksAllocs(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 2)
	timeout := evalFor(job, structs.EvalStatusPending)
	timeout.TriggeredBy = structs.EvalTriggerMaxDisconnectTimeout
	other := evalFor(job, structs.EvalStatusPending)
	other.TriggeredBy = structs.EvalTriggerMaxDisconnectTimeout
	must.NoError(t, s.UpsertEvals(12, []*structs.Evaluation{timeout, other}))
	stale := make([]*structs.Allocation, 2)
	for i, a := range allocs {
		u := allocByID(t, s, a.ID).CopySkipJob()
		u.FollowupEvalID = []string{timeout.ID, other.ID}[i]
		must.NoError(t, s.UpsertAllocs(uint64(13+i), []*structs.Allocation{u}))
		stale[i] = u.Copy()
	}

	canceled := timeout.Copy()
	canceled.Status = structs.EvalStatusCancelled
	must.NoError(t, s.UpsertEvals(20, []*structs.Evaluation{canceled}))
	out := allocByID(t, s, allocs[0].ID)
	must.Eq(t, "", out.FollowupEvalID)
	must.Eq(t, 20, out.ModifyIndex, must.Sprint("unlinked in the transaction of the cancel"))
	must.Eq(t, other.ID, allocByID(t, s, allocs[1].ID).FollowupEvalID, must.Sprint("another evaluation's link stays"))

	// A plan from a snapshot taken before the cancel carries the old link.
	s0 := stale[0].Copy()
	s0.DesiredDescription = "in-place update"
	must.NoError(t, s.UpsertAllocs(21, []*structs.Allocation{s0}))
	must.Eq(t, "", allocByID(t, s, allocs[0].ID).FollowupEvalID)
	must.NoError(t, s.UpsertPlanResults(22, &structs.ApplyPlanResultsRequest{
		AllocsStopped: []*structs.Allocation{{ID: allocs[0].ID, FollowupEvalID: timeout.ID, DesiredDescription: "stop"}},
	}))
	must.Eq(t, "", allocByID(t, s, allocs[0].ID).FollowupEvalID)
}
