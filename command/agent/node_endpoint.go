package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// nodeList handles GET /v1/nodes.
func (s *HTTPServer) nodeList(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.NodeListRequest
	var reply structs.NodeListResponse
	c := readCall{Method: "Node.List", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []*structs.NodeListStub { return reply.Nodes }, byID(func(n *structs.NodeListStub) string { return n.ID }))
}

// nodeGet handles GET /v1/node/{id}; the node's secret is never encoded
// (its SecretID field is there, empty, as upstream's).
func (s *HTTPServer) nodeGet(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.NodeSpecificRequest{NodeID: r.PathValue("id")}
	var reply structs.SingleNodeResponse
	if err := s.query(w, r, readCall{Method: "Node.GetNode", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	if reply.Node == nil {
		return nil, codedErrorf(http.StatusNotFound, "node not found")
	}
	return viewNode(reply.Node), nil
}

// nodeAllocations handles GET /v1/node/{id}/allocations: full
// allocations, as upstream returns them here. Upstream does not page this
// list; we take the list parameters as everywhere, so a filter is never
// accepted and ignored.
func (s *HTTPServer) nodeAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.NodeSpecificRequest{NodeID: r.PathValue("id")}
	var reply structs.NodeAllocsResponse
	c := readCall{Method: "Node.GetAllocs", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}
	return listQuery(s, w, r, c, func() []allocJSON { return viewAllocs(reply.Allocs) }, fullAllocOrder)
}
