package pool

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"sync"
	"time"

	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"
	"github.com/hashicorp/yamux"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// RPCMultiplex is the first byte a client writes on a new connection: the
// rest of the connection is a yamux session whose streams each carry
// msgpack RPC.
const RPCMultiplex byte = 0x04

// RPCRaft is the first byte of a raft connection between servers: raft
// shares the RPC port, as upstream's does, so a server needs one port less.
const RPCRaft byte = 0x02

// Dialer opens connections; net.Dialer satisfies it.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Config configures a pool.
type Config struct {
	Dialer      Dialer
	DialTimeout time.Duration
	// CallTimeout bounds a call that gets no answer (a blackholed link)
	// beyond the request's own MaxQueryTime.
	CallTimeout time.Duration
	// TLS, when set, carries every connection inside TLS (RPCTLS).
	TLS *tls.Config
	// DialTLS, when set and TLS is not, decides at each dial: the
	// configuration to dial TLS with, or nil to dial plaintext (a server
	// of tls.auto before its first certificate).
	DialTLS func() *tls.Config
	// KeepSessionOnTimeout makes a call that timed out fail alone, on a
	// session that is itself healthy (yamux's keepalive still closes a
	// dead one). For pools many callers share, such as the client
	// simulator's nodes: one slow call must not cut every other caller's
	// calls, which a client with its own session would never see.
	KeepSessionOnTimeout bool
	// Prover, set on servers' pools, proves every connection a server's
	// (RPCServerAuth) once it knows the servers' identity. A session
	// dialed before that is replaced by a proven one at the next call.
	Prover ServerProver
	// Credentials, when set, says when what a connection proves at its
	// handshake changed (a node's certificate of tls.auto, issued or
	// renewed): a session dialed before is replaced at the next call, as
	// an unproven one is.
	Credentials Credentials
}

// Credentials are what a pool's connections present, changing over time.
type Credentials interface {
	// Generation counts the changes; it never goes back.
	Generation() uint64
}

// ConnPool keeps one multiplexed session per address.
type ConnPool struct {
	cfg Config

	mu       sync.Mutex
	sessions map[string]*yamux.Session
	// gens are the credentials each session was dialed with (generation).
	gens map[*yamux.Session]uint64
	// closing end when their session closes (SessionContext).
	closing map[*yamux.Session]context.Context
	dialing map[string]*dialCall
	closed  bool
}

// dialCall is a dial in progress that every caller for the address waits
// on: a dial into a dead link must hold up neither calls to other servers
// nor a second dial to the same one.
type dialCall struct {
	done chan struct{}
	s    *yamux.Session
	err  error
}

// ErrPoolClosed is returned after Shutdown.
var ErrPoolClosed = errors.New("connection pool is shut down")

// ErrTransport marks failures of the link itself (dial, stream, timeout),
// as opposed to errors the server answered with: a caller with several
// servers tries the next one on these only.
var ErrTransport = errors.New("rpc transport error")

// ErrCallTimeout marks, beside ErrTransport, a call that got no answer
// within its deadline: the link may be dead, or the server busy with it
// still (and likely to carry it out).
var ErrCallTimeout = errors.New("no answer within the call timeout")

// NewPool returns a pool.
func NewPool(cfg Config) *ConnPool {
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{}
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	return &ConnPool{cfg: cfg, sessions: map[string]*yamux.Session{}, gens: map[*yamux.Session]uint64{},
		closing: map[*yamux.Session]context.Context{}, dialing: map[string]*dialCall{}}
}

// session returns the open session to addr, dialing it (once, whoever
// asks meanwhile) when there is none. A caller whose ctx ends stops
// waiting for the dial; the dial goes on for the others.
func (p *ConnPool) session(ctx context.Context, addr string) (*yamux.Session, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if s, ok := p.sessions[addr]; ok && !s.IsClosed() && !p.staleLocked(s) {
		p.mu.Unlock()
		return s, nil
	}
	call, ok := p.dialing[addr]
	if !ok {
		call = &dialCall{done: make(chan struct{})}
		p.dialing[addr] = call
		go p.dialFor(addr, call)
	}
	p.mu.Unlock()
	select {
	case <-call.done:
		return call.s, call.err
	case <-ctx.Done():
		return nil, fmt.Errorf("dialing %s: %w", addr, ctx.Err())
	}
}

// generation is what a connection dialed now proves: the server proof
// once the prover has the servers' identity, and the credentials'
// generation. Both only grow.
func (p *ConnPool) generation() uint64 {
	var g uint64
	if p.cfg.Credentials != nil {
		g = p.cfg.Credentials.Generation() << 1
	}
	if p.cfg.Prover != nil && p.cfg.Prover.HasServerIdentity() {
		g |= 1
	}
	return g
}

// staleLocked reports whether s was dialed with less than the pool could
// prove now (no server proof, older credentials). New calls go to a fresh
// session; s is closed once the calls in flight on it end (a blocking
// query may hold it for minutes).
func (p *ConnPool) staleLocked(s *yamux.Session) bool {
	g, ok := p.gens[s]
	if !ok || g == p.generation() {
		return false
	}
	delete(p.gens, s)
	go func() {
		closeWhenIdle(s, staleSessionMaxLife)
		p.mu.Lock()
		delete(p.closing, s)
		p.mu.Unlock()
	}()
	return true
}

// staleSessionMaxLife bounds how long a stale session is kept for its
// calls in flight: past it they are cut (their callers retry).
const staleSessionMaxLife = 15 * time.Minute

// closeWhenIdle closes s once it carries no stream, or after maxLife.
// yamux says nothing when a stream ends, so it looks every
// staleSessionCheck.
func closeWhenIdle(s *yamux.Session, maxLife time.Duration) {
	defer s.Close()
	if s.NumStreams() == 0 {
		return
	}
	tick := time.NewTicker(staleSessionCheck)
	defer tick.Stop()
	deadline := time.NewTimer(maxLife)
	defer deadline.Stop()
	for {
		select {
		case <-tick.C:
			if s.NumStreams() == 0 {
				return
			}
		case <-s.CloseChan():
			return
		case <-deadline.C:
			return
		}
	}
}

// staleSessionCheck is how often closeWhenIdle looks.
const staleSessionCheck = 100 * time.Millisecond

// dialFor dials addr and publishes the session for the waiting callers.
func (p *ConnPool) dialFor(addr string, call *dialCall) {
	gen := p.generation()
	s, err := p.dial(addr)
	p.mu.Lock()
	delete(p.dialing, addr)
	if err == nil && p.closed {
		s.Close()
		s, err = nil, ErrPoolClosed
	}
	if err == nil {
		if old, ok := p.sessions[addr]; ok {
			delete(p.gens, old) // closed, or stale and left to its calls
			if old.IsClosed() {
				delete(p.closing, old)
			}
		}
		p.sessions[addr] = s
		p.gens[s] = gen
		p.closing[s] = SessionContext(s)
	}
	call.s, call.err = s, err
	p.mu.Unlock()
	close(call.done)
}

func (p *ConnPool) dial(addr string) (*yamux.Session, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.DialTimeout)
	defer cancel()
	tlsCfg := p.cfg.TLS
	if tlsCfg == nil && p.cfg.DialTLS != nil {
		tlsCfg = p.cfg.DialTLS()
	}
	conn, err := Dial(ctx, DialInput{Dialer: p.cfg.Dialer, Addr: addr, TLS: tlsCfg, Kind: RPCMultiplex, Prover: p.cfg.Prover})
	if err != nil {
		return nil, fmt.Errorf("%w: dialing %s: %w", ErrTransport, addr, err)
	}
	ycfg := yamux.DefaultConfig()
	ycfg.LogOutput = io.Discard
	s, err := yamux.Client(conn, ycfg)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: starting session to %s: %w", ErrTransport, addr, err)
	}
	return s, nil
}

// RPC calls method on the server at addr. A call that sees no answer for
// CallTimeout plus the request's own blocking time fails and drops the
// session, so a dead link is noticed rather than waited on forever.
func (p *ConnPool) RPC(addr, method string, args, reply any, maxQueryTime time.Duration) error {
	// The caller's context (carried by args) bounds the call too: when it
	// ends, the call returns at once and the stream is closed, which tells
	// the server to stop serving it; the session, healthy, stays.
	ctx := structs.RequestContext(args)
	s, err := p.session(ctx, addr)
	if err != nil {
		return err
	}
	raw, err := s.Open()
	if err != nil {
		p.drop(addr, s)
		return fmt.Errorf("%w: opening stream to %s: %w", ErrTransport, addr, err)
	}
	stream := EndReadsWhenDone(p.closingCtx(s), raw)
	defer stream.Close()
	deadline := time.Now().Add(p.cfg.CallTimeout + maxQueryTime)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = stream.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = stream.SetDeadline(time.Now()) })
	defer stop()
	codec := NewCodec(stream)
	err = msgpackrpc.CallWithCodec(codec, method, args, reply)
	codec.Close()
	var serverErr rpc.ServerError
	if errors.As(err, &serverErr) {
		return structs.RPCError(string(serverErr))
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("rpc %s to %s: %w", method, addr, ctx.Err())
	}
	if err != nil {
		// The codec does not keep the stream's error in its chain: a
		// timeout is told by the clock.
		timedOut := !time.Now().Before(deadline)
		if !p.cfg.KeepSessionOnTimeout || !timedOut || s.IsClosed() {
			p.drop(addr, s)
		}
		if timedOut {
			return fmt.Errorf("%w: rpc %s to %s: %w: %w", ErrTransport, method, addr, ErrCallTimeout, err)
		}
		return fmt.Errorf("%w: rpc %s to %s: %w", ErrTransport, method, addr, err)
	}
	return nil
}

// OpenStream opens a long-lived stream to addr on the pool's session, its
// first byte kind (RPCNodeKeepalive), for a protocol other than one call.
// The stream ends with the session; closing it leaves the session open.
func (p *ConnPool) OpenStream(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	s, err := p.session(ctx, addr)
	if err != nil {
		return nil, err
	}
	stream, err := s.Open()
	if err != nil {
		p.drop(addr, s)
		return nil, fmt.Errorf("%w: opening stream to %s: %w", ErrTransport, addr, err)
	}
	if _, err := stream.Write([]byte{kind}); err != nil {
		stream.Close()
		return nil, fmt.Errorf("%w: opening stream to %s: %w", ErrTransport, addr, err)
	}
	return EndReadsWhenDone(p.closingCtx(s), stream), nil
}

func (p *ConnPool) drop(addr string, s *yamux.Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions[addr] == s {
		delete(p.sessions, addr)
	}
	delete(p.gens, s)
	delete(p.closing, s)
	s.Close()
}

// closingCtx is s's SessionContext; a session the pool dropped while the
// call was being opened gets one of its own.
func (p *ConnPool) closingCtx(s *yamux.Session) context.Context {
	p.mu.Lock()
	ctx, ok := p.closing[s]
	p.mu.Unlock()
	if !ok {
		ctx = SessionContext(s)
	}
	return ctx
}

// Shutdown closes every session.
func (p *ConnPool) Shutdown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for addr, s := range p.sessions {
		s.Close()
		delete(p.sessions, addr)
		delete(p.closing, s)
	}
}
