package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/ui"
)

// readOnlyRPCer is an RPC handler (client.RPCHandler, the one type for
// whatever answers RPCs: one call per request) that can hand a read's reply over without
// copying it (the in-process server): the HTTP API only encodes replies.
type readOnlyRPCer interface {
	RPCReadOnly(method string, args, reply any) error
}

// handoffRPCer is an RPC handler that can take a write's args and give
// its reply without copying either (the in-process server).
type handoffRPCer interface {
	RPCHandoff(method string, args, reply any) error
}

// HTTPServer serves the /v1 API over net/http. Each handler decodes the
// request into an RPC request, makes the call and returns the reply (or an
// error) to wrap, which alone writes the answer.
type HTTPServer struct {
	agent    *Agent
	rpc      client.RPCHandler
	logger   hclog.Logger
	listener net.Listener
	srv      *http.Server
	done     chan struct{}
	limits   bodyLimits
}

// newHTTPServer serves the API on l until Shutdown.
func newHTTPServer(a *Agent, rpc client.RPCHandler, l net.Listener, logger hclog.Logger) *HTTPServer {
	s := &HTTPServer{agent: a, rpc: rpc, logger: logger.Named("http"), listener: l, done: make(chan struct{}), limits: defaultBodyLimits()}
	// No server-wide ReadTimeout: it would cut blocking queries, which
	// read nothing for minutes; readBody bounds the body alone.
	s.srv = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: headerReadTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("HTTP server stopped", "error", err)
		}
	}()
	return s
}

// Addr returns the address the API listens on.
func (s *HTTPServer) Addr() net.Addr { return s.listener.Addr() }

// Shutdown stops accepting requests. Requests in flight get a moment to
// finish; blocking queries, which may last minutes, are then cut off.
func (s *HTTPServer) Shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
}

// handlerFunc returns the value to encode as JSON, or an error for wrap to
// turn into a status code and a plain-text message.
type handlerFunc func(w http.ResponseWriter, r *http.Request) (any, error)

func (s *HTTPServer) routes() *http.ServeMux {
	mux := http.NewServeMux()
	handle := func(pattern string, fn handlerFunc) { mux.Handle(pattern, s.wrap(fn)) }
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		handle(m+" /v1/jobs", s.jobRegister)
		handle(m+" /v1/job/{id}", s.jobRegister)
		handle(m+" /v1/jobs/parse", s.jobParse)
		handle(m+" /v1/validate/job", s.jobValidate)
		handle(m+" /v1/allocation/{id}/stop", s.allocStop)
		// One pattern for the node actions: /v1/node/{id}/drain and
		// /v1/node/pool/{name} would both match /v1/node/pool/drain, which
		// net/http refuses to register.
		handle(m+" /v1/node/{id}/{action}", s.nodeAction)
	}
	handle("GET /v1/jobs", s.jobList)
	handle("GET /v1/job/{id}", s.jobGet)
	handle("DELETE /v1/job/{id}", s.jobDeregister)
	handle("GET /v1/job/{id}/allocations", s.jobAllocations)
	handle("GET /v1/job/{id}/evaluations", s.jobEvaluations)
	handle("GET /v1/job/{id}/summary", s.jobSummary)
	handle("GET /v1/job/{id}/scale", s.jobScaleStatus)
	s.jobLifecycleRoutes(handle)
	s.jobDispatchRoutes(handle)
	s.deploymentRoutes(handle)
	s.serviceRoutes(handle)
	s.scalingRoutes(handle)
	s.searchRoutes(handle)
	s.autopilotRoutes(handle)

	handle("GET /v1/allocations", s.allocList)
	handle("GET /v1/allocation/{id}", s.allocGet)

	handle("GET /v1/nodes", s.nodeList)
	handle("GET /v1/node/{id}", s.nodeGet)
	handle("GET /v1/node/{id}/{sub}", s.nodeSub)
	s.nodePoolRoutes(handle)

	handle("GET /v1/evaluations", s.evalList)
	handle("DELETE /v1/evaluations", s.evalDelete)
	handle("GET /v1/evaluation/{id}", s.evalGet)
	handle("GET /v1/evaluation/{id}/allocations", s.evalAllocations)

	handle("GET /v1/event/stream", s.eventStream)

	handle("GET /v1/status/leader", s.statusLeader)
	handle("GET /v1/regions", s.regions)
	handle("GET /v1/status/peers", s.statusPeers)
	handle("PUT /v1/system/gc", s.systemGC)
	handle("GET /v1/agent/self", s.agentSelf)
	handle("GET /v1/agent/health", s.agentHealth)
	handle("GET /v1/agent/members", s.agentMembers)
	handle("GET /v1/agent/servers", s.agentServers)
	mux.Handle("GET /v1/metrics", s.metricsHandler())
	s.agentRoutes(mux, s.publicAgentOp)
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		handle(m+" /v1/agent/join", s.agentJoin)
		handle(m+" /v1/agent/force-leave", s.agentForceLeave)
	}

	handle("GET /v1/acl/policies", s.aclPolicies)
	handle("GET /v1/acl/policy/{name}", s.aclPolicyGet)
	handle("DELETE /v1/acl/policy/{name}", s.aclPolicyDelete)
	handle("GET /v1/acl/tokens", s.aclTokens)
	handle("GET /v1/acl/token/self", s.aclTokenSelf)
	handle("GET /v1/acl/token/{id}", s.aclTokenGet)
	handle("DELETE /v1/acl/token/{id}", s.aclTokenDelete)
	handle("POST /v1/acl/identity/client-introduction-token", s.clientIntroductionToken)
	for _, m := range []string{http.MethodPut, http.MethodPost} {
		handle(m+" /v1/acl/bootstrap", s.aclBootstrap)
		handle(m+" /v1/acl/policy/{name}", s.aclPolicyPut)
		handle(m+" /v1/acl/token", s.aclTokenPut)
		handle(m+" /v1/acl/token/{id}", s.aclTokenPut)
		handle(m+" /v1/acl/token/onetime", s.aclOneTimeToken)
		handle(m+" /v1/acl/token/onetime/exchange", s.aclOneTimeExchange)
		handle(m+" /v1/namespace", s.namespacePut)
		handle(m+" /v1/namespace/{name}", s.namespacePut)
	}
	handle("GET /v1/namespaces", s.namespaceList)
	handle("GET /v1/namespace/{name}", s.namespaceGet)
	handle("DELETE /v1/namespace/{name}", s.namespaceDelete)

	s.snapshotRoutes(mux)
	handle("GET /v1/operator/raft/configuration", s.operatorRaftConfiguration)
	handle("DELETE /v1/operator/raft/peer", s.operatorRaftPeer)
	handle("GET /v1/operator/scheduler/configuration", s.operatorSchedulerGet)
	handle("PUT /v1/operator/scheduler/configuration", s.operatorSchedulerPut)
	handle("POST /v1/operator/scheduler/configuration", s.operatorSchedulerPut)
	s.variableRoutes(handle)
	ui.Register(mux)
	s.clientMux(mux, s.publicClientOp)
	return mux
}

// wrap is the one place answers are written: a handler's value as JSON
// with 200, or its error as a status code and a plain-text body, which is
// what upstream's clients put in their error messages. On error nothing of
// a partial answer has been written.
func (s *HTTPServer) wrap(fn handlerFunc) http.Handler { return s.wrapBody(fn, bodyBuffered) }

// bodyMode says how wrap hands a request's body to the handler.
type bodyMode int

const (
	// bodyBuffered: read whole, within the body limits (readBody).
	bodyBuffered bodyMode = iota
	// bodyStreamed: left for the handler to stream, for bodies no limit
	// on a JSON request fits (a snapshot to restore).
	bodyStreamed
)

// wrapBody is wrap with the body handled as mode says.
func (s *HTTPServer) wrapBody(fn handlerFunc, mode bodyMode) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if err := checkOrigin(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		if mode == bodyBuffered {
			release, err := s.limits.readBody(w, r)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			defer release()
		}
		obj, err := fn(w, r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if _, ok := obj.(answered); ok {
			return
		}
		code := http.StatusOK
		if ws, ok := obj.(withStatus); ok {
			code, obj = ws.Code, ws.Body
		}
		var buf []byte
		if r.URL.Query().Has("pretty") {
			buf, err = json.MarshalIndent(obj, "", "    ")
			buf = append(buf, '\n')
		} else {
			buf, err = json.Marshal(obj)
		}
		if err != nil {
			s.logger.Error("encoding response", "path", r.URL.Path, "error", err)
			http.Error(w, "failed to encode response: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		writeBody(w, r, code, buf)
		s.logger.Trace("request complete", "method", r.Method, "path", r.URL.Path, "duration", time.Since(start))
	})
}

// writeError answers with err's status and message as plain text.
func (s *HTTPServer) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := errorStatus(err)
	// An overloaded agent says so to each client, not to its log once
	// per refused request, or a flood of requests becomes one of lines.
	if code >= 500 && code != http.StatusServiceUnavailable {
		s.logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err, "code", code)
	} else {
		s.logger.Debug("request rejected", "method", r.Method, "path", r.URL.Path, "error", err, "code", code)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

// withStatus is a JSON answer whose status is not 200 although the request
// was understood, such as an unhealthy /v1/agent/health.
type withStatus struct {
	Code int
	Body any
}

// CodedError is an error the HTTP layer itself raises with a status code:
// a malformed parameter, a missing object.
type CodedError struct {
	Code int
	Msg  string
}

func (e *CodedError) Error() string { return e.Msg }

func codedErrorf(code int, format string, args ...any) error {
	return &CodedError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// errorStatus maps an error to its HTTP status and message. It is the only
// such mapping: handlers return errors, never status codes.
func errorStatus(err error) (int, string) {
	var coded *CodedError
	var validation *structs.ValidationError
	switch {
	case errors.As(err, &coded):
		return coded.Code, coded.Msg
	case errors.As(err, &validation),
		errors.Is(err, structs.ErrInvalidRequest),
		errors.Is(err, structs.ErrMissingField),
		errors.Is(err, structs.ErrTokenMismatch),
		errors.Is(err, structs.ErrACLDisabled):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, structs.ErrUnknownJob),
		errors.Is(err, structs.ErrUnknownNode),
		errors.Is(err, structs.ErrUnknownAlloc),
		errors.Is(err, structs.ErrUnknownEval),
		errors.Is(err, structs.ErrUnknownDeployment),
		errors.Is(err, structs.ErrUnknownPeer),
		errors.Is(err, structs.ErrUnknownACLToken),
		errors.Is(err, structs.ErrUnknownACLPolicy),
		errors.Is(err, structs.ErrUnknownNamespace),
		errors.Is(err, structs.ErrUnknownNodePool),
		errors.Is(err, structs.ErrVariableNotFound),
		errors.Is(err, structs.ErrUnknownServiceRegistration):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, structs.ErrPermissionDenied):
		return http.StatusForbidden, err.Error()
	case errors.Is(err, structs.ErrNodeNotReady),
		errors.Is(err, structs.ErrEvalBrokerNotPaused),
		errors.Is(err, structs.ErrLockConflict):
		return http.StatusConflict, err.Error()
	}
	// No leader and everything unexpected: the server could not answer.
	return http.StatusInternalServerError, err.Error()
}

// parseQueryOptions reads the parameters every read accepts: index and
// wait (a blocking query), namespace, region, prefix and stale.
func parseQueryOptions(r *http.Request, q *structs.QueryOptions) error {
	v := r.URL.Query()
	if s := v.Get("index"); s != "" {
		idx, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return codedErrorf(http.StatusBadRequest, "Invalid index %q: must be a non-negative integer", s)
		}
		q.MinQueryIndex = idx
	}
	if s := v.Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return codedErrorf(http.StatusBadRequest, "Invalid wait time %q: use a duration such as \"5s\" or \"300ms\"", s)
		}
		q.MaxQueryTime = d
	}
	q.Namespace = v.Get("namespace")
	q.Region = v.Get("region")
	q.Prefix = v.Get("prefix")
	// ?stale alone means true, as upstream; ?stale=false asks the leader.
	if v.Has("stale") {
		q.AllowStale = true
		if s := v.Get("stale"); s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return codedErrorf(http.StatusBadRequest, "Invalid stale %q: use true or false", s)
			}
			q.AllowStale = b
		}
	}
	return nil
}

// writeRequest reads the parameters every write accepts.
func writeRequest(r *http.Request) structs.WriteRequest {
	v := r.URL.Query()
	return structs.WriteRequest{Region: v.Get("region"), Namespace: v.Get("namespace")}
}

// setMeta sets the blocking-query headers from a read's metadata.
func setMeta(w http.ResponseWriter, m *structs.QueryMeta) {
	setIndex(w, m.Index)
	w.Header().Set("X-Nomad-KnownLeader", strconv.FormatBool(m.KnownLeader))
	w.Header().Set("X-Nomad-LastContact", strconv.FormatInt(m.LastContact.Milliseconds(), 10))
}

func setIndex(w http.ResponseWriter, index uint64) {
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(index, 10))
}

// readCall is one read RPC: its method, request and reply, and where in
// them the query options and the reply's metadata sit.
type readCall struct {
	Method string
	Opts   *structs.QueryOptions
	Args   any
	Reply  any
	Meta   *structs.QueryMeta
}

// query fills c.Opts from r, makes the call and sets the answer's
// blocking-query headers.
func (s *HTTPServer) query(w http.ResponseWriter, r *http.Request, c readCall) error {
	if err := parseQueryOptions(r, c.Opts); err != nil {
		return err
	}
	if err := s.callReadOnly(r, c.Method, c.Args, c.Reply); err != nil {
		return err
	}
	setMeta(w, c.Meta)
	return nil
}

// nonNil turns a nil slice into an empty one, so lists encode as [] the
// way upstream's do, never as null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// call makes an RPC on behalf of an HTTP request: the request's context
// rides on args, so a blocking query or a forward to the leader ends when
// the HTTP client goes away.
func (s *HTTPServer) call(r *http.Request, method string, args, reply any) error {
	withRequest(r, args)
	return s.rpc.RPC(method, args, reply)
}

// withRequest gives args the request's context and its caller's token.
func withRequest(r *http.Request, args any) {
	structs.WithRequestContext(args, r.Context())
	if t, ok := args.(structs.AuthTokenSetter); ok && requestToken(r) != "" {
		t.SetAuthToken(requestToken(r))
	}
}

// callHandoff is call for a write whose args the handler built for this
// call alone and whose reply it only encodes: through an in-process
// server neither is copied, so the handler must not touch args after
// the call (the endpoint may have changed them) nor change the reply.
func (s *HTTPServer) callHandoff(r *http.Request, method string, args, reply any) error {
	h, ok := s.rpc.(handoffRPCer)
	if !ok {
		return s.call(r, method, args, reply)
	}
	withRequest(r, args)
	return h.RPCHandoff(method, args, reply)
}

// callReadOnly is call for a read whose reply the handler only encodes:
// through an in-process server the reply is shared, not copied, so a
// handler must never change what a read returned.
func (s *HTTPServer) callReadOnly(r *http.Request, method string, args, reply any) error {
	ro, ok := s.rpc.(readOnlyRPCer)
	if !ok {
		return s.call(r, method, args, reply)
	}
	withRequest(r, args)
	return ro.RPCReadOnly(method, args, reply)
}
