package pool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"
	"github.com/hashicorp/yamux"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// eventTimeout bounds every wait on an event so a broken pool fails the
// test with a message instead of hanging it.
const eventTimeout = 10 * time.Second

// FailArgs asks the test service to fail with Msg, wrapping Sentinel's
// text when set, the way endpoints wrap sentinels with %w.
type FailArgs struct {
	Msg      string
	Sentinel string
}

// HoldArgs asks the test service to answer after Delay.
type HoldArgs struct {
	Delay time.Duration
}

// Test is the service the test server registers. Node echoes a node back,
// Fail returns an error, Barrier answers only once Release is closed, Hold
// answers after a delay.
type Test struct {
	arrived chan struct{}
	release chan struct{}
}

// Node replies with the node it was sent, stamped with an index, so a round
// trip shows every field (the secret included) crosses the wire.
func (s *Test) Node(args *structs.NodeRegisterRequest, reply *structs.SingleNodeResponse) error {
	reply.Node = args.Node
	reply.Index = 42
	return nil
}

// Fail returns an error built from args.
func (s *Test) Fail(args *FailArgs, reply *structs.GenericResponse) error {
	for _, sentinel := range []error{structs.ErrUnknownNode, structs.ErrUnknownJob, structs.ErrInvalidRequest} {
		if sentinel.Error() == args.Sentinel {
			return fmt.Errorf("%w: %s", sentinel, args.Msg)
		}
	}
	return errors.New(args.Msg)
}

// Barrier signals its arrival and answers once the test releases it.
func (s *Test) Barrier(args *structs.GenericRequest, reply *structs.GenericResponse) error {
	s.arrived <- struct{}{}
	<-s.release
	return nil
}

// Hold answers after args.Delay, standing in for a blocking query.
func (s *Test) Hold(args *HoldArgs, reply *structs.GenericResponse) error {
	<-time.After(args.Delay)
	reply.Index = 1
	return nil
}

// testServer speaks the servers' RPC protocol (nomad/rpc.go): one byte
// RPCMultiplex, then a yamux session whose streams each serve msgpack RPC.
type testServer struct {
	addr    string
	svc     *Test
	rpc     *rpc.Server
	ln      net.Listener
	accepts atomic.Int32

	mu    sync.Mutex
	conns []net.Conn
}

func newTestServer(t *testing.T) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	s := &testServer{
		addr: ln.Addr().String(),
		svc:  &Test{arrived: make(chan struct{}), release: make(chan struct{})},
		rpc:  rpc.NewServer(),
		ln:   ln,
	}
	must.NoError(t, s.rpc.Register(s.svc))
	go s.serve()
	t.Cleanup(func() {
		ln.Close()
		s.dropConns()
	})
	return s
}

func (s *testServer) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.accepts.Add(1)
		s.mu.Lock()
		s.conns = append(s.conns, conn)
		s.mu.Unlock()
		go s.handle(conn)
	}
}

func (s *testServer) handle(conn net.Conn) {
	defer conn.Close()
	b := make([]byte, 1)
	if _, err := io.ReadFull(conn, b); err != nil || b[0] != pool.RPCMultiplex {
		return
	}
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	sess, err := yamux.Server(conn, cfg)
	if err != nil {
		return
	}
	defer sess.Close()
	for {
		stream, err := sess.Accept()
		if err != nil {
			return
		}
		go func() {
			codec := msgpackrpc.NewCodecFromHandle(true, true, stream, structs.MsgpackHandle)
			defer codec.Close()
			for s.rpc.ServeRequest(codec) == nil {
			}
		}()
	}
}

// dropConns closes every connection the server has accepted, as a server
// restart or a NAT timeout on the LTE link would.
func (s *testServer) dropConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// countingDialer dials TCP, counts dials, and reports when the pool closes
// a connection it dialed.
type countingDialer struct {
	dials  atomic.Int32
	addrs  chan string
	closed chan struct{}
}

func newCountingDialer() *countingDialer {
	return &countingDialer{addrs: make(chan string, 100), closed: make(chan struct{}, 100)}
}

func (d *countingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.dials.Add(1)
	d.addrs <- network + " " + addr
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &notifyConn{Conn: c, closed: d.closed}, nil
}

type notifyConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *notifyConn) Close() error {
	c.once.Do(func() { c.closed <- struct{}{} })
	return c.Conn.Close()
}

func newPool(t *testing.T, cfg pool.Config) *pool.ConnPool {
	t.Helper()
	p := pool.NewPool(cfg)
	t.Cleanup(p.Shutdown)
	return p
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(eventTimeout):
		t.Fatalf("timed out after %s waiting for %s", eventTimeout, what)
	}
}

func callNode(p *pool.ConnPool, addr string) (*structs.SingleNodeResponse, error) {
	node := &structs.Node{ID: "node-a", SecretID: "secret", Name: "edge-1", Attributes: map[string]string{"arch": "arm64"}}
	var reply structs.SingleNodeResponse
	err := p.RPC(addr, "Test.Node", &structs.NodeRegisterRequest{Node: node}, &reply, 0)
	return &reply, err
}

// A call carries its arguments to the server and the reply back, every
// field intact (the node's secret too), over the protocol the servers speak.
func TestPool_CallRoundTrips(t *testing.T) {
	srv := newTestServer(t)
	p := newPool(t, pool.Config{})

	node := &structs.Node{
		ID: "node-a", SecretID: "secret", Name: "edge-1", Status: structs.NodeStatusReady,
		Attributes:    map[string]string{"arch": "arm64"},
		NodeResources: &structs.NodeResources{Cpu: structs.NodeCpuResources{CpuShares: 1000}},
	}
	var reply structs.SingleNodeResponse
	must.NoError(t, p.RPC(srv.addr, "Test.Node", &structs.NodeRegisterRequest{Node: node}, &reply, 0))
	must.Eq(t, node, reply.Node)
	must.Eq(t, uint64(42), reply.Index)
}

// Concurrent calls to one server share one connection and run at the same
// time on it: a client on a metered link keeps one TCP session per server,
// and a long blocking query must not hold up other calls.
func TestPool_ConcurrentCallsShareOneSession(t *testing.T) {
	srv := newTestServer(t)
	dialer := newCountingDialer()
	p := newPool(t, pool.Config{Dialer: dialer})

	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			var reply structs.GenericResponse
			errs <- p.RPC(srv.addr, "Test.Barrier", &structs.GenericRequest{}, &reply, 0)
		}()
	}
	for i := range n {
		waitFor(t, srv.svc.arrived, fmt.Sprintf("call %d of %d to be in flight at once", i+1, n))
	}
	close(srv.svc.release)
	for range n {
		must.NoError(t, <-errs)
	}
	must.Eq(t, int32(1), dialer.dials.Load())
	must.Eq(t, int32(1), srv.accepts.Load())
}

// A server-side error comes back as an error; one carrying a sentinel's
// text is that sentinel to errors.Is on the client. Such an error is an
// answer, not a broken link, so the connection is kept.
func TestPool_ServerErrors(t *testing.T) {
	srv := newTestServer(t)
	dialer := newCountingDialer()
	p := newPool(t, pool.Config{Dialer: dialer})
	var reply structs.GenericResponse

	err := p.RPC(srv.addr, "Test.Fail", &FailArgs{Msg: "disk on fire"}, &reply, 0)
	must.EqError(t, err, "disk on fire")
	must.False(t, errors.Is(err, structs.ErrUnknownNode))

	for _, sentinel := range []error{structs.ErrUnknownNode, structs.ErrUnknownJob, structs.ErrInvalidRequest} {
		err = p.RPC(srv.addr, "Test.Fail", &FailArgs{Msg: "abc123", Sentinel: sentinel.Error()}, &reply, 0)
		must.ErrorIs(t, err, sentinel)
		must.EqError(t, err, sentinel.Error()+": abc123")
	}

	err = p.RPC(srv.addr, "Test.Nope", &FailArgs{}, &reply, 0)
	must.ErrorContains(t, err, "Test.Nope")

	_, err = callNode(p, srv.addr)
	must.NoError(t, err)
	must.Eq(t, int32(1), dialer.dials.Load(), must.Sprint("server errors must not cost a reconnect"))
}

// Once the server has closed the connection (a restart, a NAT timeout),
// the next call dials again and succeeds instead of failing on the dead
// session.
func TestPool_RedialsAfterServerClosesConnection(t *testing.T) {
	srv := newTestServer(t)
	dialer := newCountingDialer()
	p := newPool(t, pool.Config{Dialer: dialer})

	_, err := callNode(p, srv.addr)
	must.NoError(t, err)

	srv.dropConns()
	waitFor(t, dialer.closed, "the pool's session to see the connection close")

	reply, err := callNode(p, srv.addr)
	must.NoError(t, err)
	must.Eq(t, "secret", reply.Node.SecretID)
	must.Eq(t, int32(2), dialer.dials.Load())
	must.Eq(t, int32(2), srv.accepts.Load())
}

// Right after the server drops the connection, before the pool has
// noticed, at most one call fails (the pool cannot know the session is dead
// until it uses it, and must not blindly resend a write) and the call after
// it redials and succeeds.
func TestPool_AtMostOneCallFailsOnAStaleSession(t *testing.T) {
	srv := newTestServer(t)
	dialer := newCountingDialer()
	p := newPool(t, pool.Config{Dialer: dialer})

	_, err := callNode(p, srv.addr)
	must.NoError(t, err)

	srv.dropConns()
	_, first := callNode(p, srv.addr)
	_, second := callNode(p, srv.addr)
	must.NoError(t, second, must.Sprintf("first call after the drop returned %v", first))
	must.Eq(t, int32(2), dialer.dials.Load())
}

// A call over a blackholed link (the server accepts but never answers)
// fails after CallTimeout, naming the address, instead of hanging the
// client's heartbeat or status update forever, and the dead session is
// dropped so the next call dials afresh.
func TestPool_BlackholedCallTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})

	const callTimeout = 100 * time.Millisecond
	dialer := newCountingDialer()
	p := newPool(t, pool.Config{Dialer: dialer, CallTimeout: callTimeout})

	start := time.Now()
	_, err = callNode(p, ln.Addr().String())
	elapsed := time.Since(start)
	must.Error(t, err)
	must.StrContains(t, err.Error(), ln.Addr().String())
	must.ErrorIs(t, err, pool.ErrTransport)
	must.ErrorIs(t, err, pool.ErrCallTimeout, must.Sprint("a timeout is told apart from a dead dial"))
	must.GreaterEq(t, callTimeout, elapsed)
	must.Less(t, eventTimeout, elapsed)

	waitFor(t, dialer.closed, "the timed-out session to be closed")
	_, err = callNode(p, ln.Addr().String())
	must.Error(t, err)
	must.Eq(t, int32(2), dialer.dials.Load(), must.Sprint("the next call dials a new session"))
}

// The call deadline is CallTimeout plus the request's own blocking time, so
// a blocking query that legitimately waits longer than CallTimeout is not
// cut off.
func TestPool_BlockingQueryGetsItsOwnTime(t *testing.T) {
	srv := newTestServer(t)
	p := newPool(t, pool.Config{CallTimeout: 50 * time.Millisecond})

	var reply structs.GenericResponse
	must.NoError(t, p.RPC(srv.addr, "Test.Hold", &HoldArgs{Delay: 200 * time.Millisecond}, &reply, 5*time.Second))
	must.Eq(t, uint64(1), reply.Index)
}

// Dialing a port nobody listens on fails at once with an error naming the
// address, which is what an operator needs in the client's log.
func TestPool_DialFailureNamesAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	addr := ln.Addr().String()
	must.NoError(t, ln.Close())

	p := newPool(t, pool.Config{})
	_, err = callNode(p, addr)
	must.Error(t, err)
	must.StrContains(t, err.Error(), addr)
	must.StrContains(t, err.Error(), "dialing")
}

// A dial that does not complete is abandoned after DialTimeout: the dialer
// gets a context with that deadline.
func TestPool_DialTimeout(t *testing.T) {
	p := newPool(t, pool.Config{Dialer: stuckDialer{}, DialTimeout: 50 * time.Millisecond})
	_, err := callNode(p, "192.0.2.1:4647")
	must.ErrorIs(t, err, context.DeadlineExceeded)
	must.StrContains(t, err.Error(), "192.0.2.1:4647")
}

// stuckDialer never connects; it returns only when its context ends.
type stuckDialer struct{}

func (stuckDialer) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// After Shutdown every call fails with ErrPoolClosed and the open
// connections are closed, so an agent that stops leaves nothing behind.
func TestPool_ShutdownClosesAndRefuses(t *testing.T) {
	srv := newTestServer(t)
	dialer := newCountingDialer()
	p := pool.NewPool(pool.Config{Dialer: dialer})

	_, err := callNode(p, srv.addr)
	must.NoError(t, err)

	p.Shutdown()
	waitFor(t, dialer.closed, "Shutdown to close the open connection")
	_, err = callNode(p, srv.addr)
	must.ErrorIs(t, err, pool.ErrPoolClosed)
	must.Eq(t, int32(1), dialer.dials.Load(), must.Sprint("a closed pool does not dial"))

	p.Shutdown() // a second Shutdown is harmless
	_, err = callNode(p, srv.addr)
	must.ErrorIs(t, err, pool.ErrPoolClosed)
}

// The configured Dialer is the only way the pool opens connections (tests
// and the e2e harness route it through a network they can cut), and it is
// asked for TCP to the call's address, once per session.
func TestPool_UsesConfiguredDialer(t *testing.T) {
	a, b := newTestServer(t), newTestServer(t)
	dialer := newCountingDialer()
	p := newPool(t, pool.Config{Dialer: dialer})

	for range 3 {
		for _, srv := range []*testServer{a, b} {
			_, err := callNode(p, srv.addr)
			must.NoError(t, err)
		}
	}
	must.Eq(t, int32(2), dialer.dials.Load(), must.Sprint("one session per server"))
	must.Eq(t, "tcp "+a.addr, <-dialer.addrs)
	must.Eq(t, "tcp "+b.addr, <-dialer.addrs)
	must.Eq(t, int32(1), a.accepts.Load())
	must.Eq(t, int32(1), b.accepts.Load())
}

// stuckForDialer hangs dials to one address until its context ends and
// dials every other address for real.
type stuckForDialer struct {
	stuck string
	dials atomic.Int32
}

func (d *stuckForDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if addr == d.stuck {
		d.dials.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// A dial into a dead link holds up neither a call to another server nor a
// second dial to the same one: a client that fails over, or whose
// heartbeat and allocation watch both need the link, must not queue behind
// a dial that is going nowhere.
func TestPool_StuckDialBlocksOnlyItsAddress(t *testing.T) {
	srv := newTestServer(t)
	dialer := &stuckForDialer{stuck: "192.0.2.1:4647"}
	p := newPool(t, pool.Config{Dialer: dialer, DialTimeout: 2 * time.Second})

	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := callNode(p, dialer.stuck)
			errs <- err
		}()
	}
	start := time.Now()
	_, err := callNode(p, srv.addr)
	must.NoError(t, err)
	must.Less(t, time.Second, time.Since(start), must.Sprint("the healthy server answered behind the stuck dial"))
	for range 2 {
		must.ErrorIs(t, <-errs, context.DeadlineExceeded)
	}
	must.Eq(t, int32(1), dialer.dials.Load(), must.Sprint("the two callers shared one dial"))
}

// With KeepSessionOnTimeout, a call the server is slow to answer times
// out alone: the session stays, and the next call goes over it. The
// client simulator's nodes share a session; without this one node's slow
// registration would cut the calls of every node beside it.
func TestPool_KeepSessionOnTimeout(t *testing.T) {
	srv := newTestServer(t)
	dialer := newCountingDialer()
	p := newPool(t, pool.Config{Dialer: dialer, CallTimeout: 50 * time.Millisecond, KeepSessionOnTimeout: true})

	var reply structs.GenericResponse
	err := p.RPC(srv.addr, "Test.Hold", &HoldArgs{Delay: time.Second}, &reply, 0)
	must.ErrorIs(t, err, pool.ErrTransport)
	_, err = callNode(p, srv.addr)
	must.NoError(t, err)
	must.Eq(t, int32(1), dialer.dials.Load(), must.Sprint("the session outlived the timed-out call"))
}

// A call ends as soon as its caller's context does, whether it waits on a
// dial into a dead link or on a server that holds it unanswered: a client
// that shuts down must not wait out DialTimeout or CallTimeout.
func TestPool_CallEndsWithItsContext(t *testing.T) {
	srv := newTestServer(t)
	dialer := &stuckForDialer{stuck: "192.0.2.1:4647"}
	p := newPool(t, pool.Config{Dialer: dialer, DialTimeout: time.Hour, CallTimeout: time.Hour})
	t.Cleanup(func() { close(srv.svc.release) })

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := &structs.GenericRequest{}
	req.SetContext(ctx)
	var reply structs.GenericResponse
	must.ErrorIs(t, p.RPC(dialer.stuck, "Test.Barrier", req, &reply, 0), context.Canceled)

	ctx, cancel = context.WithCancel(context.Background())
	req = &structs.GenericRequest{}
	req.SetContext(ctx)
	errs := make(chan error, 1)
	go func() { errs <- p.RPC(srv.addr, "Test.Barrier", req, &reply, 0) }()
	waitFor(t, srv.svc.arrived, "the call to reach the server")
	cancel()
	select {
	case err := <-errs:
		must.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the call outlived its caller's context")
	}
}

// testCreds are credentials whose generation the test moves.
type testCreds struct{ gen atomic.Uint64 }

func (c *testCreds) Generation() uint64 { return c.gen.Load() }

// Once the credentials change (a node's certificate issued or renewed),
// the next call dials a new session with them and the old, idle one is
// closed; while they stay, calls share one session.
func TestPool_NewCredentialsDialAfresh(t *testing.T) {
	srv := newTestServer(t)
	d := newCountingDialer()
	creds := &testCreds{}
	p := newPool(t, pool.Config{Dialer: d, Credentials: creds})
	for range 2 {
		_, err := callNode(p, srv.addr)
		must.NoError(t, err)
	}
	must.Eq(t, int32(1), d.dials.Load())

	creds.gen.Add(1)
	_, err := callNode(p, srv.addr)
	must.NoError(t, err)
	must.Eq(t, int32(2), d.dials.Load())
	waitFor(t, d.closed, "the old session closed")
	_, err = callNode(p, srv.addr)
	must.NoError(t, err)
	must.Eq(t, int32(2), d.dials.Load())
}
