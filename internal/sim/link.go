package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/nomad/upstreamrpc"
)

// errSilenced is what a silenced node's calls fail with. It is a transport
// error, as a dead LTE link is to the client, so the client retries at its
// link-retry pace and heals the way it would after a real outage.
var errSilenced = fmt.Errorf("sim: node silenced: %w", pool.ErrTransport)

// link is one node's way to the servers: its ServerRPC (failover, server
// list) over a shared pool, which the simulator can silence. Silencing
// also cuts the calls in flight (the blocking allocation watch above all),
// through the request context the pool honours, so a silent node hears
// nothing either. It is testutil.FaultableRPC's reset mode, kept here
// because production code does not import test helpers, and lighter: no
// goroutine per call.
type link struct {
	inner serverCaller
	lat   *latencies

	mu       sync.Mutex
	silenced bool
	ctx      context.Context
	cancel   context.CancelFunc
	// abandoned are liveness sessions the node gave up on while silent:
	// closing them would tell the server at once, which a dead link never
	// does, so they stay open, silent, until the server closes its end or
	// the node returns.
	abandoned []net.Conn
}

func newLink(inner serverCaller, lat *latencies) *link {
	l := &link{inner: inner, lat: lat}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

// RPC implements client.RPCHandler.
func (l *link) RPC(method string, args, reply any) error {
	l.mu.Lock()
	silenced, ctx := l.silenced, l.ctx
	l.mu.Unlock()
	if silenced {
		return errSilenced
	}
	// The call ends with the client's own context (its shutdown) or with
	// the silence, whichever comes first.
	callCtx, cancel := context.WithCancel(structs.RequestContext(args))
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	structs.WithRequestContext(args, callCtx)
	start := time.Now()
	err := l.inner.RPC(method, args, reply)
	if err != nil && ctx.Err() != nil {
		return errSilenced
	}
	if err == nil && method == "Node.UpdateStatus" {
		l.lat.add(time.Since(start))
	}
	return err
}

// OpenSession implements client.SessionOpener. A silenced node opens
// none; the sessions it holds go silent, as over a dead link: its pings
// fail at once and nothing reaches the server, which notices by the
// silence alone.
func (l *link) OpenSession(ctx context.Context) (net.Conn, error) {
	l.mu.Lock()
	silenced, linkCtx := l.silenced, l.ctx
	l.mu.Unlock()
	if silenced {
		return nil, errSilenced
	}
	conn, err := l.inner.OpenSession(ctx)
	if err != nil {
		return nil, err
	}
	return &silentConn{Conn: conn, link: l, cut: linkCtx}, nil
}

// silentConn is a liveness session over a link that may be silenced.
type silentConn struct {
	net.Conn
	link *link
	cut  context.Context // ends when the link is silenced
}

func (c *silentConn) Write(b []byte) (int, error) {
	if c.cut.Err() != nil {
		return 0, errSilenced
	}
	return c.Conn.Write(b)
}

func (c *silentConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.cut.Err() != nil {
		return 0, errSilenced
	}
	return n, err
}

// Close closes the stream, or, when the link was silenced, leaves it for
// restore to close.
func (c *silentConn) Close() error {
	if c.cut.Err() == nil || !c.link.abandon(c.Conn) {
		return c.Conn.Close()
	}
	return nil
}

// Fail passes the failure on to the ServerRPC's stream.
func (c *silentConn) Fail() {
	if f, ok := c.Conn.(interface{ Fail() }); ok {
		f.Fail()
	}
}

// abandon keeps conn open until the link is restored; false when it is
// not silenced (any more).
func (l *link) abandon(conn net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.silenced {
		return false
	}
	l.abandoned = append(l.abandoned, conn)
	return true
}

// SetServers and Rebalance make the link a client.ServerManager, so the
// client's server-list handling reaches the ServerRPC underneath.
func (l *link) SetServers(addrs []string) { l.inner.SetServers(addrs) }

// Rebalance implements client.ServerManager.
func (l *link) Rebalance() { l.inner.Rebalance() }

var (
	_ client.ServerManager = (*link)(nil)
	_ client.SessionOpener = (*link)(nil)
)

// callsOnly is a link that carries no liveness session (Config.NoSessions).
type callsOnly struct{ l *link }

// RPC implements client.RPCHandler.
func (c callsOnly) RPC(method string, args, reply any) error { return c.l.RPC(method, args, reply) }

// SetServers implements client.ServerManager.
func (c callsOnly) SetServers(addrs []string) { c.l.SetServers(addrs) }

// Rebalance implements client.ServerManager.
func (c callsOnly) Rebalance() { c.l.Rebalance() }

// serverCaller is what a link carries the node's calls over: our
// client's ServerRPC, or an upstream fleet's upstreamCaller.
type serverCaller interface {
	client.RPCHandler
	client.ServerManager
	OpenSession(ctx context.Context) (net.Conn, error)
}

// upstreamCaller carries a node's calls to upstream servers. Upstream has
// no liveness sessions, and its server list is the simulator's: the
// servers' list in heartbeat replies is not followed.
type upstreamCaller struct{ c *upstreamrpc.Client }

func (u upstreamCaller) RPC(method string, args, reply any) error {
	err := u.c.RPC(method, args, reply)
	if errors.Is(err, upstreamrpc.ErrTransport) {
		// The client retries a transport failure at its link pace.
		return fmt.Errorf("%w: %w", pool.ErrTransport, err)
	}
	return err
}

func (upstreamCaller) SetServers([]string) {}
func (upstreamCaller) Rebalance()          {}
func (upstreamCaller) OpenSession(context.Context) (net.Conn, error) {
	return nil, errors.New("sim: upstream servers hold no liveness sessions")
}

// rotate is s starting at its i-th element (mod len), so that each shared
// upstream client starts on another server.
func rotate(s []string, i int) []string {
	i %= len(s)
	return append(slices.Clone(s[i:]), s[:i]...)
}

// dialFunc is d as upstreamrpc.Client dials, nil for the real network.
func dialFunc(d pool.Dialer) func(ctx context.Context, addr string) (net.Conn, error) {
	if d == nil {
		return nil
	}
	return func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
}

// silence cuts the link; false if it already was.
func (l *link) silence() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.silenced {
		return false
	}
	l.silenced = true
	l.cancel()
	return true
}

// restore heals the link; false if it was not silenced.
func (l *link) restore() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.silenced {
		return false
	}
	l.silenced = false
	l.ctx, l.cancel = context.WithCancel(context.Background())
	for _, c := range l.abandoned {
		c.Close()
	}
	l.abandoned = nil
	return true
}

func (l *link) isSilenced() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.silenced
}

// latencies keeps the newest heartbeat round trips, for percentiles.
type latencies struct {
	mu    sync.Mutex
	ring  []time.Duration
	next  int
	total int
}

// latencySamples bounds the memory of the latency record; at 10,000 nodes
// heartbeating every few minutes it holds several rounds.
const latencySamples = 1 << 16

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < latencySamples {
		l.ring = append(l.ring, d)
	} else {
		l.ring[l.next] = d
		l.next = (l.next + 1) % latencySamples
	}
	l.total++
}

// Latency is a summary of heartbeat round trips as the nodes saw them.
type Latency struct {
	Count int
	P50   time.Duration
	P99   time.Duration
	Max   time.Duration
}

func (l *latencies) summary() Latency {
	l.mu.Lock()
	s := slices.Clone(l.ring)
	total := l.total
	l.mu.Unlock()
	if len(s) == 0 {
		return Latency{Count: total}
	}
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return Latency{Count: total, P50: at(0.50), P99: at(0.99), Max: s[len(s)-1]}
}

// reset forgets the samples, so a phase of a benchmark is measured alone.
func (l *latencies) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring, l.next, l.total = nil, 0, 0
}

var errNoServers = errors.New("sim: at least one server address is required")
