package nomad

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The HTTP API's reads share the endpoint's reply instead of copying it
// through msgpack: what they return must be what a copying call returns,
// a reply of the wrong type is an error rather than a panic, and errors
// come back the same way.
func TestServer_RPCReadOnly(t *testing.T) {
	s := testServer(t, nil)
	job := mock.Job()
	var reg structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))

	get := &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{Namespace: job.Namespace}}
	var copied, shared structs.SingleJobResponse
	must.NoError(t, s.RPC("Job.GetJob", get, &copied))
	must.NoError(t, s.RPCReadOnly("Job.GetJob", get, &shared))
	must.NotNil(t, shared.Job)
	must.Eq(t, copied.Job.ID, shared.Job.ID)
	must.Eq(t, copied.Job.ModifyIndex, shared.Job.ModifyIndex)
	must.Eq(t, copied.Index, shared.Index)

	var list structs.JobListResponse
	must.NoError(t, s.RPCReadOnly("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{Namespace: job.Namespace}}, &list))
	must.SliceLen(t, 1, list.Jobs)

	var wrong structs.JobListResponse
	err := s.RPCReadOnly("Job.GetJob", get, &wrong)
	must.ErrorContains(t, err, "reply is *structs.JobListResponse")

	missing := &structs.JobSpecificRequest{JobID: job.ID, QueryOptions: structs.QueryOptions{Namespace: "nowhere"}}
	errCopied := s.RPC("Job.GetJob", missing, &copied)
	errShared := s.RPCReadOnly("Job.GetJob", missing, &shared)
	must.Error(t, errShared)
	must.EqError(t, errShared, errCopied.Error())
}
