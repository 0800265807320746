package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad"
)

// forwardedHeader marks a /v1/client request one server handed to the
// server that holds the node's session: that one serves it through the
// session or fails, and never hands it on again.
const forwardedHeader = "X-Nomad-Client-Forwarded"

// localFn serves a /v1/client request for an allocation this agent's
// client runs. It returns an error only when it has written nothing.
type localFn func(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error

// clientOp is one /v1/client route: the namespace capability it needs
// and how the node serves it.
type clientOp struct {
	capability string
	serve      localFn
	// node, when set, makes the route about a node rather than an
	// allocation (client_node_endpoint.go).
	node *nodeOp
}

// clientMux registers the /v1/client routes on mux, each served by what
// wrap makes of its clientOp: the public API (checks the caller's token,
// then serves, passes through the node's session or to another server),
// or the node's side of its session (serves, trusting the server).
func (s *HTTPServer) clientMux(mux *http.ServeMux, wrap func(clientOp) http.Handler) {
	route := func(pattern, capability string, fn localFn) {
		mux.Handle(pattern, wrap(clientOp{capability: capability, serve: fn}))
	}
	route("GET /v1/client/fs/logs/{alloc}", acl.NamespaceCapabilityReadLogs, s.fsLogs)
	route("GET /v1/client/fs/ls/{alloc}", acl.NamespaceCapabilityReadFS, s.fsList)
	route("GET /v1/client/fs/stat/{alloc}", acl.NamespaceCapabilityReadFS, s.fsStat)
	route("GET /v1/client/fs/cat/{alloc}", acl.NamespaceCapabilityReadFS, s.fsCat)
	route("GET /v1/client/fs/readat/{alloc}", acl.NamespaceCapabilityReadFS, s.fsReadAt)
	route("GET /v1/client/allocation/{alloc}/stats", acl.NamespaceCapabilityReadJob, s.allocStats)
	route("GET /v1/client/allocation/{alloc}/checks", acl.NamespaceCapabilityReadJob, s.allocChecks)
	route("GET /v1/client/allocation/{alloc}/exec", acl.NamespaceCapabilityAllocExec, s.allocExec)
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		route(m+" /v1/client/allocation/{alloc}/restart", acl.NamespaceCapabilityAllocLifecycle, s.allocRestart)
		route(m+" /v1/client/allocation/{alloc}/signal", acl.NamespaceCapabilityAllocLifecycle, s.allocSignal)
	}
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost} {
		route(m+" /v1/client/allocation/{alloc}/gc", acl.NamespaceCapabilitySubmitJob, s.allocGC)
	}
	s.nodeRoutes(func(pattern string, op clientOp) { mux.Handle(pattern, wrap(op)) })
}

// publicClientOp is a /v1/client route of the agent's HTTP API (and of a
// server's pool.RPCClientHTTP connections).
func (s *HTTPServer) publicClientOp(op clientOp) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkOrigin(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		route := func() error { return s.routeClient(w, r, op) }
		if op.node != nil {
			route = func() error { return s.routeNode(w, r, op.node) }
		}
		if err := route(); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// sessionClientOp is a /v1/client route as the node serves it over the
// session it opened: the server checked the caller already.
func (s *HTTPServer) sessionClientOp(op clientOp) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if op.node != nil {
			if s.agent == nil || s.agent.client == nil {
				s.writeError(w, r, codedErrorf(http.StatusNotFound, "this agent runs no client"))
			} else if err := op.node.serve(w, r, s.agent.client); err != nil {
				s.writeError(w, r, err)
			}
			return
		}
		ar, err := s.localAlloc(r)
		if err == nil {
			err = op.serve(w, r, ar)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

func (s *HTTPServer) localAlloc(r *http.Request) (*allocrunner.AllocRunner, error) {
	if s.agent == nil || s.agent.client == nil {
		return nil, codedErrorf(http.StatusNotFound, "Unknown allocation %q: this agent runs no client", r.PathValue("alloc"))
	}
	ar, err := s.agent.client.AllocRunner(r.PathValue("alloc"))
	if err != nil {
		return nil, codedErrorf(http.StatusNotFound, "Unknown allocation %q", r.PathValue("alloc"))
	}
	return ar, nil
}

// routeClient serves an allocation of this agent's own client, or passes
// the request to the node that runs it: through the session the node
// opened to this server, through the server that holds it, or (from a
// client-only agent) through a server.
func (s *HTTPServer) routeClient(w http.ResponseWriter, r *http.Request, op clientOp) error {
	id := r.PathValue("alloc")
	if ar, err := s.localAlloc(r); err == nil {
		if err := s.authorizeNamespace(r, ar.Alloc().Namespace, op.capability); err != nil {
			return err
		}
		return op.serve(w, r, ar)
	}
	if s.agent == nil {
		return codedErrorf(http.StatusNotFound, "Unknown allocation %q", id)
	}
	if srv := s.agent.server; srv != nil {
		return s.routeFromServer(w, r, srv, op)
	}
	if s.agent.remote != nil {
		// The servers know where the allocation runs; the token goes
		// along and is checked there.
		return s.proxyToServers(w, r)
	}
	return codedErrorf(http.StatusNotFound, "Unknown allocation %q", id)
}

// proxyToServers hands the request of a client-only agent, token and
// all, to one of its servers over a pool.RPCClientHTTP connection.
func (s *HTTPServer) proxyToServers(w http.ResponseWriter, r *http.Request) error {
	servers := s.agent.remote.Servers()
	if len(servers) == 0 {
		return codedErrorf(http.StatusServiceUnavailable, "No servers known to hand the request to")
	}
	tlsCfg, err := s.agent.outgoingRPCTLS()
	if err != nil {
		return err
	}
	s.proxy(w, r, func(ctx context.Context) (net.Conn, error) {
		return pool.Dial(ctx, pool.DialInput{Addr: servers[0], TLS: tlsCfg, Kind: pool.RPCClientHTTP})
	}, false)
	return nil
}

func (s *HTTPServer) routeFromServer(w http.ResponseWriter, r *http.Request, srv *nomad.Server, op clientOp) error {
	id := r.PathValue("alloc")
	alloc, err := srv.State().AllocByID(nil, id)
	if err != nil {
		return err
	}
	if alloc == nil {
		return codedErrorf(http.StatusNotFound, "Unknown allocation %q", id)
	}
	if err := s.authorizeNamespace(r, alloc.Namespace, op.capability); err != nil {
		return err
	}
	if srv.HasNodeConn(alloc.NodeID) {
		s.proxy(w, r, func(context.Context) (net.Conn, error) { return srv.DialNode(alloc.NodeID) }, true)
		return nil
	}
	if r.Header.Get(forwardedHeader) != "" {
		return noPath(alloc.NodeID, nomad.ErrNoNodeConn)
	}
	addr, err := srv.FindNodeConn(r.Context(), alloc.NodeID)
	if err != nil {
		return noPath(alloc.NodeID, err)
	}
	r.Header.Set(forwardedHeader, "1")
	s.proxy(w, r, func(ctx context.Context) (net.Conn, error) { return srv.DialClientHTTP(ctx, addr) }, false)
	return nil
}

func noPath(nodeID string, err error) error {
	if errors.Is(err, nomad.ErrNoNodeConn) {
		return codedErrorf(http.StatusServiceUnavailable, "No path to node %s: it holds no session with the servers (down, cut off, or still connecting)", nodeID)
	}
	return err
}

// authorizeNamespace refuses a caller whose token lacks capability in ns.
func (s *HTTPServer) authorizeNamespace(r *http.Request, ns, capability string) error {
	return s.authorize(r, func(a *acl.ACL) bool { return a.AllowNamespaceOperation(ns, capability) },
		fmt.Sprintf("%s in namespace %q", capability, ns))
}

// proxy passes the request, a websocket upgrade included, to the other end
// of the connections dial opens, streaming the answer as it comes. toNode
// drops the caller's token: the node has no use for it and must not
// learn it.
func (s *HTTPServer) proxy(w http.ResponseWriter, r *http.Request, dial func(context.Context) (net.Conn, error), toNode bool) {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "nomad-client"
			pr.Out.Host = "nomad-client"
			if toNode {
				pr.Out.Header.Del(tokenHeader)
			}
		},
		Transport: &http.Transport{
			DialContext:       func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
			DisableKeepAlives: true,
		},
		FlushInterval: -1,
		ErrorLog:      s.logger.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return
			}
			s.writeError(w, r, codedErrorf(http.StatusBadGateway, "reaching the node: %v", err))
		},
	}
	rp.ServeHTTP(w, r)
}

// clientAPIHandler serves the /v1/client routes, and the snapshot's that
// a server hands to the leader (snapshotServer), for the
// pool.RPCClientHTTP connections other servers and client-only agents open
// to this server.
func (s *HTTPServer) clientAPIHandler() http.Handler {
	mux := http.NewServeMux()
	s.clientMux(mux, s.publicClientOp)
	s.agentRoutes(mux, s.publicAgentOp)
	s.snapshotRoutes(mux)
	return mux
}

// sessionHandler serves the /v1/client routes as the node answers them
// over its session.
func (s *HTTPServer) sessionHandler() http.Handler {
	mux := http.NewServeMux()
	s.clientMux(mux, s.sessionClientOp)
	s.agentRoutes(mux, s.sessionAgentOp)
	return mux
}
