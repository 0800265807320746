package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// nodeFn serves a /v1/client request about a node itself (its stats, its
// metadata) from this agent's client.
type nodeFn func(w http.ResponseWriter, r *http.Request, c *client.Client) error

// nodeOp is the node side of a clientOp: what the caller's token must
// allow, and how the node serves it.
type nodeOp struct {
	allow func(*acl.ACL) bool
	what  string
	serve nodeFn
}

var (
	nodeRead  = &nodeOp{allow: (*acl.ACL).AllowNodeRead, what: "node:read"}
	nodeWrite = &nodeOp{allow: (*acl.ACL).AllowNodeWrite, what: "node:write"}
)

// nodeRoutes registers the node-keyed /v1/client routes, as upstream's:
// the node is this agent's client, or the one ?node_id= (or the body's
// NodeID) names, reached as the allocation routes reach theirs.
func (s *HTTPServer) nodeRoutes(route func(pattern string, op clientOp)) {
	with := func(base *nodeOp, fn nodeFn) clientOp {
		op := *base
		op.serve = fn
		return clientOp{node: &op}
	}
	route("GET /v1/client/stats", with(nodeRead, s.clientStats))
	route("GET /v1/client/metadata", with(nodeRead, s.nodeMetaRead))
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		route(m+" /v1/client/metadata", with(nodeWrite, s.nodeMetaApply))
	}
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost} {
		route(m+" /v1/client/gc", with(nodeWrite, s.clientGC))
	}
}

func (s *HTTPServer) clientStats(w http.ResponseWriter, _ *http.Request, c *client.Client) error {
	return writeJSON(w, c.HostStats())
}

func (s *HTTPServer) nodeMetaRead(w http.ResponseWriter, _ *http.Request, c *client.Client) error {
	return writeJSON(w, c.NodeMeta())
}

func (s *HTTPServer) nodeMetaApply(w http.ResponseWriter, r *http.Request, c *client.Client) error {
	var req structs.NodeMetaApplyRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.NodeID != "" && req.NodeID != c.NodeID() {
		return codedErrorf(http.StatusBadRequest, "NodeID %q is not this node (%s)", req.NodeID, c.NodeID())
	}
	if len(req.Meta) == 0 {
		return codedErrorf(http.StatusBadRequest, "Meta: no keys to set or unset")
	}
	out, err := c.ApplyNodeMeta(req.Meta)
	if errors.Is(err, client.ErrEmptyMetaKey) {
		return codedErrorf(http.StatusBadRequest, "Meta: %v", err)
	}
	if err != nil {
		return err
	}
	return writeJSON(w, out)
}

// targetNode is the node a node-keyed request names: ?node_id=, or the
// NodeID of a metadata body (read and put back for whoever serves it).
func targetNode(r *http.Request) (string, error) {
	if id := r.URL.Query().Get("node_id"); id != "" || r.Method == http.MethodGet {
		return id, nil
	}
	data, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxRequestBody))
	if err != nil {
		return "", codedErrorf(http.StatusBadRequest, "Reading request body failed: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	var body struct{ NodeID string }
	_ = json.Unmarshal(data, &body) // the handler reports a bad body
	return body.NodeID, nil
}

// routeNode serves a node-keyed request from this agent's client, or
// passes it to the node it names as routeClient passes an allocation's.
func (s *HTTPServer) routeNode(w http.ResponseWriter, r *http.Request, op *nodeOp) error {
	if err := s.authorize(r, op.allow, op.what); err != nil {
		return err
	}
	id, err := targetNode(r)
	if err != nil {
		return err
	}
	var local *client.Client
	if s.agent != nil {
		local = s.agent.client
	}
	if local != nil && (id == "" || id == local.NodeID()) {
		return op.serve(w, r, local)
	}
	if id == "" {
		return codedErrorf(http.StatusBadRequest, "missing node_id: this agent runs no client; name the node with ?node_id=")
	}
	return s.forwardToNode(w, r, id)
}

// forwardToNode passes r to the node id names: through its session when
// this server holds it, through the server that does, or, from a
// client-only agent, to one of its servers, which does the same.
func (s *HTTPServer) forwardToNode(w http.ResponseWriter, r *http.Request, id string) error {
	if s.agent != nil && s.agent.server != nil {
		return s.routeNodeFromServer(w, r, s.agent.server, id)
	}
	if s.agent != nil && s.agent.remote != nil {
		return s.proxyToServers(w, r)
	}
	return codedErrorf(http.StatusNotFound, "Unknown node %q", id)
}

func (s *HTTPServer) routeNodeFromServer(w http.ResponseWriter, r *http.Request, srv *nomad.Server, id string) error {
	node, err := srv.State().NodeByID(nil, id)
	if err != nil {
		return err
	}
	if node == nil {
		return codedErrorf(http.StatusNotFound, "Unknown node %q", id)
	}
	if srv.HasNodeConn(id) {
		s.proxy(w, r, func(context.Context) (net.Conn, error) { return srv.DialNode(id) }, true)
		return nil
	}
	if r.Header.Get(forwardedHeader) != "" {
		return noPath(id, nomad.ErrNoNodeConn)
	}
	addr, err := srv.FindNodeConn(r.Context(), id)
	if err != nil {
		return noPath(id, err)
	}
	r.Header.Set(forwardedHeader, "1")
	s.proxy(w, r, func(ctx context.Context) (net.Conn, error) { return srv.DialClientHTTP(ctx, addr) }, false)
	return nil
}
