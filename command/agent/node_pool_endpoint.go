package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// nodePoolRoutes registers upstream's /v1/node/pool(s) endpoints.
func (s *HTTPServer) nodePoolRoutes(handle func(string, handlerFunc)) {
	handle("GET /v1/node/pools", s.nodePoolList)
	handle("GET /v1/node/pool/{name}", s.nodePoolGet)
	handle("GET /v1/node/pool/{name}/jobs", s.nodePoolJobs)
	handle("GET /v1/node/pool/{name}/nodes", s.nodePoolNodes)
	handle("GET /v1/node/pool/{name}/site-outages", s.nodePoolSiteOutages)
	handle("DELETE /v1/node/pool/{name}", s.nodePoolDelete)
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		handle(m+" /v1/node/pools", s.nodePoolPut)
		handle(m+" /v1/node/pool/{name}", s.nodePoolPut)
	}
}

// nodeSub handles GET /v1/node/{id}/{sub}; see routes for why the node
// sub-resources share one pattern.
func (s *HTTPServer) nodeSub(w http.ResponseWriter, r *http.Request) (any, error) {
	if r.PathValue("sub") == "allocations" {
		return s.nodeAllocations(w, r)
	}
	return nil, codedErrorf(http.StatusNotFound, "Invalid URL path %q", r.URL.Path)
}

// nodeAction handles PUT/POST /v1/node/{id}/{action}.
func (s *HTTPServer) nodeAction(w http.ResponseWriter, r *http.Request) (any, error) {
	switch r.PathValue("action") {
	case "drain":
		return s.nodeDrain(w, r)
	case "eligibility":
		return s.nodeEligibility(w, r)
	case "purge":
		return s.nodePurge(w, r)
	case "evaluate":
		return s.nodeEvaluate(w, r)
	}
	return nil, codedErrorf(http.StatusNotFound, "Invalid URL path %q", r.URL.Path)
}

// nodePoolBody is what PUT /v1/node/pools accepts: upstream's fields plus
// our Disconnect extension.
type nodePoolBody struct {
	Name                   string
	Description            string
	Meta                   map[string]string
	SchedulerConfiguration *structs.NodePoolSchedulerConfiguration
	Disconnect             *structs.NodePoolDisconnect
	CreateIndex            uint64
	ModifyIndex            uint64
}

func (s *HTTPServer) nodePoolList(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NodePoolListRequest{}
	var reply structs.NodePoolListResponse
	c := readCall{"NodePool.List", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.NodePool { return reply.NodePools }, byID(func(p *structs.NodePool) string { return p.Name }))
}

func (s *HTTPServer) nodePoolGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NodePoolSpecificRequest{Name: r.PathValue("name")}
	var reply structs.SingleNodePoolResponse
	if err := s.query(w, r, readCall{"NodePool.GetNodePool", &args.QueryOptions, args, &reply, &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.NodePool == nil {
		return nil, codedErrorf(http.StatusNotFound, "node pool not found")
	}
	return reply.NodePool, nil
}

func (s *HTTPServer) nodePoolJobs(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NodePoolSpecificRequest{Name: r.PathValue("name")}
	var reply structs.NodePoolJobsResponse
	c := readCall{"NodePool.ListJobs", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.JobListStub { return reply.Jobs }, jobKey(r))
}

func (s *HTTPServer) nodePoolNodes(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NodePoolSpecificRequest{Name: r.PathValue("name")}
	var reply structs.NodePoolNodesResponse
	c := readCall{"NodePool.ListNodes", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.NodeListStub { return reply.Nodes }, byID(func(n *structs.NodeListStub) string { return n.ID }))
}

// nodePoolSiteOutages lists the site outages declared for the pool's
// sites (ours).
func (s *HTTPServer) nodePoolSiteOutages(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NodePoolSpecificRequest{Name: r.PathValue("name")}
	var reply structs.SiteOutageListResponse
	c := readCall{"NodePool.ListSiteOutages", &args.QueryOptions, args, &reply, &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.SiteOutage { return reply.SiteOutages }, byID(func(o *structs.SiteOutage) string { return o.ID }))
}

func (s *HTTPServer) nodePoolPut(w http.ResponseWriter, r *http.Request) (any, error) {
	var body nodePoolBody
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	switch {
	case name == "" && body.Name == "":
		return nil, codedErrorf(http.StatusBadRequest, "Node pool name is missing: set Name in the body")
	case name == "":
		name = body.Name
	case body.Name != "" && body.Name != name:
		return nil, codedErrorf(http.StatusBadRequest, "Node pool name %q does not match the path: %q", body.Name, name)
	}
	args := &structs.NodePoolUpsertRequest{
		NodePools: []*structs.NodePool{{
			Name: name, Description: body.Description, Meta: body.Meta,
			SchedulerConfiguration: body.SchedulerConfiguration, Disconnect: body.Disconnect,
		}},
		WriteRequest: writeRequest(r),
	}
	var reply structs.GenericResponse
	if err := s.call(r, "NodePool.UpsertNodePools", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}

func (s *HTTPServer) nodePoolDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	args := &structs.NodePoolDeleteRequest{Names: []string{r.PathValue("name")}, WriteRequest: writeRequest(r)}
	var reply structs.GenericResponse
	if err := s.call(r, "NodePool.DeleteNodePools", args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return nil, nil
}
