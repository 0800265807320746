package nomad

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/yamux"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// listen accepts RPC connections until the listener closes. Accept errors
// (out of file descriptors, most often) back off up to a second, logging
// once per step, instead of spinning and flooding the log.
func (s *Server) listen() {
	limiter := s.newConnLimiter()
	var delay time.Duration
	for {
		conn, err := s.rpcListener.Accept()
		if err != nil {
			if s.isShutdown() {
				return
			}
			delay = min(max(delay*2, 5*time.Millisecond), time.Second)
			s.logger.Error("failed to accept RPC conn; backing off", "error", err, "delay", delay)
			select {
			case <-time.After(delay):
			case <-s.shutdownCh:
				return
			}
			continue
		}
		delay = 0
		limited, err := limiter.Accept(conn)
		if err != nil {
			// The limiter logs, at most once per IP per interval.
			conn.Close()
			continue
		}
		go s.handleConn(limited)
	}
}

// trackConn records an accepted connection so Shutdown can close it: a
// stopped server must not keep answering on connections it accepted
// before. It reports false once the server is shutting down.
func (s *Server) trackConn(c net.Conn) bool {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if s.conns == nil {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrackConn(c net.Conn) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	delete(s.conns, c)
}

// closeConns closes every accepted connection and refuses new ones.
func (s *Server) closeConns() {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	for c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

func (s *Server) handleConn(raw net.Conn) {
	if !s.trackConn(raw) {
		raw.Close()
		return
	}
	defer s.untrackConn(raw)
	conn, kind, peer, err := s.openConn(raw)
	if errors.Is(err, errSilentConn) {
		raw.Close()
		return
	}
	if err != nil {
		s.logger.Warn("refused RPC connection", "remote", raw.RemoteAddr(), "error", err)
		raw.Close()
		return
	}
	switch {
	case kind == pool.RPCRaft && s.raftLayer != nil:
		// Raft entries rewrite the cluster's state: only a server may
		// carry them (see mayCarryRaft).
		if err := s.mayCarryRaft(peer); err != nil {
			s.logger.Warn("refused raft connection", "remote", conn.RemoteAddr(), "error", err)
			conn.Close()
			return
		}
		s.raftLayer.handoff(conn)
		return
	case kind == pool.RPCNodeSession:
		conn, upstream, err := sniffUpstream(conn)
		switch {
		case err != nil:
			conn.Close()
		case upstream && peer.auto && !peer.isServer():
			// Upstream's clients hold no certificate of the cluster CA,
			// and their calls would pass no per-call gate.
			s.logger.Warn("refused upstream client session", "remote", conn.RemoteAddr(), "error", "an upstream client cannot join a tls.auto cluster")
			conn.Close()
		case upstream:
			s.handleUpstreamSession(conn, peer)
		default:
			s.handleNodeSession(conn, peer)
		}
		return
	case kind == pool.RPCClientHTTP:
		s.serveClientHTTP(conn, peer)
		return
	case kind != pool.RPCMultiplex:
		s.logger.Warn("unrecognized RPC byte", "byte", kind, "remote", conn.RemoteAddr())
		conn.Close()
		return
	}
	srv, err := s.connRPCServer(peer)
	if err != nil {
		s.logger.Error("setting up RPC endpoints for a connection", "error", err)
		conn.Close()
		return
	}
	sess, err := yamux.Server(conn, yamuxConfig())
	if err != nil {
		conn.Close()
		return
	}
	defer sess.Close()
	sessionDone := pool.SessionContext(sess)
	for {
		stream, err := sess.Accept()
		if err != nil {
			return
		}
		go s.serveStreamKind(connServer{rpc: srv, gate: s.autoGate(peer), peer: peer}, stream, sessionDone)
	}
}

// serveStreamKind serves a stream of an RPCMultiplex session: a node's
// liveness session when its first byte says so (pool.RPCNodeKeepalive),
// else one call, the byte read handed back to the codec.
// connServer is what serves one network connection's calls: its
// rpc.Server and, under tls.auto, the gate each call passes first.
type connServer struct {
	rpc  *rpc.Server
	gate func(method string, body any) error
	// peer is the connection's caller, for the streams that are no call
	// (a node's liveness stream).
	peer rpcPeer
}

func (s *Server) serveStreamKind(srv connServer, stream net.Conn, sessionDone context.Context) {
	// Reads parked on the stream end when the session does, rather than
	// spin until yamux marks the stream closed (pool.EndReadsWhenDone).
	stream = pool.EndReadsWhenDone(sessionDone, stream)
	defer stream.Close()
	_ = stream.SetReadDeadline(time.Now().Add(nodeHelloTimeout))
	var b [1]byte
	if _, err := io.ReadFull(stream, b[:]); err != nil {
		stream.Close()
		return
	}
	_ = stream.SetReadDeadline(time.Time{})
	if b[0] == pool.RPCNodeKeepalive {
		s.serveKeepalive(stream, srv.peer)
		return
	}
	s.serveStream(srv, &prefixedConn{Conn: stream, first: b[0], pending: true}, sessionDone.Done())
}

// prefixedConn is a connection whose first byte was already read: Read
// hands it back before the rest.
type prefixedConn struct {
	net.Conn
	first   byte
	pending bool
}

func (c *prefixedConn) Read(p []byte) (int, error) {
	if c.pending && len(p) > 0 {
		c.pending = false
		p[0] = c.first
		return 1, nil
	}
	return c.Conn.Read(p)
}

// serveStream serves the one call a stream carries (the pool opens a
// stream per call). The call's context ends when the caller closes its end
// of the stream, when the connection goes, or at shutdown: a blocking
// query or a forward whose caller hung up stops at once.
func (s *Server) serveStream(srv connServer, stream net.Conn, sessionDone <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A request no endpoint expected must cost its caller the stream, not
	// the server its life: the port faces strangers.
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("RPC handler panicked; closing the stream", "remote", stream.RemoteAddr(), "panic", r, "stack", string(debug.Stack()))
			stream.Close()
		}
	}()
	c := &ctxCodec{ServerCodec: pool.NewCodec(stream), ctx: ctx, gate: srv.gate}
	defer c.Close()
	c.onRequest = func() {
		// The handler does not read the stream while it runs: anything
		// read now, data or end of stream, means the caller is done.
		go func() {
			var b [1]byte
			_, _ = stream.Read(b[:])
			cancel()
		}()
	}
	go func() {
		select {
		case <-sessionDone:
		case <-s.shutdownCh:
		case <-ctx.Done():
		}
		cancel()
	}()
	_ = srv.rpc.ServeRequest(c)
	// Answered: the hang-up watcher has nothing left to watch for.
	_ = stream.SetReadDeadline(time.Now())
}

// ctxCodec sets a context on the request it decodes, and refuses it when
// gate (tls.auto's, autoGate) does: net/rpc then answers the caller with
// the error and never calls the endpoint.
type ctxCodec struct {
	rpc.ServerCodec
	ctx       context.Context
	onRequest func()
	gate      func(method string, body any) error
	method    string
}

func (c *ctxCodec) ReadRequestHeader(r *rpc.Request) error {
	err := c.ServerCodec.ReadRequestHeader(r)
	c.method = r.ServiceMethod
	return err
}

func (c *ctxCodec) ReadRequestBody(body any) error {
	if err := c.ServerCodec.ReadRequestBody(body); err != nil {
		return err
	}
	if c.gate != nil && body != nil {
		if err := c.gate(c.method, body); err != nil {
			return err
		}
	}
	structs.WithRequestContext(body, c.ctx)
	if c.onRequest != nil {
		c.onRequest()
	}
	return nil
}

// RPC serves a call in process, as the dev agent's client and HTTP API do.
// Arguments and replies go through msgpack exactly as over the network, so
// the caller never shares memory with the state store.
//
// The caller's context, carried by args (structs.RequestContext), goes
// with the call: a blocking query or a forward to the leader ends when it
// does.
func (s *Server) RPC(method string, args, reply any) error {
	return s.inmemCall(method, args, reply, inmemCopy)
}

// RPCReadOnly is RPC for callers that only read the reply and then drop
// it, as the HTTP API does when it encodes an answer as JSON: the reply is
// the endpoint's own value, shared rather than copied through msgpack.
// Endpoints build replies from the state store's objects, which are never
// changed in place, so sharing them is safe as long as the caller does not
// change them either. Args are still copied: endpoints may change theirs.
// A 100-job list costs about half the CPU this way (benchmarks.md, "HTTP
// API").
func (s *Server) RPCReadOnly(method string, args, reply any) error {
	return s.inmemCall(method, args, reply, inmemShareReply)
}

// rpcHandoff is RPC for a caller inside the server that hands its args to
// the endpoint and neither changes nor reuses them until the call
// returns, and only reads the reply: both are shared, not copied through
// msgpack. The worker submits its plans this way: a plan of thousands of
// allocations is the scheduler's own, and the plan applier only reads it
// (it copies what it must change), so the two msgpack copies of every
// plan and result bought nothing but CPU (18 % of the leader's in a
// reconnect storm). A call the endpoint forwards is encoded as always.
func (s *Server) rpcHandoff(method string, args, reply any) error {
	return s.inmemCall(method, args, reply, inmemHandoff)
}

// RPCHandoff is rpcHandoff for the HTTP API's writes: a handler decodes
// its args from the request body for this one call and never looks at
// them again, and only encodes the reply, so neither needs a msgpack
// copy (encoding and decoding a job's copy was a tenth of the CPU of a
// registration on a dev agent, benchmarks.md "Job registration").
func (s *Server) RPCHandoff(method string, args, reply any) error {
	return s.rpcHandoff(method, args, reply)
}

// inmemMode says what an in-process call copies through msgpack.
type inmemMode int

const (
	inmemCopy       inmemMode = iota // args and reply
	inmemShareReply                  // args only
	inmemHandoff                     // nothing
)

func (s *Server) inmemCall(method string, args, reply any, mode inmemMode) error {
	c := &inmemCodec{method: method, ctx: structs.RequestContext(args), share: mode != inmemCopy}
	if mode == inmemHandoff {
		c.handoff = args
	} else if err := codec.NewEncoderBytes(&c.args, structs.MsgpackHandle).Encode(args); err != nil {
		return fmt.Errorf("encoding %s args: %w", method, err)
	}
	if err := s.rpcServer.ServeRequest(c); err != nil {
		return err
	}
	if c.err != "" {
		if err := c.ctx.Err(); err != nil {
			// The caller gave up; say so in its own terms.
			return fmt.Errorf("%s: %s: %w", method, c.err, err)
		}
		return structs.RPCError(c.err)
	}
	if c.share {
		dst, src := reflect.ValueOf(reply), reflect.ValueOf(c.shared)
		if dst.Kind() != reflect.Pointer || src.Kind() != reflect.Pointer || dst.Type() != src.Type() {
			return fmt.Errorf("%s: reply is %T, the endpoint's is %T", method, reply, c.shared)
		}
		dst.Elem().Set(src.Elem())
		return nil
	}
	return structs.Decode(c.reply, reply)
}

// inmemCodec is an rpc.ServerCodec over byte slices for one call.
type inmemCodec struct {
	method string
	ctx    context.Context
	args   []byte
	reply  []byte
	err    string
	// share keeps the endpoint's reply value itself in shared.
	share  bool
	shared any
	// handoff, when set, is the caller's args, given to the endpoint
	// as they are instead of decoded from args.
	handoff any
}

func (c *inmemCodec) ReadRequestHeader(r *rpc.Request) error {
	r.ServiceMethod = c.method
	return nil
}

func (c *inmemCodec) ReadRequestBody(body any) error {
	if body == nil {
		return nil
	}
	if c.handoff != nil {
		dst, src := reflect.ValueOf(body), reflect.ValueOf(c.handoff)
		if dst.Kind() != reflect.Pointer || src.Kind() != reflect.Pointer || dst.Type() != src.Type() {
			return fmt.Errorf("%s: args are %T, the endpoint's are %T", c.method, c.handoff, body)
		}
		dst.Elem().Set(src.Elem())
		structs.WithRequestContext(body, c.ctx)
		return nil
	}
	if err := structs.Decode(c.args, body); err != nil {
		return err
	}
	structs.WithRequestContext(body, c.ctx)
	return nil
}

func (c *inmemCodec) WriteResponse(r *rpc.Response, body any) error {
	c.err = r.Error
	if r.Error != "" {
		return nil
	}
	if c.share {
		c.shared = body
		return nil
	}
	return codec.NewEncoderBytes(&c.reply, structs.MsgpackHandle).Encode(body)
}

func (c *inmemCodec) Close() error { return nil }

// forward sends a request for another region to that region
// (forwardRegion), and a write (or consistent read) to the leader when this
// server is not it. handled is true when the call was forwarded.
func (s *Server) forward(method string, args, reply any) (handled bool, err error) {
	if handled, err := s.forwardRegion(method, args, reply); handled {
		return true, err
	}
	leader, err := s.leaderForCall(structs.RequestContext(args))
	if err != nil {
		return true, err
	}
	if leader == "" {
		return false, nil
	}
	return true, s.connPool.RPC(leader, method, args, reply, 0)
}

// rpcHoldTimeout is how long a call that needs the leader waits for one
// during an election, as upstream's does: a `job run` made while the
// servers elect should succeed a moment later, not fail.
const rpcHoldTimeout = 5 * time.Second

// leaderForCall returns the leader's address to forward a call to, or ""
// when this server leads and serves it. While no leader is known (or this
// server is still taking up leadership) it waits up to rpcHoldTimeout, or
// until the caller's context ends.
//
// The hold runs on the time package, not the server's Clock: it bounds a
// wait on raft and the network, which a test's manual clock does not move.
func (s *Server) leaderForCall(ctx context.Context) (string, error) {
	var hold *time.Timer
	for {
		changed := s.leaderChange.wait()
		if s.IsLeader() {
			return "", nil
		}
		if l := string(s.raft.Leader()); l != "" && l != s.rpcAdvertise.String() {
			return l, nil
		}
		if hold == nil {
			hold = time.NewTimer(rpcHoldTimeout)
			defer hold.Stop()
		}
		select {
		case <-changed:
		case <-hold.C:
			return "", structs.ErrNoLeader
		case <-ctx.Done():
			return "", ctx.Err()
		case <-s.shutdownCh:
			return "", structs.ErrServerShutdown
		}
	}
}

// LeaderRPCAddr returns the leader's RPC address, or "" when this server
// leads, waiting out an election as a forwarded call does; for what the
// agent hands to the leader itself (a snapshot's stream) rather than by RPC.
func (s *Server) LeaderRPCAddr(ctx context.Context) (string, error) {
	return s.leaderForCall(ctx)
}

// forwardQuery sends a read to the leader unless this server leads or the
// caller accepts a stale answer (AllowStale): then it is served from the
// local state, which may lag the leader by LastContact.
func (s *Server) forwardQuery(method string, opts *structs.QueryOptions, args, reply any) (handled bool, err error) {
	if handled, err := s.forwardRegion(method, args, reply); handled {
		return true, err
	}
	if opts.AllowStale || s.IsLeader() {
		return false, nil
	}
	leader, err := s.leaderForCall(opts.Context())
	if err != nil {
		return true, err
	}
	if leader == "" {
		return false, nil
	}
	return true, s.connPool.RPC(leader, method, args, reply, opts.BlockingTime())
}

// raftApply encodes and applies a raft entry and returns the FSM's response
// and the log index.
func (s *Server) raftApply(t structs.MessageType, msg any) (any, uint64, error) {
	buf, err := structs.Encode(t, msg)
	if err != nil {
		return nil, 0, err
	}
	f := s.raft.Apply(buf, 30*time.Second)
	if err := f.Error(); err != nil {
		return nil, 0, fmt.Errorf("raft apply %s: %w", t, err)
	}
	resp := f.Response()
	if err, ok := resp.(error); ok && err != nil {
		return nil, f.Index(), err
	}
	return resp, f.Index(), nil
}

// queryFn reads the state for a blocking query, adding what it reads to ws
// and filling the reply; it returns the index the reply reflects.
type queryFn func(ws memdb.WatchSet, st *state.StateStore) (uint64, error)

// blockingRPC runs fn and, when opts ask for it, re-runs it each time what
// it read changes, until the index passes MinQueryIndex or MaxQueryTime
// passes. A timeout is not an error: the reply holds the latest result.
func (s *Server) blockingRPC(opts *structs.QueryOptions, meta *structs.QueryMeta, fn queryFn) error {
	ctx := opts.Context()
	if opts.MinQueryIndex > 0 {
		wait := opts.MaxQueryTime
		if wait <= 0 {
			wait = structs.DefaultBlockingQueryTime
		}
		if wait > structs.MaxBlockingQueryTime {
			wait = structs.MaxBlockingQueryTime
		}
		// Stagger wake-ups so many clients' queries do not expire together.
		wait += time.Duration(s.rand.Int63n(int64(wait)/16 + 1))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	// restored is set when the store a round read was abandoned: a
	// snapshot restore replaced it, and its indexes may be lower than
	// the caller's. The caller learns of the new state at once instead of
	// waiting for the index to climb past one it no longer means.
	restored := false
	// stale: a follower answering from its own state (see leaderLoss).
	stale := opts.AllowStale && !s.IsLeader()
	leaderless := false
	for {
		// Read from a snapshot so the reply and its index come from the
		// same moment; watches on it still fire on later writes.
		st := s.fsm.State()
		snap, err := st.Snapshot()
		if err != nil {
			return err
		}
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		if stale {
			ws.Add(s.leaderLoss.wait())
		}
		index, err := fn(ws, &snap.StateStore)
		if err != nil {
			return err
		}
		// A table never written reports 0, as upstream. A caller that
		// feeds the index back as MinQueryIndex in a loop must floor it at
		// 1 (0 means "do not block"), as Node.GetClientAllocs does.
		meta.Index = index
		meta.KnownLeader = s.raft.Leader() != ""
		if !s.IsLeader() {
			meta.LastContact = s.clock.Now().Sub(s.raft.LastContact())
		}
		if opts.MinQueryIndex == 0 || index > opts.MinQueryIndex || restored || leaderless {
			return nil
		}
		if err := ws.WatchCtx(ctx); err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		if s.isShutdown() {
			return structs.ErrServerShutdown
		}
		select {
		case <-st.AbandonCh():
			restored = true
		default:
		}
		// A stale wait woken by the loss of the leader answers with what
		// this server has, KnownLeader false.
		leaderless = stale && s.raft.Leader() == ""
	}
}

// tableIndex returns the highest of the given tables' indexes.
func tableIndex(st *state.StateStore, tables ...string) (uint64, error) {
	var idx uint64
	for _, t := range tables {
		i, err := st.Index(t)
		if err != nil {
			return 0, err
		}
		idx = max(idx, i)
	}
	return idx, nil
}
