package state

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A placement gets all three indexes: the client pulls allocations whose
// AllocModifyIndex moved.
func TestUpsertAllocs_New(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)

	out := allocByID(t, s, allocs[0].ID)
	must.Eq(t, 11, out.CreateIndex)
	must.Eq(t, 11, out.ModifyIndex)
	must.Eq(t, 11, out.AllocModifyIndex)
	idx, _ := s.Index(TableAllocs)
	must.Eq(t, 11, idx)

	noJob := mock.Alloc()
	noJob.Job = nil
	must.ErrorIs(t, s.UpsertAllocs(12, []*structs.Allocation{noJob}), structs.ErrMissingField)
	must.ErrorIs(t, s.UpsertAllocs(12, []*structs.Allocation{{}}), structs.ErrMissingField)
}

// The scheduler writes from a snapshot; the client may have reported since.
// A server write keeps what the client owns unless it marks the allocation
// lost or unknown.
func TestUpsertAllocs_UpdateKeepsClientOwnedFields(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
	stale := allocByID(t, s, allocs[0].ID).Copy() // the scheduler's copy: pending

	running := clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)
	running.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning}}
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{running}))

	stale.Job = nil
	stale.DesiredDescription = "in-place update"
	must.NoError(t, s.UpsertAllocs(13, []*structs.Allocation{stale}))
	out := allocByID(t, s, allocs[0].ID)
	must.Eq(t, structs.AllocClientStatusRunning, out.ClientStatus)
	must.Eq(t, "client says running", out.ClientDescription)
	must.Eq(t, structs.TaskStateRunning, out.TaskStates["web"].State)
	must.Eq(t, "in-place update", out.DesiredDescription)
	must.Eq(t, job, out.Job, must.Sprint("a write without a job keeps the stored job"))
	must.Eq(t, 11, out.CreateIndex)
	must.Eq(t, 13, out.AllocModifyIndex)
	must.Eq(t, 1, summaryOf(t, s, job).Running)

	unknown := out.Copy()
	unknown.ClientStatus = structs.AllocClientStatusUnknown
	unknown.ClientDescription = structs.AllocUnknown
	unknown.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, time.Unix(1_700_000_000, 0))
	must.NoError(t, s.UpsertAllocs(14, []*structs.Allocation{unknown}))
	out = allocByID(t, s, allocs[0].ID)
	must.Eq(t, structs.AllocClientStatusUnknown, out.ClientStatus)
	must.Eq(t, structs.AllocUnknown, out.ClientDescription)
	must.True(t, out.NeedsToReconnect())
	must.Eq(t, structs.TaskGroupSummary{Unknown: 1}, summaryOf(t, s, job))
}

// An operator stops an allocation on a node that just disconnected while
// the scheduler, working from a snapshot taken a moment earlier, marks it
// unknown: the stop must survive the scheduler's write, or the task runs on
// when its node returns. Found by the partition suite
// (TestPartition_StopsWhileDisconnected, 1 run in 3 under load).
func TestUpsertAllocs_StopIsFinal(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
	stale := allocByID(t, s, allocs[0].ID).Copy() // the scheduler's snapshot: desired run

	stopped := stale.Copy()
	stopped.DesiredStatus = structs.AllocDesiredStatusStop
	stopped.DesiredDescription = "alloc was stopped by an operator"
	must.NoError(t, s.UpsertAllocs(12, []*structs.Allocation{stopped}))

	stale.ClientStatus = structs.AllocClientStatusUnknown
	must.NoError(t, s.UpsertAllocs(13, []*structs.Allocation{stale}))
	out := allocByID(t, s, stale.ID)
	must.Eq(t, structs.AllocDesiredStatusStop, out.DesiredStatus)
	must.Eq(t, "alloc was stopped by an operator", out.DesiredDescription)
	must.Eq(t, structs.AllocClientStatusUnknown, out.ClientStatus, must.Sprint("the rest of the write lands"))
}

// `alloc stop` and a drain mark an allocation to migrate through their own
// request; a plan the scheduler built before (marking the allocation
// unknown when its node disconnected) must not erase the mark, or the
// allocation is neither stopped nor replaced. Found by the partition suite
// (TestPartition_StopsWhileDisconnected failed 3 runs in 4 under load).
func TestUpsertAllocs_KeepsDesiredTransition(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
	stale := allocByID(t, s, allocs[0].ID).Copy() // the scheduler's snapshot

	yes := true
	must.NoError(t, s.UpdateAllocsDesiredTransitions(12, map[string]*structs.DesiredTransition{stale.ID: {Migrate: &yes}}, nil))
	stale.ClientStatus = structs.AllocClientStatusUnknown
	must.NoError(t, s.UpsertAllocs(13, []*structs.Allocation{stale}))
	out := allocByID(t, s, stale.ID)
	must.True(t, out.DesiredTransition.ShouldMigrate(), must.Sprint("the stop's migrate mark survives the plan"))
	must.Eq(t, structs.AllocClientStatusUnknown, out.ClientStatus)
}

// A replacement points back at its original; the store points the original
// forward, so the reconnect logic can walk the whole chain.
func TestUpsertAllocs_LinksReplacementChain(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
	orig := allocs[0]

	r1 := mock.Alloc()
	r1.Job, r1.JobID, r1.PreviousAllocation = job, job.ID, orig.ID
	must.NoError(t, s.UpsertAllocs(12, []*structs.Allocation{r1}))
	out := allocByID(t, s, orig.ID)
	must.Eq(t, r1.ID, out.NextAllocation)
	must.Eq(t, 12, out.ModifyIndex)
	must.Eq(t, 11, out.AllocModifyIndex, must.Sprint("the client has nothing to pull"))

	// A later server write of the original without NextAllocation keeps it.
	again := out.Copy()
	again.NextAllocation = ""
	must.NoError(t, s.UpsertAllocs(13, []*structs.Allocation{again}))
	must.Eq(t, r1.ID, allocByID(t, s, orig.ID).NextAllocation)
}

// Client updates merge into the stored allocation; the client has nothing
// new to pull, so AllocModifyIndex stays; vanished allocations are skipped.
func TestUpdateAllocsFromClient(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 1)

	update := clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)
	update.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning}}
	update.ModifyTime = 1_700_000_123
	update.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: "running", Time: time.Unix(1_700_000_123, 0)}}
	update.DesiredStatus = structs.AllocDesiredStatusStop // not the client's to set
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{update, clientUpdate("gc-ed", "running")}))

	out := allocByID(t, s, allocs[0].ID)
	must.Eq(t, structs.AllocClientStatusRunning, out.ClientStatus)
	must.Eq(t, "client says running", out.ClientDescription)
	must.Eq(t, structs.TaskStateRunning, out.TaskStates["web"].State)
	must.Eq(t, 1_700_000_123, out.ModifyTime)
	must.Len(t, 1, out.AllocStates)
	must.Eq(t, structs.AllocDesiredStatusRun, out.DesiredStatus)
	must.Eq(t, 12, out.ModifyIndex)
	must.Eq(t, 11, out.AllocModifyIndex)
	must.Eq(t, job, out.Job)
	must.Eq(t, structs.AllocClientStatusPending, allocs[0].ClientStatus, must.Sprint("the stored object was copied, not changed"))

	// An update without status or task states keeps them.
	must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{{ID: allocs[0].ID}}))
	out = allocByID(t, s, allocs[0].ID)
	must.Eq(t, structs.AllocClientStatusRunning, out.ClientStatus)
	must.NotNil(t, out.TaskStates["web"])
}

// Terminal client statuses are final: a returning client's momentary
// "running" must not resurrect an allocation already marked lost and
// replaced (spec: they never go back to running).
func TestUpdateAllocsFromClient_TerminalIsFinal(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 2)
	must.NoError(t, s.UpsertPlanResults(12, &structs.ApplyPlanResultsRequest{
		AllocsStopped: []*structs.Allocation{{ID: allocs[0].ID, DesiredDescription: structs.AllocLost, ClientStatus: structs.AllocClientStatusLost}},
	}))

	must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)}))
	out := allocByID(t, s, allocs[0].ID)
	must.Eq(t, structs.AllocClientStatusLost, out.ClientStatus)
	must.Eq(t, 1, summaryOf(t, s, job).Lost)

	// The returning client's final word, once it has stopped the tasks, is
	// recorded over lost and counted there (docs/concepts/disconnected-clients.md, "Reconnect"; as upstream).
	must.NoError(t, s.UpdateAllocsFromClient(14, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusComplete)}))
	must.Eq(t, structs.AllocClientStatusComplete, allocByID(t, s, allocs[0].ID).ClientStatus)
	must.Eq(t, structs.TaskGroupSummary{Starting: 1, Complete: 1}, summaryOf(t, s, job))
	// and a stale plan's lost does not take it back.
	lost := allocByID(t, s, allocs[0].ID).CopySkipJob()
	lost.ClientStatus = structs.AllocClientStatusLost
	must.NoError(t, s.UpsertAllocs(15, []*structs.Allocation{lost}))
	must.Eq(t, structs.AllocClientStatusComplete, allocByID(t, s, allocs[0].ID).ClientStatus)

	// Other terminal statuses are the client's to change: failed, then the
	// client's final word complete.
	must.NoError(t, s.UpdateAllocsFromClient(16, []*structs.Allocation{clientUpdate(allocs[1].ID, structs.AllocClientStatusFailed)}))
	must.NoError(t, s.UpdateAllocsFromClient(17, []*structs.Allocation{clientUpdate(allocs[1].ID, structs.AllocClientStatusComplete)}))
	must.Eq(t, structs.AllocClientStatusComplete, allocByID(t, s, allocs[1].ID).ClientStatus)

	// Nor can the scheduler mark a finished allocation unknown.
	u := allocByID(t, s, allocs[1].ID).Copy()
	u.ClientStatus = structs.AllocClientStatusUnknown
	must.NoError(t, s.UpsertAllocs(18, []*structs.Allocation{u}))
	must.Eq(t, structs.AllocClientStatusComplete, allocByID(t, s, allocs[1].ID).ClientStatus)
}

// An unknown allocation an operator stopped while its node was away takes
// only the client's final word when the client returns: its momentary
// "running" (or "pending") would revive what the servers stopped, while
// "failed" and "complete" are how the task ended (see
// docs/concepts/disconnected-clients.md, "Operator actions"). An unknown
// allocation still desired to run takes "running": that is a reconnect.
func TestUpdateAllocsFromClient_StoppedUnknownTakesFinalWord(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 2)
	for i, a := range allocs {
		u := allocByID(t, s, a.ID).CopySkipJob()
		u.ClientStatus = structs.AllocClientStatusUnknown
		u.AppendState(structs.AllocStateFieldClientStatus, u.ClientStatus, time.Unix(1_700_000_000, 0))
		must.NoError(t, s.UpsertAllocs(uint64(12+i), []*structs.Allocation{u}))
	}
	must.NoError(t, s.UpsertPlanResults(14, &structs.ApplyPlanResultsRequest{
		AllocsStopped: []*structs.Allocation{{ID: allocs[0].ID, DesiredDescription: "alloc was stopped by an operator"}},
	}))
	must.Eq(t, structs.TaskGroupSummary{Unknown: 2}, summaryOf(t, s, job))

	must.NoError(t, s.UpdateAllocsFromClient(15, []*structs.Allocation{
		clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning),
		clientUpdate(allocs[1].ID, structs.AllocClientStatusRunning),
	}))
	must.Eq(t, structs.AllocClientStatusUnknown, allocByID(t, s, allocs[0].ID).ClientStatus, must.Sprint("a stopped allocation came back to running"))
	must.Eq(t, structs.AllocClientStatusRunning, allocByID(t, s, allocs[1].ID).ClientStatus, must.Sprint("a reconnect was refused"))
	must.NoError(t, s.UpdateAllocsFromClient(16, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusPending)}))
	must.Eq(t, structs.AllocClientStatusUnknown, allocByID(t, s, allocs[0].ID).ClientStatus)

	must.NoError(t, s.UpdateAllocsFromClient(17, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusFailed)}))
	must.Eq(t, structs.AllocClientStatusFailed, allocByID(t, s, allocs[0].ID).ClientStatus)
	must.Eq(t, structs.TaskGroupSummary{Running: 1, Failed: 1}, summaryOf(t, s, job))
}

// A plan commits stops, placements, in-place updates and follow-up evals in
// one transaction, with the leader's timestamp.
func TestUpsertPlanResults(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 3)
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{
		clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning),
		clientUpdate(allocs[1].ID, structs.AllocClientStatusRunning),
		clientUpdate(allocs[2].ID, structs.AllocClientStatusRunning),
	}))
	planEval := evalFor(job, structs.EvalStatusPending)
	must.NoError(t, s.UpsertEvals(13, []*structs.Evaluation{planEval}))

	// The scheduler's plan, built the way structs.Plan builds it.
	plan := &structs.Plan{EvalID: planEval.ID, Job: job}
	plan.AppendStoppedAlloc(allocs[0], structs.AllocNotNeeded, "", "follow-up")
	plan.AppendStoppedAlloc(allocs[1], structs.AllocLost, structs.AllocClientStatusLost, "")
	inPlace := allocs[2].CopySkipJob()
	inPlace.ClientStatus = structs.AllocClientStatusPending // stale
	plan.AppendAlloc(inPlace)
	placed := mock.Alloc()
	placed.Job, placed.JobID, placed.NodeID = nil, job.ID, "n2"
	placed.PreviousAllocation = allocs[1].ID
	plan.AppendAlloc(placed)
	followUp := evalFor(job, structs.EvalStatusPending)

	req := &structs.ApplyPlanResultsRequest{
		Job:           job,
		AllocsStopped: append(plan.NodeUpdate["n1"], []*structs.Allocation{{ID: "gc-ed"}}...),
		AllocsUpdated: append(plan.NodeAllocation["n1"], plan.NodeAllocation["n2"]...),
		EvalID:        planEval.ID,
		Evals:         []*structs.Evaluation{followUp},
		UpdatedAt:     1_700_000_999,
	}
	must.NoError(t, s.UpsertPlanResults(20, req))

	stopped := allocByID(t, s, allocs[0].ID)
	must.Eq(t, structs.AllocDesiredStatusStop, stopped.DesiredStatus)
	must.Eq(t, structs.AllocNotNeeded, stopped.DesiredDescription)
	must.Eq(t, structs.AllocClientStatusRunning, stopped.ClientStatus, must.Sprint("stop keeps the client's status"))
	must.Eq(t, "follow-up", stopped.FollowupEvalID)
	must.Eq(t, job, stopped.Job, must.Sprint("stop entries carry no job; the stored one stays"))
	must.Eq(t, 20, stopped.AllocModifyIndex)
	must.Eq(t, 1_700_000_999, stopped.ModifyTime)
	must.Eq(t, 11, stopped.CreateIndex)

	lost := allocByID(t, s, allocs[1].ID)
	must.Eq(t, structs.AllocClientStatusLost, lost.ClientStatus)
	must.Eq(t, placed.ID, lost.NextAllocation)

	updated := allocByID(t, s, allocs[2].ID)
	must.Eq(t, structs.AllocClientStatusRunning, updated.ClientStatus, must.Sprint("stale status ignored"))
	must.Eq(t, job, updated.Job, must.Sprint("job nil → req.Job"))
	must.Eq(t, planEval.ID, updated.EvalID)
	must.Eq(t, 11, updated.CreateIndex)
	must.Eq(t, 20, updated.AllocModifyIndex)

	p := allocByID(t, s, placed.ID)
	must.Eq(t, 20, p.CreateIndex)
	must.Eq(t, 1_700_000_999, p.CreateTime)
	must.Eq(t, 1_700_000_999, p.ModifyTime)
	must.Eq(t, job, p.Job)
	must.Eq(t, planEval.ID, p.EvalID)

	e, _ := s.EvalByID(nil, planEval.ID)
	must.Eq(t, 20, e.ModifyIndex)
	f, _ := s.EvalByID(nil, followUp.ID)
	must.NotNil(t, f)
	must.Eq(t, 20, f.CreateIndex)

	must.Eq(t, structs.TaskGroupSummary{Running: 2, Lost: 1, Starting: 1}, summaryOf(t, s, job))
	must.Eq(t, structs.JobStatusRunning, jobStatus(t, s, job))
	for _, table := range []string{TableAllocs, TableEvals} {
		idx, _ := s.Index(table)
		must.Eq(t, 20, idx, must.Sprint(table))
	}
	must.ErrorIs(t, s.UpsertPlanResults(21, nil), structs.ErrMissingField)
}

// An evict is kept as an evict; anything else in a stop entry is a stop.
func TestUpsertPlanResults_Evict(t *testing.T) {
	s := testStateStore(t)
	allocs := jobWithAllocs(t, s, 10, mock.Job(), "n1", 1)
	must.NoError(t, s.UpsertPlanResults(12, &structs.ApplyPlanResultsRequest{
		AllocsStopped: []*structs.Allocation{{ID: allocs[0].ID, DesiredStatus: structs.AllocDesiredStatusEvict}},
	}))
	must.Eq(t, structs.AllocDesiredStatusEvict, allocByID(t, s, allocs[0].ID).DesiredStatus)
}

// Unknown allocations are live: they hold their node's resources and belong
// with the non-terminal ones.
func TestAllocsByNodeTerminal(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 4)
	other := jobWithAllocs(t, s, 20, mock.Job(), "n2", 1)
	must.NoError(t, s.UpdateAllocsFromClient(30, []*structs.Allocation{
		clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning),
		clientUpdate(allocs[1].ID, structs.AllocClientStatusRunning),
		clientUpdate(allocs[2].ID, structs.AllocClientStatusComplete),
	}))
	u := allocByID(t, s, allocs[1].ID).Copy()
	u.ClientStatus = structs.AllocClientStatusUnknown
	must.NoError(t, s.UpsertAllocs(31, []*structs.Allocation{u}))
	must.NoError(t, s.UpsertPlanResults(32, &structs.ApplyPlanResultsRequest{
		AllocsStopped: []*structs.Allocation{{ID: allocs[3].ID}},
	}))

	live, err := s.AllocsByNodeTerminal(nil, "n1", false)
	must.NoError(t, err)
	must.SliceContainsAll(t, []string{allocs[0].ID, allocs[1].ID}, ids(live))
	done, err := s.AllocsByNodeTerminal(nil, "n1", true)
	must.NoError(t, err)
	must.SliceContainsAll(t, []string{allocs[2].ID, allocs[3].ID}, ids(done))

	all, err := s.AllocsByNode(nil, "n1")
	must.NoError(t, err)
	must.Len(t, 4, all)
	all, err = s.AllocsByNode(nil, "n2")
	must.NoError(t, err)
	must.Eq(t, []string{other[0].ID}, ids(all))
}

// A job purged and registered again under the same ID is another job: by
// default its allocations lists do not include the old incarnation's.
func TestAllocsByJob_CreateIndex(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	old := jobWithAllocs(t, s, 10, job, "n1", 1)
	must.NoError(t, s.DeleteJob(12, job.Namespace, job.ID))
	again := job.Copy()
	newer := jobWithAllocs(t, s, 13, again, "n1", 1)

	got, err := s.AllocsByJob(nil, job.Namespace, job.ID, false)
	must.NoError(t, err)
	must.Eq(t, []string{newer[0].ID}, ids(got))
	got, err = s.AllocsByJob(nil, job.Namespace, job.ID, true)
	must.NoError(t, err)
	must.SliceContainsAll(t, []string{old[0].ID, newer[0].ID}, ids(got))
}

// `nomad eval status` lists an eval's placements; the CLI resolves short
// alloc IDs by prefix within a namespace (or all).
func TestAllocsByEvalAndPrefix(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 2)
	got, err := s.AllocsByEval(nil, allocs[0].EvalID)
	must.NoError(t, err)
	must.Eq(t, []string{allocs[0].ID}, ids(got))

	prefix := allocs[1].ID[:6]
	got = drain[*structs.Allocation](t, mustIter(s.AllocsByIDPrefix(nil, job.Namespace, prefix)))
	must.SliceContains(t, ids(got), allocs[1].ID)
	got = drain[*structs.Allocation](t, mustIter(s.AllocsByIDPrefix(nil, "other", prefix)))
	must.SliceEmpty(t, got)
	got = drain[*structs.Allocation](t, mustIter(s.AllocsByIDPrefix(nil, AllNamespaces, allocs[1].ID)))
	must.Len(t, 1, got)
	must.Len(t, 2, drain[*structs.Allocation](t, mustIter(s.Allocs(nil))))
}

// Watches are what make a client's blocking query on its node wake: they
// fire for changes to what was read, and not for updates to other nodes'
// allocations.
func TestAllocs_Watch(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	mine := jobWithAllocs(t, s, 10, job, "n1", 2)
	theirs := jobWithAllocs(t, s, 20, mock.Job(), "n2", 1)

	wsAlloc, wsNode, wsLive := memdb.NewWatchSet(), memdb.NewWatchSet(), memdb.NewWatchSet()
	_, err := s.AllocByID(wsAlloc, mine[0].ID)
	must.NoError(t, err)
	_, err = s.AllocsByNode(wsNode, "n1")
	must.NoError(t, err)
	_, err = s.AllocsByNodeTerminal(wsLive, "n1", false)
	must.NoError(t, err)

	must.NoError(t, s.UpdateAllocsFromClient(30, []*structs.Allocation{clientUpdate(theirs[0].ID, structs.AllocClientStatusRunning)}))
	watchNotFired(t, wsAlloc)
	watchNotFired(t, wsNode)
	watchNotFired(t, wsLive)

	must.NoError(t, s.UpdateAllocsFromClient(31, []*structs.Allocation{clientUpdate(mine[1].ID, structs.AllocClientStatusRunning)}))
	watchNotFired(t, wsAlloc)
	watchFired(t, wsNode)
	watchFired(t, wsLive)

	must.NoError(t, s.UpdateAllocsFromClient(32, []*structs.Allocation{clientUpdate(mine[0].ID, structs.AllocClientStatusRunning)}))
	watchFired(t, wsAlloc)
}

// The allocations a follow-up evaluation waits for are found by that
// evaluation alone: a node's reconnect push asks it for every timeout
// evaluation it touches, and a scan of the whole job there made a storm of
// 1,000 nodes with 10,000 allocations quadratic.
func TestAllocsByFollowupEval(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, "n1", 3)
	waiting := []*structs.Allocation{allocs[0].Copy(), allocs[2].Copy()}
	for _, a := range waiting {
		a.FollowupEvalID = "timeout-1"
	}
	must.NoError(t, s.UpsertAllocs(20, waiting))

	got, err := s.AllocsByFollowupEval(nil, "timeout-1")
	must.NoError(t, err)
	must.SliceContainsAll(t, []string{allocs[0].ID, allocs[2].ID}, []string{got[0].ID, got[1].ID})
	none, err := s.AllocsByFollowupEval(nil, "other")
	must.NoError(t, err)
	must.SliceEmpty(t, none)
}
