package agent

import (
	"net/http"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// nodeDrainBody is the body of PUT /v1/node/{id}/drain, as upstream's
// client sends it: a nil DrainSpec ends the drain.
type nodeDrainBody struct {
	NodeID    string
	DrainSpec *struct {
		Deadline         time.Duration
		IgnoreSystemJobs bool
	}
	MarkEligible bool
	Meta         map[string]string
}

// nodeDrain handles PUT|POST /v1/node/{id}/drain (nomad node drain).
func (s *HTTPServer) nodeDrain(w http.ResponseWriter, r *http.Request) (any, error) {
	var body nodeDrainBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	args := &structs.NodeUpdateDrainRequest{
		NodeID: r.PathValue("id"), MarkEligible: body.MarkEligible, Meta: body.Meta, WriteRequest: writeRequest(r),
	}
	if d := body.DrainSpec; d != nil {
		args.DrainStrategy = &structs.DrainStrategy{DrainSpec: structs.DrainSpec{
			Deadline: d.Deadline, IgnoreSystemJobs: d.IgnoreSystemJobs,
		}}
	}
	var reply structs.NodeDrainUpdateResponse
	if err := s.call(r, "Node.UpdateDrain", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}

// nodeEligibility handles PUT|POST /v1/node/{id}/eligibility with body
// {"Eligibility": "eligible"|"ineligible"}.
func (s *HTTPServer) nodeEligibility(w http.ResponseWriter, r *http.Request) (any, error) {
	var body struct {
		NodeID      string
		Eligibility string
	}
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	args := &structs.NodeUpdateEligibilityRequest{
		NodeID: r.PathValue("id"), Eligibility: body.Eligibility, WriteRequest: writeRequest(r),
	}
	var reply structs.NodeEligibilityUpdateResponse
	if err := s.call(r, "Node.UpdateEligibility", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}

// nodeEvaluate handles PUT|POST /v1/node/{id}/evaluate:
// the node's jobs are evaluated again.
func (s *HTTPServer) nodeEvaluate(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NodeEvaluateRequest{NodeID: r.PathValue("id"), WriteRequest: writeRequest(r)}
	var reply structs.NodeEvaluateResponse
	if err := s.call(r, "Node.Evaluate", args, &reply); err != nil {
		return nil, err
	}
	reply.EvalIDs = nonNil(reply.EvalIDs)
	setIndex(w, reply.Index)
	return reply, nil
}

// nodePurge handles PUT|POST /v1/node/{id}/purge (nomad node purge); it
// takes no body.
func (s *HTTPServer) nodePurge(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NodePurgeRequest{NodeID: r.PathValue("id"), WriteRequest: writeRequest(r)}
	var reply structs.NodePurgeResponse
	if err := s.call(r, "Node.Purge", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}
