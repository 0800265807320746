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

// evalDeleteRefused is why DELETE /v1/evaluations is refused: upstream
// deletes evaluations only while the eval broker is paused (its scheduler
// configuration's PauseEvalBroker), and this version has no way to pause
// it; the garbage collector removes finished evaluations.
const evalDeleteRefused = "eval broker is enabled; eval broker must be paused to delete evals " +
	"(this version cannot pause it: there is no scheduler configuration; the garbage collector removes finished evaluations)"

// evalDelete handles DELETE /v1/evaluations as upstream does with its
// broker running: the body is checked (IDs or a filter, not both; a filter
// that parses), the caller must hold a management token, and the request is
// then refused with evalDeleteRefused (409), deleting nothing.
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
	if body.Filter != "" {
		if _, err := bexpr.CreateEvaluator(body.Filter); err != nil {
			return nil, codedErrorf(http.StatusBadRequest, "failed to read filter expression: %v", err)
		}
	}
	if err := s.authorize(r, (*acl.ACL).IsManagement, "a management token"); err != nil {
		return nil, err
	}
	return nil, codedErrorf(http.StatusConflict, "%s", evalDeleteRefused)
}
