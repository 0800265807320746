package testutil

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/testutil/fault"
)

// MemNet is an in-memory network of hosts: stream connections are
// net.Pipe pairs and gossip packets are channel sends, so every goroutine
// waiting on the network is durably blocked inside a testing/synctest
// bubble and fake time can run. Hosts are addressed by IP ("10.0.0.1");
// listeners by "ip:port". It is a fault.Net: a test isolates a host and
// heals it again, so partitions are data, not firewall rules.
type MemNet struct {
	links
	listeners map[string]*memListener // guarded by links.mu
	gossip    map[string]*MemGossip   // guarded by links.mu
}

// ErrConnRefused is returned by a dial to an address nobody listens on.
var ErrConnRefused = fmt.Errorf("testutil: connection refused: %w", pool.ErrTransport)

var (
	_ pool.Dialer = (*MemDialer)(nil)
	_ fault.Net   = (*MemNet)(nil)
)

// NewMemNet returns a network with no hosts and no faults.
func NewMemNet() *MemNet {
	return &MemNet{
		links:     newLinks(),
		listeners: map[string]*memListener{},
		gossip:    map[string]*MemGossip{},
	}
}

// Listen listens on addr ("ip:port").
func (n *MemNet) Listen(addr string) (net.Listener, error) {
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("memnet listen %q: %w", addr, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.listeners[addr]; ok {
		return nil, fmt.Errorf("memnet listen %s: address in use", addr)
	}
	l := &memListener{net: n, addr: tcp, ch: make(chan net.Conn), closed: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// Dialer returns the dialer of the host at IP from.
func (n *MemNet) Dialer(from string) *MemDialer { return &MemDialer{net: n, from: from} }

// Close closes every listener and connection, so that no goroutine is left
// waiting on the network when a synctest bubble ends.
func (n *MemNet) Close() {
	n.closeAll()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, l := range n.listeners {
		l.closeOnce()
	}
}

// MemDialer dials through a MemNet on behalf of one host.
type MemDialer struct {
	net  *MemNet
	from string
	port atomic.Int32
}

// DialContext implements pool.Dialer.
func (d *MemDialer) DialContext(ctx context.Context, _, address string) (net.Conn, error) {
	to, err := net.ResolveTCPAddr("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("memnet dial %q: %w", address, err)
	}
	host := to.IP.String()
	if err := d.net.gate(ctx, d.from, host, address); err != nil {
		return nil, err
	}
	d.net.mu.Lock()
	l, ok := d.net.listeners[address]
	d.net.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("dial %s: %w", address, ErrConnRefused)
	}
	local := &net.TCPAddr{IP: net.ParseIP(d.from), Port: 40000 + int(d.port.Add(1))}
	a, b := net.Pipe()
	ca, err := d.net.track(a, d.from, host, local, to)
	if err != nil {
		b.Close()
		return nil, err
	}
	cb, err := d.net.track(b, host, d.from, to, local)
	if err != nil {
		ca.Close()
		return nil, err
	}
	select {
	case l.ch <- cb:
		return ca, nil
	case <-l.closed:
		ca.Close()
		cb.Close()
		return nil, fmt.Errorf("dial %s: %w", address, ErrConnRefused)
	case <-ctx.Done():
		ca.Close()
		cb.Close()
		return nil, fmt.Errorf("%w: dial %s: %w", pool.ErrTransport, address, ctx.Err())
	}
}

// memListener is a net.Listener on a MemNet.
type memListener struct {
	net    *MemNet
	addr   *net.TCPAddr
	ch     chan net.Conn
	once   sync.Once
	closed chan struct{}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.net.mu.Lock()
	defer l.net.mu.Unlock()
	if l.net.listeners[l.addr.String()] == l {
		delete(l.net.listeners, l.addr.String())
	}
	l.closeOnce()
	return nil
}

func (l *memListener) closeOnce() { l.once.Do(func() { close(l.closed) }) }

func (l *memListener) Addr() net.Addr { return l.addr }

// GossipTransport returns the memberlist transport of a server's gossip
// pool at addr ("ip:port"): packets are dropped, as UDP's are, when the
// link is cut or the receiver is behind; streams are MemNet connections.
func (n *MemNet) GossipTransport(addr string) (*MemGossip, error) {
	l, err := n.Listen(addr)
	if err != nil {
		return nil, err
	}
	g := &MemGossip{net: n, l: l.(*memListener), packets: make(chan *memberlist.Packet, 256)}
	n.mu.Lock()
	n.gossip[addr] = g
	n.mu.Unlock()
	return g, nil
}

// MemGossip is a memberlist.Transport on a MemNet.
type MemGossip struct {
	net     *MemNet
	l       *memListener
	packets chan *memberlist.Packet
}

var _ memberlist.Transport = (*MemGossip)(nil)

// FinalAdvertiseAddr implements memberlist.Transport: always the address
// the transport was made for.
func (g *MemGossip) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return g.l.addr.IP, g.l.addr.Port, nil
}

// WriteTo implements memberlist.Transport.
func (g *MemGossip) WriteTo(b []byte, addr string) (time.Time, error) {
	now := time.Now()
	to, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return now, err
	}
	if g.net.mode(g.l.addr.IP.String(), to.IP.String()) != fault.Healthy {
		return now, nil
	}
	g.net.mu.Lock()
	dest := g.net.gossip[addr]
	g.net.mu.Unlock()
	if dest == nil {
		return now, nil
	}
	select {
	case <-dest.l.closed:
	case dest.packets <- &memberlist.Packet{Buf: append([]byte(nil), b...), From: g.l.addr, Timestamp: now}:
	default:
	}
	return now, nil
}

// PacketCh implements memberlist.Transport.
func (g *MemGossip) PacketCh() <-chan *memberlist.Packet { return g.packets }

// DialTimeout implements memberlist.Transport.
func (g *MemGossip) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return g.net.Dialer(g.l.addr.IP.String()).DialContext(ctx, "tcp", addr)
}

// StreamCh implements memberlist.Transport.
func (g *MemGossip) StreamCh() <-chan net.Conn { return g.l.ch }

// Shutdown implements memberlist.Transport.
func (g *MemGossip) Shutdown() error {
	g.net.mu.Lock()
	if g.net.gossip[g.l.addr.String()] == g {
		delete(g.net.gossip, g.l.addr.String())
	}
	g.net.mu.Unlock()
	return g.l.Close()
}
