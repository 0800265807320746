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

	"github.com/hashicorp/net-rpc-msgpackrpc/v2"
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
}

// ConnPool keeps one multiplexed session per address.
type ConnPool struct {
	cfg Config

	mu       sync.Mutex
	sessions map[string]*yamux.Session
	closed   bool
}

// ErrPoolClosed is returned after Shutdown.
var ErrPoolClosed = errors.New("connection pool is shut down")

// ErrTransport marks failures of the link itself (dial, stream, timeout),
// as opposed to errors the server answered with: a caller with several
// servers tries the next one on these only.
var ErrTransport = errors.New("rpc transport error")

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
	return &ConnPool{cfg: cfg, sessions: map[string]*yamux.Session{}}
}

func (p *ConnPool) session(addr string) (*yamux.Session, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPoolClosed
	}
	if s, ok := p.sessions[addr]; ok && !s.IsClosed() {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.DialTimeout)
	defer cancel()
	conn, err := Dial(ctx, DialInput{Dialer: p.cfg.Dialer, Addr: addr, TLS: p.cfg.TLS, Kind: RPCMultiplex})
	if err != nil {
		return nil, fmt.Errorf("%w: dialing %s: %w", ErrTransport, addr, err)
	}
	ycfg := yamux.DefaultConfig()
	ycfg.LogOutput = io.Discard
	s, err := yamux.Client(conn, ycfg)
	if err != nil {
		conn.Close()
		return nil, err
	}
	p.sessions[addr] = s
	return s, nil
}

// RPC calls method on the server at addr. A call that sees no answer for
// CallTimeout plus the request's own blocking time fails and drops the
// session, so a dead link is noticed rather than waited on forever.
func (p *ConnPool) RPC(addr, method string, args, reply any, maxQueryTime time.Duration) error {
	s, err := p.session(addr)
	if err != nil {
		return err
	}
	stream, err := s.Open()
	if err != nil {
		p.drop(addr, s)
		return fmt.Errorf("%w: opening stream to %s: %w", ErrTransport, addr, err)
	}
	defer stream.Close()
	_ = stream.SetDeadline(time.Now().Add(p.cfg.CallTimeout + maxQueryTime))
	codec := msgpackrpc.NewCodecFromHandle(true, true, stream, structs.MsgpackHandle)
	err = msgpackrpc.CallWithCodec(codec, method, args, reply)
	var serverErr rpc.ServerError
	if errors.As(err, &serverErr) {
		return structs.RPCError(string(serverErr))
	}
	if err != nil {
		p.drop(addr, s)
		return fmt.Errorf("%w: rpc %s to %s: %w", ErrTransport, method, addr, err)
	}
	return nil
}

func (p *ConnPool) drop(addr string, s *yamux.Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions[addr] == s {
		delete(p.sessions, addr)
	}
	s.Close()
}

// Shutdown closes every session.
func (p *ConnPool) Shutdown() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for addr, s := range p.sessions {
		s.Close()
		delete(p.sessions, addr)
	}
}
