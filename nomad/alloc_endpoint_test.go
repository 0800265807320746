package nomad

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// waitJobAllocs follows a job's allocations with blocking queries until
// cond holds, and fails with the last list seen.
func waitJobAllocs(t *testing.T, s *Server, job *structs.Job, what string, cond func([]*structs.AllocListStub) bool) []*structs.AllocListStub {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var out structs.JobAllocationsResponse
	for {
		req := &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{
			Namespace: job.Namespace, MinQueryIndex: out.Index, MaxQueryTime: time.Second}}
		must.NoError(t, s.RPC("Job.Allocations", req, &out))
		if cond(out.Allocations) {
			return out.Allocations
		}
		if time.Now().After(deadline) {
			seen := ""
			for _, a := range out.Allocations {
				seen += fmt.Sprintf("[%s %s/%s] ", a.ID[:8], a.DesiredStatus, a.ClientStatus)
			}
			t.Fatalf("%s: not reached; last saw %s", what, seen)
		}
	}
}

// nomad alloc stop: the allocation is stopped and a replacement placed, so
// the group keeps its count.
func TestAlloc_Stop_StopsAndReplaces(t *testing.T) {
	s := testServer(t, nil)
	registerNode(t, s)
	job := mock.Job()
	job.TaskGroups[0].Count = 2
	var reg structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	allocs := waitJobAllocs(t, s, job, "two placed", func(a []*structs.AllocListStub) bool { return len(a) == 2 })

	var resp structs.AllocStopResponse
	must.NoError(t, s.RPC("Alloc.Stop", &structs.AllocStopRequest{AllocID: allocs[0].ID}, &resp))
	must.NotEq(t, "", resp.EvalID)
	ev, err := s.State().EvalByID(nil, resp.EvalID)
	must.NoError(t, err)
	must.Eq(t, structs.EvalTriggerAllocStop, ev.TriggeredBy)

	waitJobAllocs(t, s, job, "stopped one replaced", func(list []*structs.AllocListStub) bool {
		run, stopped := 0, false
		for _, a := range list {
			if a.DesiredStatus == structs.AllocDesiredStatusRun {
				run++
			}
			if a.ID == allocs[0].ID && a.DesiredStatus == structs.AllocDesiredStatusStop {
				stopped = true
			}
		}
		return len(list) == 3 && run == 2 && stopped
	})

	// Stopping it again has nothing to do: said, not written to raft.
	var again structs.AllocStopResponse
	err = s.RPC("Alloc.Stop", &structs.AllocStopRequest{AllocID: allocs[0].ID}, &again)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "already finished")

	var missing structs.AllocStopResponse
	err = s.RPC("Alloc.Stop", &structs.AllocStopRequest{AllocID: "no-such-alloc"}, &missing)
	must.ErrorIs(t, err, structs.ErrUnknownAlloc)
}

// An autoscaler reads /v1/job/:id/scale: an allocation on a disconnected
// node counts as placed (it may be running) but not as running, and is
// counted in Unknown, so the autoscaler neither double-provisions nor
// believes it has capacity it cannot reach. Finished ones count nowhere.
func TestScaleStatus_UnknownIsPlacedNotRunning(t *testing.T) {
	job := mock.Job()
	job.TaskGroups[0].Count = 5
	status := func(client, desired string) *structs.Allocation {
		a := mock.Alloc()
		a.Job, a.JobID, a.TaskGroup = job, job.ID, "web"
		a.ClientStatus, a.DesiredStatus = client, desired
		return a
	}
	allocs := []*structs.Allocation{
		status(structs.AllocClientStatusRunning, structs.AllocDesiredStatusRun),
		status(structs.AllocClientStatusRunning, structs.AllocDesiredStatusRun),
		status(structs.AllocClientStatusUnknown, structs.AllocDesiredStatusRun),
		status(structs.AllocClientStatusPending, structs.AllocDesiredStatusRun),
		status(structs.AllocClientStatusLost, structs.AllocDesiredStatusStop),
		status(structs.AllocClientStatusRunning, structs.AllocDesiredStatusStop),
		status(structs.AllocClientStatusComplete, structs.AllocDesiredStatusRun),
	}
	got := scaleStatus(job, allocs)
	must.Eq(t, &structs.TaskGroupScaleStatus{Desired: 5, Placed: 4, Running: 2, Unknown: 1, Events: []*structs.ScalingEvent{},
		Unstable: "1 allocation unknown (node disconnected): Running undercounts the group until they reconnect or are lost"},
		got.TaskGroups["web"])
	must.Eq(t, job.ID, got.JobID)
	must.False(t, got.JobStopped)
}

// Healthy and Unhealthy count the deployment health clients reported; an
// unknown allocation that reported healthy before its node went away still
// counts as healthy, so an autoscaler does not see capacity vanish.
func TestScaleStatus_DeploymentHealth(t *testing.T) {
	job := mock.Job()
	with := func(client string, healthy *bool) *structs.Allocation {
		a := mock.Alloc()
		a.Job, a.JobID, a.TaskGroup, a.ClientStatus = job, job.ID, "web", client
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Healthy: healthy}
		return a
	}
	got := scaleStatus(job, []*structs.Allocation{
		with(structs.AllocClientStatusRunning, new(true)),
		with(structs.AllocClientStatusUnknown, new(true)),
		with(structs.AllocClientStatusRunning, new(false)),
		with(structs.AllocClientStatusPending, nil),
	}).TaskGroups["web"]
	must.Eq(t, 2, got.Healthy)
	must.Eq(t, 1, got.Unhealthy)
}
