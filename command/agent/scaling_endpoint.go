package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// scalingRoutes registers the scaling policy reads an autoscaler polls.
func (s *HTTPServer) scalingRoutes(handle func(pattern string, fn handlerFunc)) {
	handle("GET /v1/scaling/policies", s.scalingPolicyList)
	handle("GET /v1/scaling/policy/{id}", s.scalingPolicyGet)
}

// scalingPolicyList handles GET /v1/scaling/policies (?job=, ?type=).
func (s *HTTPServer) scalingPolicyList(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	args := &structs.ScalingPolicyListRequest{Job: q.Get("job"), Type: q.Get("type")}
	var reply structs.ScalingPolicyListResponse
	c := readCall{"Scaling.ListPolicies", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.ScalingPolicyListStub { return reply.Policies },
		byID(func(p *structs.ScalingPolicyListStub) string { return p.ID }))
}

// scalingPolicyGet handles GET /v1/scaling/policy/{id}.
func (s *HTTPServer) scalingPolicyGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.ScalingPolicySpecificRequest{ID: r.PathValue("id")}
	var reply structs.SingleScalingPolicyResponse
	if err := s.query(w, r, readCall{"Scaling.GetPolicy", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Policy == nil {
		return nil, codedErrorf(http.StatusNotFound, "scaling policy not found")
	}
	return reply.Policy, nil
}
