package state

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// deployedAllocs stores a job, a running deployment of it and n
// allocations placed by the plan that created the deployment.
func deployedAllocs(t *testing.T, s *StateStore, n int) (*structs.Deployment, []*structs.Allocation) {
	t.Helper()
	job := mock.Job()
	must.NoError(t, s.UpsertJob(10, 0, job))
	d := structs.NewDeployment(job, 50, time.Unix(10, 0))
	d.TaskGroups["web"] = &structs.DeploymentState{DesiredTotal: n, ProgressDeadline: time.Minute}
	var allocs []*structs.Allocation
	for i := range n {
		a := mock.Alloc()
		a.Job, a.JobID, a.Namespace, a.TaskGroup = job, job.ID, job.Namespace, "web"
		a.Name = structs.AllocName(job.ID, "web", uint(i))
		a.DeploymentID = d.ID
		allocs = append(allocs, a)
	}
	must.NoError(t, s.UpsertPlanResults(11, &structs.ApplyPlanResultsRequest{
		Job: job, AllocsUpdated: allocs, Deployment: d, UpdatedAt: 11,
	}))
	return d, allocs
}

func healthReport(id string, healthy bool, at time.Time) *structs.Allocation {
	u := clientUpdate(id, structs.AllocClientStatusRunning)
	u.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: &healthy, Timestamp: at}
	return u
}

// The deployment's counts are kept by the state store from the plans and
// the clients' reports, so the watcher and `deployment status` read the
// same numbers; a healthy allocation moves the progress deadline.
func TestDeployment_CountsPlacementsAndHealth(t *testing.T) {
	s := testStateStore(t)
	d, allocs := deployedAllocs(t, s, 3)
	got, err := s.DeploymentByID(nil, d.ID)
	must.NoError(t, err)
	must.Eq(t, 3, got.TaskGroups["web"].PlacedAllocs)
	must.Eq(t, uint64(11), got.CreateIndex)

	at := time.Unix(20, 0)
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{
		healthReport(allocs[0].ID, true, at), healthReport(allocs[1].ID, false, at),
	}))
	// A second report of the same health counts nothing more.
	must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{healthReport(allocs[0].ID, true, at)}))
	got, err = s.DeploymentByID(nil, d.ID)
	must.NoError(t, err)
	st := got.TaskGroups["web"]
	must.Eq(t, 1, st.HealthyAllocs)
	must.Eq(t, 1, st.UnhealthyAllocs)
	must.Eq(t, at.Add(time.Minute), st.RequireProgressBy)

	latest, err := s.LatestDeploymentByJobID(nil, d.Namespace, d.JobID)
	must.NoError(t, err)
	must.Eq(t, d.ID, latest.ID)
}

// An allocation that reported healthy and then went unknown keeps its
// health: the scheduler marks it unknown from a copy taken before the
// report, and that stale copy must not erase what the client said.
func TestDeployment_UnknownKeepsHealth(t *testing.T) {
	s := testStateStore(t)
	_, allocs := deployedAllocs(t, s, 1)
	stale := allocByID(t, s, allocs[0].ID).CopySkipJob()
	must.NoError(t, s.UpdateAllocsFromClient(12, []*structs.Allocation{healthReport(allocs[0].ID, true, time.Unix(20, 0))}))

	stale.ClientStatus = structs.AllocClientStatusUnknown
	stale.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, time.Unix(30, 0))
	must.NoError(t, s.UpsertPlanResults(13, &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{stale}, UpdatedAt: 13}))

	a := allocByID(t, s, allocs[0].ID)
	must.Eq(t, structs.AllocClientStatusUnknown, a.ClientStatus)
	must.True(t, a.DeploymentStatus.IsHealthy())
}

// A health report made by hand never carries a client status, so it cannot
// overwrite the unknown the scheduler set (upstream #12786).
func TestDeployment_ManualHealthKeepsUnknown(t *testing.T) {
	s := testStateStore(t)
	d, allocs := deployedAllocs(t, s, 1)
	markUnknown(t, s, 12, allocs[0].ID)
	must.NoError(t, s.UpdateDeploymentAllocHealth(13, &structs.ApplyDeploymentAllocHealthRequest{
		DeploymentAllocHealthRequest: structs.DeploymentAllocHealthRequest{
			DeploymentID: d.ID, HealthyAllocationIDs: []string{allocs[0].ID},
		},
		Timestamp: time.Unix(13, 0),
	}))
	a := allocByID(t, s, allocs[0].ID)
	must.Eq(t, structs.AllocClientStatusUnknown, a.ClientStatus)
	must.True(t, a.DeploymentStatus.IsHealthy())
	got, err := s.DeploymentByID(nil, d.ID)
	must.NoError(t, err)
	must.Eq(t, 1, got.TaskGroups["web"].HealthyAllocs)
}

// A successful deployment marks its job version stable in the same entry;
// a late verdict cannot revive a finished deployment.
func TestDeployment_StatusUpdateMarksStable(t *testing.T) {
	s := testStateStore(t)
	d, _ := deployedAllocs(t, s, 1)
	v := d.JobVersion
	must.NoError(t, s.UpdateDeploymentStatus(14, &structs.DeploymentStatusUpdateRequest{
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: d.ID, Status: structs.DeploymentStatusSuccessful,
			StatusDescription: structs.DeploymentStatusDescriptionSuccessful},
		StableVersion: &v,
	}))
	job, err := s.JobByID(nil, d.Namespace, d.JobID)
	must.NoError(t, err)
	must.True(t, job.Stable)
	must.NoError(t, s.UpdateDeploymentStatus(15, &structs.DeploymentStatusUpdateRequest{
		DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: d.ID, Status: structs.DeploymentStatusFailed},
	}))
	got, err := s.DeploymentByID(nil, d.ID)
	must.NoError(t, err)
	must.Eq(t, structs.DeploymentStatusSuccessful, got.Status)
}

// A purged job takes its deployments with it: nothing else would ever
// remove them.
func TestDeployment_PurgeDeletesDeployments(t *testing.T) {
	s := testStateStore(t)
	d, _ := deployedAllocs(t, s, 1)
	must.NoError(t, s.DeleteJob(20, d.Namespace, d.JobID))
	got, err := s.DeploymentByID(nil, d.ID)
	must.NoError(t, err)
	must.Nil(t, got)
}

// A resumed deployment gets its progress deadline afresh from the resume:
// a pause longer than the deadline must not fail it the moment it resumes.
func TestDeployment_ResumeRestartsProgressDeadline(t *testing.T) {
	s := testStateStore(t)
	d, _ := deployedAllocs(t, s, 1)
	set := func(index uint64, status string, at time.Time) {
		must.NoError(t, s.UpdateDeploymentStatus(index, &structs.DeploymentStatusUpdateRequest{
			DeploymentUpdate: &structs.DeploymentStatusUpdate{DeploymentID: d.ID, Status: status},
			UpdatedAt:        at.UnixNano(),
		}))
	}
	set(12, structs.DeploymentStatusPaused, time.Unix(100, 0))
	resumed := time.Unix(10_000, 0).UTC()
	set(13, structs.DeploymentStatusRunning, resumed)
	got, err := s.DeploymentByID(nil, d.ID)
	must.NoError(t, err)
	must.Eq(t, resumed.Add(time.Minute), got.TaskGroups["web"].RequireProgressBy)
}
