package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// jobLifecycleRoutes adds the job history, revert, stability, scale and
// plan endpoints.
func (s *HTTPServer) jobLifecycleRoutes(handle func(pattern string, fn handlerFunc)) {
	handle("GET /v1/job/{id}/versions", s.jobVersions)
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		handle(m+" /v1/job/{id}/revert", s.jobRevert)
		handle(m+" /v1/job/{id}/stable", s.jobStable)
		handle(m+" /v1/job/{id}/scale", s.jobScale)
		handle(m+" /v1/job/{id}/plan", s.jobPlan)
	}
}

// jobVersionsReply is the body of GET /v1/job/{id}/versions.
type jobVersionsReply struct {
	Versions []*structs.Job
	Diffs    []*structs.JobDiff
}

// jobVersions handles GET /v1/job/{id}/versions (?diffs=true adds the
// change each version made).
func (s *HTTPServer) jobVersions(w http.ResponseWriter, r *http.Request) (any, error) {
	diffs, err := boolParam(r, "diffs")
	if err != nil {
		return nil, err
	}
	args := structs.JobVersionsRequest{JobID: r.PathValue("id"), Diffs: diffs}
	var reply structs.JobVersionsResponse
	if err := s.query(w, r, readCall{Method: "Job.GetJobVersions", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if len(reply.Versions) == 0 {
		return nil, codedErrorf(http.StatusNotFound, "job versions not found")
	}
	return jobVersionsReply{Versions: reply.Versions, Diffs: reply.Diffs}, nil
}

// lifecycleWrite is what the write handlers below share: the body names
// the job of the path, and the namespace comes from the body or the query.
func (s *HTTPServer) lifecycleWrite(r *http.Request, bodyJobID string, body api.WriteRequest) (structs.WriteRequest, error) {
	if id := r.PathValue("id"); bodyJobID != "" && bodyJobID != id {
		return structs.WriteRequest{}, codedErrorf(http.StatusBadRequest, "Job ID does not match")
	}
	wr := writeRequest(r)
	wr.Namespace = firstNonEmpty(body.Namespace, wr.Namespace)
	wr.Region = firstNonEmpty(body.Region, wr.Region)
	return wr, nil
}

// jobRevert handles PUT|POST /v1/job/{id}/revert.
func (s *HTTPServer) jobRevert(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.JobRevertRequest
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	wr, err := s.lifecycleWrite(r, body.JobID, body.WriteRequest)
	if err != nil {
		return nil, err
	}
	args := &structs.JobRevertRequest{JobID: r.PathValue("id"), JobVersion: body.JobVersion,
		EnforcePriorVersion: body.EnforcePriorVersion, WriteRequest: wr}
	var reply structs.JobRegisterResponse
	if err := s.call(r, "Job.Revert", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}

// jobStable handles PUT|POST /v1/job/{id}/stable.
func (s *HTTPServer) jobStable(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.JobStabilityRequest
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	wr, err := s.lifecycleWrite(r, body.JobID, body.WriteRequest)
	if err != nil {
		return nil, err
	}
	args := &structs.JobStabilityRequest{JobID: r.PathValue("id"), JobVersion: body.JobVersion, Stable: body.Stable, WriteRequest: wr}
	var reply structs.JobStabilityResponse
	if err := s.call(r, "Job.Stable", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}

// jobScale handles PUT|POST /v1/job/{id}/scale.
func (s *HTTPServer) jobScale(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.ScalingRequest
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	wr, err := s.lifecycleWrite(r, body.Target["Job"], body.WriteRequest)
	if err != nil {
		return nil, err
	}
	args := &structs.JobScaleRequest{JobID: r.PathValue("id"), Target: body.Target, Count: body.Count,
		Message: body.Message, Error: body.Error, Meta: body.Meta, PolicyOverride: body.PolicyOverride, JobModifyIndex: body.JobModifyIndex, WriteRequest: wr}
	var reply structs.JobRegisterResponse
	if err := s.call(r, "Job.Scale", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}

// jobPlan handles PUT|POST /v1/job/{id}/plan.
func (s *HTTPServer) jobPlan(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.JobPlanRequest
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.Job == nil {
		return nil, codedErrorf(http.StatusBadRequest, "Job must be specified")
	}
	if id := r.PathValue("id"); body.Job.ID == nil || *body.Job.ID != id {
		return nil, codedErrorf(http.StatusBadRequest, "Job ID does not match")
	}
	job, err := s.structJob(r, body.Job, body.WriteRequest)
	if err != nil {
		return nil, err
	}
	args := &structs.JobPlanRequest{Job: job, Diff: body.Diff, PolicyOverride: body.PolicyOverride,
		WriteRequest: structs.WriteRequest{Region: job.Region, Namespace: job.Namespace}}
	var reply structs.JobPlanResponse
	if err := s.call(r, "Job.Plan", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}
