package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A new job gets its indexes, the submit time of the request, a pending
// status and a zeroed summary with one entry per group.
func TestUpsertJob_New(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	job.TaskGroups = append(job.TaskGroups, job.TaskGroups[0].Copy())
	job.TaskGroups[1].Name = "cache"
	must.NoError(t, s.UpsertJob(100, 555, job))

	out, err := s.JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, 100, out.CreateIndex)
	must.Eq(t, 100, out.ModifyIndex)
	must.Eq(t, 100, out.JobModifyIndex)
	must.Eq(t, 0, out.Version)
	must.Eq(t, 555, out.SubmitTime)
	must.Eq(t, structs.JobStatusPending, out.Status)

	sum, err := s.JobSummaryByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, &structs.JobSummary{
		JobID:     job.ID,
		Namespace: job.Namespace,
		Summary: map[string]structs.TaskGroupSummary{
			"web": {}, "cache": {},
		},
		Children:    &structs.JobChildrenSummary{},
		CreateIndex: 100,
		ModifyIndex: 100,
	}, sum)

	for _, table := range []string{TableJobs, TableJobSummary} {
		idx, _ := s.Index(table)
		must.Eq(t, 100, idx, must.Sprint(table))
	}
}

// Re-submitting an identical job must not create a version: a new
// JobModifyIndex would make the scheduler update every allocation.
func TestUpsertJob_UnchangedSpecKeepsVersion(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	must.NoError(t, s.UpsertJob(100, 555, job))

	again := job.Copy()
	again.Status = structs.JobStatusDead // server-owned, ignored
	must.NoError(t, s.UpsertJob(101, 666, again))

	out, err := s.JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, 100, out.CreateIndex)
	must.Eq(t, 101, out.ModifyIndex)
	must.Eq(t, 100, out.JobModifyIndex)
	must.Eq(t, 0, out.Version)
	must.Eq(t, 555, out.SubmitTime)
	must.Eq(t, structs.JobStatusPending, out.Status)
}

// A changed spec is a new version, with the new submit time.
func TestUpsertJob_ChangedSpecBumpsVersion(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	must.NoError(t, s.UpsertJob(100, 555, job))

	v1 := job.Copy()
	v1.TaskGroups[0].Count = 3
	must.NoError(t, s.UpsertJob(101, 666, v1))
	out, _ := s.JobByID(nil, job.Namespace, job.ID)
	must.Eq(t, 100, out.CreateIndex)
	must.Eq(t, 101, out.JobModifyIndex)
	must.Eq(t, 1, out.Version)
	must.Eq(t, 666, out.SubmitTime)

	// Stopping is a spec change too: upstream records it as a version.
	v2 := out.Copy()
	v2.Stop = true
	must.NoError(t, s.UpsertJob(102, 0, v2))
	out, _ = s.JobByID(nil, job.Namespace, job.ID)
	must.Eq(t, 2, out.Version)
	must.Eq(t, 102, out.JobModifyIndex)
	must.Eq(t, 666, out.SubmitTime, must.Sprint("zero submit time keeps the job's own"))
	must.Eq(t, structs.JobStatusDead, out.Status)
}

// Adding a group starts its counts at zero; removing one drops it; the
// counts of groups that stay are untouched.
func TestUpsertJob_SummaryFollowsGroups(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 100, job, "node-1", 2)
	must.NoError(t, s.UpdateAllocsFromClient(102, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)}))

	v1 := job.Copy()
	v1.TaskGroups = append(v1.TaskGroups, v1.TaskGroups[0].Copy())
	v1.TaskGroups[1].Name = "cache"
	must.NoError(t, s.UpsertJob(103, 0, v1))
	sum, _ := s.JobSummaryByID(nil, job.Namespace, job.ID)
	must.Eq(t, map[string]structs.TaskGroupSummary{
		"web":   {Running: 1, Starting: 1},
		"cache": {},
	}, sum.Summary)
	must.Eq(t, 103, sum.ModifyIndex)
	must.Eq(t, 100, sum.CreateIndex)

	v2 := v1.Copy()
	v2.TaskGroups = v2.TaskGroups[1:]
	must.NoError(t, s.UpsertJob(104, 0, v2))
	sum, _ = s.JobSummaryByID(nil, job.Namespace, job.ID)
	must.Eq(t, map[string]structs.TaskGroupSummary{"cache": {}}, sum.Summary)
}

// A job without an ID cannot be keyed; the write fails instead of storing it.
func TestUpsertJob_RejectsMissingID(t *testing.T) {
	s := testStateStore(t)
	must.ErrorIs(t, s.UpsertJob(1, 0, &structs.Job{Namespace: "default"}), structs.ErrMissingField)
}

// A purge removes the job and its summary; the allocations stay for the GC.
func TestDeleteJob(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 100, job, "node-1", 1)

	must.NoError(t, s.DeleteJob(102, job.Namespace, job.ID))
	out, err := s.JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Nil(t, out)
	sum, err := s.JobSummaryByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Nil(t, sum)
	allocByID(t, s, allocs[0].ID)
	idx, _ := s.Index(TableJobSummary)
	must.Eq(t, 102, idx)

	must.ErrorIs(t, s.DeleteJob(103, job.Namespace, job.ID), structs.ErrUnknownJob)

	// Allocation writes for a purged job are still accepted and counted
	// nowhere.
	must.NoError(t, s.UpdateAllocsFromClient(104, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusComplete)}))
}

// Prefix lookups are per namespace unless the caller asks for all of them.
func TestJobsByIDPrefix(t *testing.T) {
	s := testStateStore(t)
	a, b, c := mock.Job(), mock.Job(), mock.Job()
	a.ID, b.ID, c.ID = "web-a", "web-b", "api"
	b.Namespace = "other"
	for i, j := range []*structs.Job{a, b, c} {
		must.NoError(t, s.UpsertJob(uint64(10+i), 0, j))
	}
	got := ids(drain[*structs.Job](t, mustIter(s.JobsByIDPrefix(nil, "default", "web"))))
	must.Eq(t, []string{"web-a"}, got)
	got = ids(drain[*structs.Job](t, mustIter(s.JobsByIDPrefix(nil, AllNamespaces, "web"))))
	must.SliceContainsAll(t, []string{"web-a", "web-b"}, got)
	got = ids(drain[*structs.Job](t, mustIter(s.JobsByIDPrefix(nil, "default", ""))))
	must.SliceContainsAll(t, []string{"web-a", "api"}, got)
	must.Len(t, 3, drain[*structs.Job](t, mustIter(s.Jobs(nil))))
}

// Job status follows upstream Nomad: running while anything is live
// (unknown included), pending while only evaluations are outstanding, dead
// once everything has finished or the job is stopped.
func TestJobStatus(t *testing.T) {
	pendingEval := func(job *structs.Job) *structs.Evaluation {
		e := mock.Eval()
		e.JobID, e.Namespace = job.ID, job.Namespace
		return e
	}
	cases := []struct {
		name   string
		newJob func() *structs.Job // mock.Job when nil
		setup  func(t *testing.T, s *StateStore, job *structs.Job)
		want   string
	}{
		{
			name:  "new job",
			setup: func(t *testing.T, s *StateStore, job *structs.Job) { must.NoError(t, s.UpsertJob(10, 0, job)) },
			want:  structs.JobStatusPending,
		},
		{
			name: "stopped job with nothing",
			setup: func(t *testing.T, s *StateStore, job *structs.Job) {
				job.Stop = true
				must.NoError(t, s.UpsertJob(10, 0, job))
			},
			want: structs.JobStatusDead,
		},
		{
			name: "pending eval, nothing placed",
			setup: func(t *testing.T, s *StateStore, job *structs.Job) {
				must.NoError(t, s.UpsertJob(10, 0, job))
				must.NoError(t, s.UpsertEvals(11, []*structs.Evaluation{pendingEval(job)}))
			},
			want: structs.JobStatusPending,
		},
		{
			name: "live alloc",
			setup: func(t *testing.T, s *StateStore, job *structs.Job) {
				jobWithAllocs(t, s, 10, job, "n1", 1)
			},
			want: structs.JobStatusRunning,
		},
		{
			name: "unknown alloc is live",
			setup: func(t *testing.T, s *StateStore, job *structs.Job) {
				allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
				must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)}))
				u := allocs[0].Copy()
				u.ClientStatus = structs.AllocClientStatusUnknown
				must.NoError(t, s.UpsertAllocs(13, []*structs.Allocation{u}))
			},
			want: structs.JobStatusRunning,
		},
		{
			name: "all allocs and evals finished",
			setup: func(t *testing.T, s *StateStore, job *structs.Job) {
				allocs := jobWithAllocs(t, s, 10, job, "n1", 2)
				e := pendingEval(job)
				e.Status = structs.EvalStatusComplete
				must.NoError(t, s.UpsertEvals(12, []*structs.Evaluation{e}))
				must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{
					clientUpdate(allocs[0].ID, structs.AllocClientStatusComplete),
					clientUpdate(allocs[1].ID, structs.AllocClientStatusFailed),
				}))
			},
			want: structs.JobStatusDead,
		},
		{
			name: "stopped allocs are not live even before the client confirms",
			setup: func(t *testing.T, s *StateStore, job *structs.Job) {
				allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
				must.NoError(t, s.UpsertPlanResults(12, &structs.ApplyPlanResultsRequest{
					AllocsStopped: []*structs.Allocation{{ID: allocs[0].ID, DesiredDescription: structs.AllocJobStopped}},
				}))
			},
			want: structs.JobStatusDead,
		},
		{
			name: "system job runs until stopped",
			setup: func(t *testing.T, s *StateStore, job *structs.Job) {
				job.Type = structs.JobTypeSystem
				must.NoError(t, s.UpsertJob(10, 0, job))
			},
			want: structs.JobStatusRunning,
		},
		{
			name:   "batch job dead when all allocs complete and no eval pending",
			newJob: mock.BatchJob,
			setup: func(t *testing.T, s *StateStore, job *structs.Job) {
				allocs := jobWithAllocs(t, s, 10, job, "n1", 1)
				must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusComplete)}))
			},
			want: structs.JobStatusDead,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testStateStore(t)
			job := mock.Job()
			if tc.newJob != nil {
				job = tc.newJob()
			}
			tc.setup(t, s, job)
			must.Eq(t, tc.want, jobStatus(t, s, job))
		})
	}
}

// A status change is a job change: blocking queries on the job must wake,
// and ModifyIndex moves while JobModifyIndex (the spec) does not.
func TestJobByID_WatchFiresOnStatusChange(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	must.NoError(t, s.UpsertJob(10, 0, job))

	ws := memdb.NewWatchSet()
	_, err := s.JobByID(ws, job.Namespace, job.ID)
	must.NoError(t, err)
	must.NoError(t, s.UpsertJob(11, 0, mock.Job()))
	watchNotFired(t, ws)

	a := mock.Alloc()
	a.Job, a.JobID = job, job.ID
	must.NoError(t, s.UpsertAllocs(12, []*structs.Allocation{a}))
	watchFired(t, ws)

	out, _ := s.JobByID(nil, job.Namespace, job.ID)
	must.Eq(t, structs.JobStatusRunning, out.Status)
	must.Eq(t, 12, out.ModifyIndex)
	must.Eq(t, 10, out.JobModifyIndex)
	idx, _ := s.Index(TableJobs)
	must.Eq(t, 12, idx)
}

// PeriodicJobs holds the jobs the leader launches on a schedule alone, and
// its watch fires when one becomes, changes or stops being one, never
// for a registration of any other job (the periodic dispatcher waits on
// it: it walked every job on every registration before).
func TestPeriodicJobs_WatchesThePeriodicOnly(t *testing.T) {
	s := testStateStore(t)
	periodic := mock.Job()
	periodic.Type = structs.JobTypeBatch
	periodic.Periodic = &structs.PeriodicConfig{Enabled: true, Specs: []string{"*/5 * * * *"}}
	must.NoError(t, s.UpsertJob(100, 0, periodic))
	must.NoError(t, s.UpsertJob(101, 0, mock.Job()))

	ids := func(ws memdb.WatchSet) []string {
		iter, err := s.PeriodicJobs(ws)
		must.NoError(t, err)
		var out []string
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			out = append(out, raw.(*structs.Job).ID)
		}
		return out
	}
	fired := func(ws memdb.WatchSet) bool {
		for ch := range ws {
			select {
			case <-ch:
				return true
			default:
			}
		}
		return false
	}

	ws := memdb.NewWatchSet()
	must.Eq(t, []string{periodic.ID}, ids(ws))
	must.NoError(t, s.UpsertJob(102, 0, mock.Job()))
	must.False(t, fired(ws), must.Sprint("another job's registration"))

	stopped := periodic.Copy()
	stopped.Stop = true
	must.NoError(t, s.UpsertJob(103, 0, stopped))
	must.True(t, fired(ws), must.Sprint("the periodic job stopped"))
	ws = memdb.NewWatchSet()
	must.SliceEmpty(t, ids(ws))

	must.NoError(t, s.UpsertJob(104, 0, periodic.Copy()))
	must.True(t, fired(ws), must.Sprint("started again"))
	must.Eq(t, []string{periodic.ID}, ids(nil))
}
