package testutil_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/snapshot"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// saveSnapshot takes server s's snapshot archive and reads it back,
// verified, as the restore endpoint does.
func saveSnapshot(t *testing.T, s *nomad.Server) (*snapshot.Archive, uint64) {
	t.Helper()
	var buf bytes.Buffer
	index, err := s.SnapshotSave(&buf)
	must.NoError(t, err)
	a, err := snapshot.Read(&buf, t.TempDir())
	must.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a, index
}

// jobOn reads a job from server s's own state.
func jobOn(t *testing.T, s *nomad.Server, job *structs.Job) *structs.Job {
	t.Helper()
	got, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	return got
}

// waitJobs polls every server until each has, or lacks, each job.
func waitJobs(t *testing.T, sc *testutil.Servers, has, lacks []*structs.Job) {
	t.Helper()
	for i, s := range sc.Servers {
		wait.Poll(t, 20*time.Second, fmt.Sprintf("server %d holds the restored jobs", i), func() (bool, string) {
			for _, j := range has {
				if jobOn(t, s, j) == nil {
					return false, "missing job " + j.ID
				}
			}
			for _, j := range lacks {
				if jobOn(t, s, j) != nil {
					return false, "still has job " + j.ID
				}
			}
			return true, ""
		})
	}
}

// waitScheduled polls until the job's evaluations have all left pending:
// the leader's broker, rebuilt after a restore, hands out work again.
func waitScheduled(t *testing.T, s *nomad.Server, job *structs.Job) {
	t.Helper()
	wait.Poll(t, 20*time.Second, "the job's evaluation is processed", func() (bool, string) {
		evals, err := s.State().EvalsByJob(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		if len(evals) == 0 {
			return false, "no evaluation yet"
		}
		for _, e := range evals {
			if e.Status == structs.EvalStatusPending {
				return false, "evaluation " + e.ID + " pending"
			}
		}
		return true, ""
	})
}

// A snapshot restored into the running cluster it came from rewinds every
// server to it: a job purged after the save is back, one registered after
// it is gone, a blocking query in flight on a follower answers with the
// restored state at once (its index went backwards), and the leader
// schedules again. This is what an operator's disaster recovery relies on.
func TestServers_SnapshotRestore_Rewinds(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3})
	leaderIdx := sc.WaitForLeader()
	leader := sc.Servers[leaderIdx]
	follower := sc.Servers[(leaderIdx+1)%3]

	kept := registerJob(t, leader)
	for i, s := range sc.Servers {
		waitForJob(t, s, kept, fmt.Sprintf("server %d has the job", i))
	}
	a, _ := saveSnapshot(t, leader)

	later := registerJob(t, leader)
	var dereg structs.JobDeregisterResponse
	must.NoError(t, leader.RPC("Job.Deregister", &structs.JobDeregisterRequest{JobID: kept.ID, Purge: true, WriteRequest: structs.WriteRequest{Namespace: kept.Namespace}}, &dereg))
	waitJobs(t, sc, []*structs.Job{later}, []*structs.Job{kept})

	// A query for the purged job, blocked past the purge's index.
	purged, err := follower.State().Index("jobs")
	must.NoError(t, err)
	type answer struct {
		resp structs.SingleJobResponse
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		var resp structs.SingleJobResponse
		err := follower.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: kept.ID, QueryOptions: structs.QueryOptions{
			Namespace: kept.Namespace, AllowStale: true, MinQueryIndex: purged, MaxQueryTime: 5 * time.Minute,
		}}, &resp)
		answered <- answer{resp, err}
	}()

	must.NoError(t, leader.SnapshotRestore(context.Background(), a))
	waitJobs(t, sc, []*structs.Job{kept}, []*structs.Job{later})

	select {
	case got := <-answered:
		must.NoError(t, got.err)
		must.NotNil(t, got.resp.Job, must.Sprint("the blocked query answers with the restored job"))
	case <-time.After(30 * time.Second):
		t.Fatal("the blocking query on the follower was not woken by the restore")
	}

	// The cluster works on from the restored state.
	after := registerJob(t, follower)
	waitJobs(t, sc, []*structs.Job{kept, after}, nil)
	waitScheduled(t, sc.Leader(), after)
}

// A snapshot of another cluster, further along its raft log than this one,
// restores here too: raft's index moves past both, and every server holds
// the other cluster's jobs.
func TestServers_SnapshotRestore_FromHigherIndex(t *testing.T) {
	other := testutil.StartServers(t, testutil.ServersConfig{N: 1})
	var jobs []*structs.Job
	for range 20 {
		jobs = append(jobs, registerJob(t, other.Leader()))
	}
	waitForJob(t, other.Servers[0], jobs[len(jobs)-1], "the other cluster has its jobs")
	a, index := saveSnapshot(t, other.Leader())

	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3})
	leader := sc.Leader()
	own := registerJob(t, leader)
	ownIndex, err := leader.State().LatestIndex()
	must.NoError(t, err)
	must.Greater(t, ownIndex, index, must.Sprint("the snapshot is ahead of this cluster"))

	must.NoError(t, leader.SnapshotRestore(context.Background(), a))
	waitJobs(t, sc, jobs, []*structs.Job{own})
	after := registerJob(t, sc.Servers[0])
	waitJobs(t, sc, []*structs.Job{after}, nil)
	waitScheduled(t, sc.Leader(), after)
}
