package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// deploymentRoutes adds the deployment endpoints and the job's views of
// its deployments.
func (s *HTTPServer) deploymentRoutes(handle func(pattern string, fn handlerFunc)) {
	handle("GET /v1/deployments", s.deploymentList)
	handle("GET /v1/deployment/{id}", s.deploymentGet)
	handle("GET /v1/deployment/allocations/{id}", s.deploymentAllocations)
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		handle(m+" /v1/deployment/promote/{id}", s.deploymentPromote)
		handle(m+" /v1/deployment/fail/{id}", s.deploymentFail)
		handle(m+" /v1/deployment/pause/{id}", s.deploymentPause)
		handle(m+" /v1/deployment/allocation-health/{id}", s.deploymentAllocHealth)
	}
	handle("GET /v1/job/{id}/deployments", s.jobDeployments)
	handle("GET /v1/job/{id}/deployment", s.jobLatestDeployment)
}

// deploymentList handles GET /v1/deployments.
func (s *HTTPServer) deploymentList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.DeploymentListRequest
	var reply structs.DeploymentListResponse
	c := readCall{Method: "Deployment.List", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.Deployment { return reply.Deployments }, deploymentOrder)
}

// deploymentGet handles GET /v1/deployment/{id}.
func (s *HTTPServer) deploymentGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.DeploymentSpecificRequest{DeploymentID: r.PathValue("id")}
	var reply structs.SingleDeploymentResponse
	if err := s.query(w, r, readCall{Method: "Deployment.GetDeployment", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Deployment == nil {
		return nil, codedErrorf(http.StatusNotFound, "deployment not found")
	}
	return reply.Deployment, nil
}

// deploymentAllocations handles GET /v1/deployment/allocations/{id}.
func (s *HTTPServer) deploymentAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.DeploymentSpecificRequest{DeploymentID: r.PathValue("id")}
	var reply structs.AllocListResponse
	c := readCall{Method: "Deployment.Allocations", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.AllocListStub { return reply.Allocations }, allocOrder)
}

// deploymentWrite checks a body's deployment ID against the path's.
func deploymentWrite(r *http.Request, bodyID string, body api.WriteRequest) (string, structs.WriteRequest, error) {
	id := r.PathValue("id")
	if bodyID != "" && bodyID != id {
		return "", structs.WriteRequest{}, codedErrorf(http.StatusBadRequest, "Deployment ID does not match")
	}
	wr := writeRequest(r)
	wr.Namespace = firstNonEmpty(body.Namespace, wr.Namespace)
	wr.Region = firstNonEmpty(body.Region, wr.Region)
	return id, wr, nil
}

func (s *HTTPServer) deploymentCall(w http.ResponseWriter, r *http.Request, method string, args any) (any, error) {
	var reply structs.DeploymentUpdateResponse
	if err := s.call(r, method, args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return api.DeploymentUpdateResponse{
		EvalID: reply.EvalID, EvalCreateIndex: reply.EvalCreateIndex,
		DeploymentModifyIndex: reply.DeploymentModifyIndex, RevertedJobVersion: reply.RevertedJobVersion,
	}, nil
}

// deploymentPromote handles PUT|POST /v1/deployment/promote/{id}.
func (s *HTTPServer) deploymentPromote(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.DeploymentPromoteRequest
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	id, wr, err := deploymentWrite(r, body.DeploymentID, body.WriteRequest)
	if err != nil {
		return nil, err
	}
	return s.deploymentCall(w, r, "Deployment.Promote", &structs.DeploymentPromoteRequest{
		DeploymentID: id, All: body.All, Groups: body.Groups, WriteRequest: wr,
	})
}

// deploymentFail handles PUT|POST /v1/deployment/fail/{id}.
func (s *HTTPServer) deploymentFail(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.DeploymentFailRequest
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	id, wr, err := deploymentWrite(r, body.DeploymentID, body.WriteRequest)
	if err != nil {
		return nil, err
	}
	return s.deploymentCall(w, r, "Deployment.Fail", &structs.DeploymentFailRequest{DeploymentID: id, WriteRequest: wr})
}

// deploymentPause handles PUT|POST /v1/deployment/pause/{id}.
func (s *HTTPServer) deploymentPause(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.DeploymentPauseRequest
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	id, wr, err := deploymentWrite(r, body.DeploymentID, body.WriteRequest)
	if err != nil {
		return nil, err
	}
	return s.deploymentCall(w, r, "Deployment.Pause", &structs.DeploymentPauseRequest{DeploymentID: id, Pause: body.Pause, WriteRequest: wr})
}

// deploymentAllocHealth handles PUT|POST /v1/deployment/allocation-health/{id}.
func (s *HTTPServer) deploymentAllocHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	var body api.DeploymentAllocHealthRequest
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	id, wr, err := deploymentWrite(r, body.DeploymentID, body.WriteRequest)
	if err != nil {
		return nil, err
	}
	return s.deploymentCall(w, r, "Deployment.SetAllocHealth", &structs.DeploymentAllocHealthRequest{
		DeploymentID: id, HealthyAllocationIDs: body.HealthyAllocationIDs,
		UnhealthyAllocationIDs: body.UnhealthyAllocationIDs, WriteRequest: wr,
	})
}

// jobDeployments handles GET /v1/job/{id}/deployments.
func (s *HTTPServer) jobDeployments(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobDeploymentsRequest{JobID: r.PathValue("id")}
	var reply structs.JobDeploymentsResponse
	c := readCall{Method: "Job.Deployments", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.Deployment { return reply.Deployments }, deploymentOrder)
}

// jobLatestDeployment handles GET /v1/job/{id}/deployment: null when the
// job never deployed, as upstream.
func (s *HTTPServer) jobLatestDeployment(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.JobDeploymentsRequest{JobID: r.PathValue("id")}
	var reply structs.SingleDeploymentResponse
	if err := s.query(w, r, readCall{Method: "Job.LatestDeployment", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	return reply.Deployment, nil
}
