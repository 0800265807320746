package agent

import (
	"net/http"

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
