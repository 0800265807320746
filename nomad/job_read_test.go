package nomad

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Every read of one job's data checks read-job in the request's
// namespace: a token that reads another namespace only is refused, one
// that reads the job's is answered. A read that skipped the check would
// show a tenant's jobs to every token.
func TestJob_ReadsCheckReadJob(t *testing.T) {
	s, mgmt := aclServer(t)
	other := clientToken(t, s, mgmt, `namespace "fleet" { policy = "read" }`)
	reader := clientToken(t, s, mgmt, `namespace "default" { policy = "read" }`)
	job := mock.Job()
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job,
		WriteRequest: structs.WriteRequest{AuthToken: mgmt.SecretID}}, &structs.JobRegisterResponse{}))

	q := func(secret string) structs.QueryOptions {
		return structs.QueryOptions{Namespace: job.Namespace, AuthToken: secret}
	}
	reads := map[string]func(secret string) error{
		"Job.GetJob": func(secret string) error {
			return s.RPC("Job.GetJob", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: q(secret)}, &structs.SingleJobResponse{})
		},
		"Job.Allocations": func(secret string) error {
			return s.RPC("Job.Allocations", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: q(secret)}, &structs.JobAllocationsResponse{})
		},
		"Job.Evaluations": func(secret string) error {
			return s.RPC("Job.Evaluations", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: q(secret)}, &structs.JobEvaluationsResponse{})
		},
		"Job.Summary": func(secret string) error {
			return s.RPC("Job.Summary", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: q(secret)}, &structs.JobSummaryResponse{})
		},
		"Job.ScaleStatus": func(secret string) error {
			return s.RPC("Job.ScaleStatus", &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: q(secret)}, &structs.JobScaleStatusResponse{})
		},
		"Job.GetJobVersions": func(secret string) error {
			return s.RPC("Job.GetJobVersions", &structs.JobVersionsRequest{JobID: job.ID, QueryOptions: q(secret)}, &structs.JobVersionsResponse{})
		},
		"Job.Deployments": func(secret string) error {
			return s.RPC("Job.Deployments", &structs.JobDeploymentsRequest{JobID: job.ID, QueryOptions: q(secret)}, &structs.JobDeploymentsResponse{})
		},
		"Job.LatestDeployment": func(secret string) error {
			return s.RPC("Job.LatestDeployment", &structs.JobDeploymentsRequest{JobID: job.ID, QueryOptions: q(secret)}, &structs.SingleDeploymentResponse{})
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			must.ErrorIs(t, read(other.SecretID), structs.ErrPermissionDenied)
			must.NoError(t, read(reader.SecretID))
		})
	}
}
