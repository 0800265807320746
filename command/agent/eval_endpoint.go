package agent

import (
	"net/http"

	"github.com/hashicorp/go-bexpr"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// evalList handles GET /v1/evaluations.
func (s *HTTPServer) evalList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.EvalListRequest
	var reply structs.EvalListResponse
	c := readCall{Method: "Eval.List", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	sel, err := evalListSelectors(r)
	if err != nil {
		return nil, err
	}
	return listQuery(s, w, r, c, func() []*structs.Evaluation { return sel.keep(reply.Evaluations) }, evalOrder)
}

// evalGet handles GET /v1/evaluation/{id}.
func (s *HTTPServer) evalGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.EvalSpecificRequest{EvalID: r.PathValue("id")}
	var reply structs.SingleEvalResponse
	if err := s.query(w, r, readCall{Method: "Eval.GetEval", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Eval == nil {
		return nil, codedErrorf(http.StatusNotFound, "eval not found")
	}
	return reply.Eval, nil
}

// evalAllocations handles GET /v1/evaluation/{id}/allocations.
func (s *HTTPServer) evalAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.EvalSpecificRequest{EvalID: r.PathValue("id")}
	var reply structs.EvalAllocationsResponse
	c := readCall{Method: "Eval.Allocations", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	items, err := allocStubs(r, func() []*structs.AllocListStub { return reply.Allocations })
	if err != nil {
		return nil, err
	}
	return listQuery(s, w, r, c, items, allocOrder)
}

// evalDeleteBody is upstream's EvalDeleteRequest.
type evalDeleteBody struct {
	EvalIDs []string
	Filter  string
	api.WriteRequest
}

// evalDelete handles DELETE /v1/evaluations as upstream: by IDs, or by a
// filter over every evaluation the caller may read, with a management
// token, and only while the scheduler configuration pauses the eval broker
// (409 otherwise, deleting nothing). It answers how many were deleted.
func (s *HTTPServer) evalDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	var body evalDeleteBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	switch {
	case len(body.EvalIDs) == 0 && body.Filter == "":
		return nil, codedErrorf(http.StatusBadRequest, "evals must be deleted by either ID or filter")
	case len(body.EvalIDs) > 0 && body.Filter != "":
		return nil, codedErrorf(http.StatusBadRequest, "evals cannot be deleted by ID and filter")
	}
	var filter *bexpr.Evaluator
	if body.Filter != "" {
		ev, err := bexpr.CreateEvaluator(body.Filter)
		if err != nil {
			return nil, codedErrorf(http.StatusBadRequest, "failed to read filter expression: %v", err)
		}
		filter = ev
	}
	if err := s.authorize(r, (*acl.ACL).IsManagement, "a management token"); err != nil {
		return nil, err
	}
	args := structs.EvalDeleteUserRequest{EvalIDs: body.EvalIDs, WriteRequest: writeRequest(r)}
	if filter != nil {
		ids, err := s.evalsMatching(r, filter)
		if err != nil {
			return nil, err
		}
		args.EvalIDs = ids
	}
	var reply structs.EvalDeleteUserResponse
	if err := s.call(r, "Eval.Delete", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return api.EvalDeleteResponse{Count: reply.Count}, nil
}

// evalsMatching lists the IDs of the evaluations, in every namespace, that
// filter matches.
func (s *HTTPServer) evalsMatching(r *http.Request, filter *bexpr.Evaluator) ([]string, error) {
	args := structs.EvalListRequest{QueryOptions: structs.QueryOptions{Namespace: "*", Region: r.URL.Query().Get("region")}}
	var reply structs.EvalListResponse
	if err := s.call(r, "Eval.List", &args, &reply); err != nil {
		return nil, err
	}
	var ids []string
	for _, ev := range reply.Evaluations {
		ok, err := filter.Evaluate(ev)
		if err != nil {
			return nil, codedErrorf(http.StatusBadRequest, "failed to apply filter expression: %v", err)
		}
		if ok {
			ids = append(ids, ev.ID)
		}
	}
	return ids, nil
}
