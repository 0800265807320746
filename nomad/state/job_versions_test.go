package state

import (
	"testing"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// versionsOf lists the versions stored for job, newest first.
func versionsOf(t must.T, s *StateStore, job *structs.Job) []uint64 {
	t.Helper()
	all, err := s.JobVersionsByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	out := make([]uint64, len(all))
	for i, j := range all {
		out[i] = j.Version
	}
	return out
}

// bumped returns a copy of job with a changed spec, so upserting it makes
// a new version.
func bumped(job *structs.Job, n int) *structs.Job {
	c := job.Copy()
	c.TaskGroups[0].Count = n + 1
	return c
}

// Every spec change is kept as a version; a resubmission of the same spec
// is not a new one (job history would otherwise list duplicates).
func TestJobVersions_EverySpecChangeIsKept(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	must.NoError(t, s.UpsertJob(10, 0, job))
	must.NoError(t, s.UpsertJob(11, 0, bumped(job, 1)))
	must.NoError(t, s.UpsertJob(12, 0, bumped(job, 1)))
	must.Eq(t, []uint64{1, 0}, versionsOf(t, s, job))

	v0, err := s.JobByIDAndVersion(nil, job.Namespace, job.ID, 0)
	must.NoError(t, err)
	must.Eq(t, job.TaskGroups[0].Count, v0.TaskGroups[0].Count, must.Sprint("version 0 keeps its own spec"))
	idx, err := s.Index(TableJobVersion)
	must.NoError(t, err)
	must.Eq(t, 12, idx)
}

// The history is bounded: after many versions only the newest
// JobTrackedVersions remain, so a job updated every minute does not grow
// the state store without end.
func TestJobVersions_BoundedHistory(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := testStateStore(rt)
		job := mock.Job()
		must.NoError(rt, s.UpsertJob(10, 0, job))
		n := rapid.IntRange(0, 20).Draw(rt, "updates")
		for i := range n {
			must.NoError(rt, s.UpsertJob(uint64(11+i), 0, bumped(job, i)))
		}
		got := versionsOf(rt, s, job)
		must.Eq(rt, min(n+1, structs.JobTrackedVersions), len(got))
		must.Eq(rt, uint64(n), got[0], must.Sprint("the current version is always kept"))
	})
}

// The newest stable version survives the trim: it is what a revert after
// a run of bad updates goes back to.
func TestJobVersions_StableVersionSurvivesTrim(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	must.NoError(t, s.UpsertJob(10, 0, job))
	must.NoError(t, s.UpdateJobStability(11, job.Namespace, job.ID, 0, true))
	for i := range structs.JobTrackedVersions {
		must.NoError(t, s.UpsertJob(uint64(12+i), 0, bumped(job, i)))
	}
	got := versionsOf(t, s, job)
	must.Eq(t, structs.JobTrackedVersions, len(got))
	must.Eq(t, []uint64{6, 5, 4, 3, 2, 0}, got)
}

// Stability marks the version and, when it is the current one, the job,
// without making a new version.
func TestJobVersions_UpdateStability(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	must.NoError(t, s.UpsertJob(10, 0, job))
	must.NoError(t, s.UpsertJob(11, 0, bumped(job, 1)))

	must.NoError(t, s.UpdateJobStability(12, job.Namespace, job.ID, 1, true))
	cur, err := s.JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.True(t, cur.Stable)
	must.Eq(t, 1, cur.Version)
	must.Eq(t, 11, cur.JobModifyIndex, must.Sprint("stability is not a spec change"))

	must.NoError(t, s.UpdateJobStability(13, job.Namespace, job.ID, 0, true))
	v0, err := s.JobByIDAndVersion(nil, job.Namespace, job.ID, 0)
	must.NoError(t, err)
	must.True(t, v0.Stable)

	err = s.UpdateJobStability(14, job.Namespace, job.ID, 9, true)
	must.ErrorIs(t, err, structs.ErrUnknownJob)
}

// A purge removes the history with the job; a job of a similar name keeps
// its own.
func TestJobVersions_PurgeRemovesHistory(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	other := mock.Job()
	other.ID = job.ID + "-2"
	must.NoError(t, s.UpsertJob(10, 0, job))
	must.NoError(t, s.UpsertJob(11, 0, other))
	must.Eq(t, []uint64{0}, versionsOf(t, s, job), must.Sprint("the prefix scan must not mix jobs"))

	must.NoError(t, s.DeleteJob(12, job.Namespace, job.ID))
	must.SliceEmpty(t, versionsOf(t, s, job))
	must.Eq(t, []uint64{0}, versionsOf(t, s, other))
}

// Versions travel in snapshots, so a follower restored from one can still
// show history and revert.
func TestJobVersions_SnapshotRoundTrip(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	must.NoError(t, s.UpsertJob(10, 0, job))
	must.NoError(t, s.UpsertJob(11, 0, bumped(job, 1)))
	must.NoError(t, s.UpdateJobStability(12, job.Namespace, job.ID, 0, true))

	restored := persistAndRestore(t, s)
	must.Eq(t, []uint64{1, 0}, versionsOf(t, restored, job))
	v0, err := restored.JobByIDAndVersion(nil, job.Namespace, job.ID, 0)
	must.NoError(t, err)
	must.True(t, v0.Stable)
}

// Scaling events are kept newest first, the newest
// JobTrackedScalingEvents per group, and go with a purged job.
func TestScalingEvents_BoundedAndPurged(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	must.NoError(t, s.UpsertJob(10, 0, job))
	for i := range structs.JobTrackedScalingEvents + 5 {
		must.NoError(t, s.UpsertScalingEvent(uint64(11+i), &structs.ScalingEventRequest{
			Namespace: job.Namespace, JobID: job.ID, TaskGroup: "web",
			ScalingEvent: &structs.ScalingEvent{Time: uint64(i), Message: "tick"}}))
	}
	got, err := s.ScalingEventsByJob(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	events := got.ScalingEvents["web"]
	must.Len(t, structs.JobTrackedScalingEvents, events)
	must.Eq(t, uint64(structs.JobTrackedScalingEvents+4), events[0].Time, must.Sprint("newest first"))
	must.Eq(t, uint64(11+structs.JobTrackedScalingEvents+4), events[0].CreateIndex)

	must.NoError(t, s.DeleteJob(100, job.Namespace, job.ID))
	got, err = s.ScalingEventsByJob(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Nil(t, got)
}
