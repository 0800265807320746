package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// jobDispatchRoutes adds the periodic force and dispatch endpoints.
func (s *HTTPServer) jobDispatchRoutes(handle func(pattern string, fn handlerFunc)) {
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		handle(m+" /v1/job/{id}/periodic/force", s.jobPeriodicForce)
		handle(m+" /v1/job/{id}/dispatch", s.jobDispatch)
	}
}

// jobPeriodicForce handles PUT|POST /v1/job/{id}/periodic/force. The
// request has no body (upstream's client sends none).
func (s *HTTPServer) jobPeriodicForce(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.PeriodicForceRequest{JobID: r.PathValue("id"), WriteRequest: writeRequest(r)}
	var reply structs.PeriodicForceResponse
	if err := s.call(r, "Job.PeriodicForce", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}

// jobDispatchBody is the body of PUT /v1/job/{id}/dispatch: upstream's
// request. IdPrefixTemplate is refused by name when set (the strict
// decode), as it is not implemented.
type jobDispatchBody struct {
	api.JobDispatchRequest
	SecretID string
}

// jobDispatch handles PUT|POST /v1/job/{id}/dispatch.
func (s *HTTPServer) jobDispatch(w http.ResponseWriter, r *http.Request) (any, error) {
	var body jobDispatchBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	wr, err := s.lifecycleWrite(r, body.JobID, body.WriteRequest)
	if err != nil {
		return nil, err
	}
	args := &structs.JobDispatchRequest{JobID: r.PathValue("id"), Payload: body.Payload, Meta: body.Meta, Priority: body.Priority, WriteRequest: wr}
	var reply structs.JobDispatchResponse
	if err := s.call(r, "Job.Dispatch", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}
