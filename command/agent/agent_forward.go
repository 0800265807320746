package agent

import (
	"context"
	"net"
	"net/http"
)

// agentTarget is the agent a /v1/agent/host, /v1/agent/pprof or
// /v1/agent/monitor request names, as upstream's: a client by ?node_id=
// (its node ID), a server by ?server_id= (its member name, or its name
// alone), or neither for the agent asked.
type agentTarget struct {
	nodeID, serverID string
}

// parseAgentTarget reads the target; naming both is upstream's 400.
func parseAgentTarget(r *http.Request) (agentTarget, error) {
	q := r.URL.Query()
	t := agentTarget{nodeID: q.Get("node_id"), serverID: q.Get("server_id")}
	if t.nodeID != "" && t.serverID != "" {
		return t, codedErrorf(http.StatusBadRequest, "Can only forward to either client node or server")
	}
	return t, nil
}

// id is the target as named, "" for none.
func (t agentTarget) id() string { return t.nodeID + t.serverID }

// isLocal reports whether the target is this agent.
func (s *HTTPServer) isLocal(t agentTarget) bool {
	switch {
	case t.nodeID != "":
		return s.agent != nil && s.agent.client != nil && s.agent.client.NodeID() == t.nodeID
	case t.serverID != "":
		return s.agent != nil && s.agent.server != nil && s.isLocalAgent(t.serverID)
	}
	return true
}

// agentOp is one of the agent routes that can serve another agent's
// answer: what the caller's token must allow (checked by the agent the
// caller asked, and again by each server it passes), and how an agent
// serves it for itself.
type agentOp struct {
	authorize func(r *http.Request) error
	serve     handlerFunc
	// node is the check an agent makes when a server hands it the
	// request over its node session, where no token travels: the
	// server checked that one.
	node func(r *http.Request) error
}

// agentRoutes registers the forwardable /v1/agent routes on mux, each
// wrapped by wrap: publicAgentOp on the agent's API and a server's
// pool.RPCClientHTTP connections, sessionAgentOp on a node's session.
func (s *HTTPServer) agentRoutes(mux *http.ServeMux, wrap func(agentOp) http.Handler) {
	read := func(r *http.Request) error { return s.authorize(r, allowHost, "agent read") }
	mux.Handle("GET /v1/agent/host", wrap(agentOp{authorize: read, serve: s.agentHost}))
	mux.Handle("GET /v1/agent/monitor", wrap(agentOp{authorize: read, serve: s.agentMonitor}))
	mux.Handle("GET /v1/agent/pprof/{profile...}", wrap(agentOp{
		authorize: s.authorizeDebug, serve: s.agentPprof, node: s.debugEnabledWithoutACL,
	}))
}

// publicAgentOp checks the caller's token, then serves op here or passes
// it to the agent named: a node through its session (forwardToNode), a
// server over a pool.RPCClientHTTP connection to it; a client-only agent
// hands a server's to its own servers.
func (s *HTTPServer) publicAgentOp(op agentOp) http.Handler {
	return s.wrap(func(w http.ResponseWriter, r *http.Request) (any, error) {
		if err := op.authorize(r); err != nil {
			return nil, err
		}
		t, err := parseAgentTarget(r)
		if err != nil {
			return nil, err
		}
		if s.isLocal(t) {
			return op.serve(w, r)
		}
		return answered{}, s.forwardAgent(w, r, t)
	})
}

// forwardAgent passes r to the agent t names, which is not this one.
func (s *HTTPServer) forwardAgent(w http.ResponseWriter, r *http.Request, t agentTarget) error {
	if t.nodeID != "" {
		return s.forwardToNode(w, r, t.nodeID)
	}
	if s.agent == nil || s.agent.server == nil {
		if s.agent != nil && s.agent.remote != nil {
			return s.proxyToServers(w, r)
		}
		return codedErrorf(http.StatusInternalServerError, "unknown Nomad server %s", t.serverID)
	}
	addr, ok := s.agent.server.ServerRPCAddr(t.serverID)
	// A server named but not found, or one that passed it on already
	// (names that disagree), ends here rather than going round.
	if !ok || r.Header.Get(forwardedHeader) != "" {
		return codedErrorf(http.StatusInternalServerError, "unknown Nomad server %s", t.serverID)
	}
	r.Header.Set(forwardedHeader, "1")
	srv := s.agent.server
	s.proxy(w, r, func(ctx context.Context) (net.Conn, error) { return srv.DialClientHTTP(ctx, addr) }, false)
	return nil
}

// sessionAgentOp serves op for this agent when a server hands it over the
// node's session.
func (s *HTTPServer) sessionAgentOp(op agentOp) http.Handler {
	return s.wrap(func(w http.ResponseWriter, r *http.Request) (any, error) {
		if op.node != nil {
			if err := op.node(r); err != nil {
				return nil, err
			}
		}
		return op.serve(w, r)
	})
}
