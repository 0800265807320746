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

// A handoff call gives the endpoint the caller's own args: a write made
// this way lands as a copying call's does, args of the wrong type are an
// error rather than a panic, and the endpoint's errors come back the same.
func TestServer_RPCHandoff(t *testing.T) {
	s := testServer(t, nil)
	job := mock.Job()
	var reg structs.JobRegisterResponse
	must.NoError(t, s.rpcHandoff("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	must.Positive(t, reg.Index)
	stored, err := s.State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.NotNil(t, stored)

	var resp structs.SingleJobResponse
	err = s.rpcHandoff("Job.GetJob", &structs.JobListRequest{}, &resp)
	must.ErrorContains(t, err, "args are *structs.JobListRequest")

	bad := &structs.JobRegisterRequest{}
	errCopied := s.RPC("Job.Register", bad, &reg)
	errHanded := s.rpcHandoff("Job.Register", bad, &reg)
	must.Error(t, errHanded)
	must.EqError(t, errHanded, errCopied.Error())
}
