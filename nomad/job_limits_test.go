package nomad

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// manyGroups is a job of groups groups of count count each.
func manyGroups(groups, count int) *structs.Job {
	job := mock.Job()
	tmpl := job.TaskGroups[0]
	job.TaskGroups = nil
	for i := range groups {
		tg := tmpl.Copy()
		tg.Name = fmt.Sprintf("g%d", i)
		tg.Count = count
		job.TaskGroups = append(job.TaskGroups, tg)
	}
	return job
}

// A job whose groups each stay under the per-group cap but sum past
// job_max_count (upstream's default, 50,000) is refused by Job.Register
// and Job.Plan naming the key, before anything is stored: 3,000 groups of
// 10,000 once went through and grew the server to 1.6 GB (issue 26).
func TestJob_Register_RefusesJobPastJobMaxCount(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	job := manyGroups(6, structs.MaxGroupCount)

	var resp structs.JobRegisterResponse
	err := s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "60000 instances")
	must.ErrorContains(t, err, "job_max_count")
	stored, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Nil(t, stored)
	evals, err := s.State().Evals(nil)
	must.NoError(t, err)
	must.Nil(t, evals.Next())

	var plan structs.JobPlanResponse
	err = s.RPC("Job.Plan", &structs.JobPlanRequest{Job: job}, &plan)
	must.ErrorContains(t, err, "job_max_count")

	// At the cap it is accepted.
	job = manyGroups(5, structs.MaxGroupCount)
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp))
}

// job_max_count is the server's: raised, it lets a bigger job through;
// and a scale that would take the job past it is refused naming the
// group, the job keeping its count.
func TestJob_Scale_RefusesPastJobMaxCount(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0; c.JobMaxCount = 100 })
	job := manyGroups(2, 50)
	job.TaskGroups[1].Name = "web"
	var resp structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp))

	count := int64(51)
	err := s.RPC("Job.Scale", &structs.JobScaleRequest{JobID: job.ID, Count: &count,
		Target:       map[string]string{structs.ScalingTargetGroup: "web"},
		WriteRequest: structs.WriteRequest{Namespace: job.Namespace}}, &resp)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, `scaling group "web" to 51`)
	must.ErrorContains(t, err, "job_max_count")
	cur, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, 50, cur.TaskGroups[1].Count)
}
