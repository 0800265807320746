package testutil

import (
	"context"
	"net"
	"sync"
)

// FaultNet is the network between in-process servers: every server dials
// its peers through it, so a test can isolate a server (its raft and
// forwarded RPC links, both ways) and heal it again. Gossip is not cut:
// membership stays, as it often does when only the raft port is firewalled.
type FaultNet struct {
	mu       sync.Mutex
	isolated map[string]bool // by RPC address
	conns    map[*faultConn]struct{}
}

// NewFaultNet returns a healthy network.
func NewFaultNet() *FaultNet {
	return &FaultNet{isolated: map[string]bool{}, conns: map[*faultConn]struct{}{}}
}

// Dialer returns the dialer for the server whose RPC address is from.
func (n *FaultNet) Dialer(from func() string) *FaultDialer {
	return &FaultDialer{net: n, from: from}
}

// Isolate cuts every link to and from addr: open connections are closed
// and new dials fail until Heal.
func (n *FaultNet) Isolate(addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isolated[addr] = true
	for c := range n.conns {
		if c.from == addr || c.to == addr {
			c.Conn.Close()
			delete(n.conns, c)
		}
	}
}

// Heal restores the links of addr.
func (n *FaultNet) Heal(addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.isolated, addr)
}

// FaultDialer dials through a FaultNet on behalf of one server.
type FaultDialer struct {
	net  *FaultNet
	from func() string
	d    net.Dialer
}

// DialContext implements pool.Dialer.
func (d *FaultDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	from := d.from()
	if d.net.cut(from, address) {
		return nil, ErrPartitioned
	}
	c, err := d.d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	fc := &faultConn{Conn: c, from: from, to: address, net: d.net}
	d.net.mu.Lock()
	defer d.net.mu.Unlock()
	if d.net.isolated[from] || d.net.isolated[address] {
		c.Close()
		return nil, ErrPartitioned
	}
	d.net.conns[fc] = struct{}{}
	return fc, nil
}

func (n *FaultNet) cut(from, to string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.isolated[from] || n.isolated[to]
}

func (n *FaultNet) forget(c *faultConn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.conns, c)
}

type faultConn struct {
	net.Conn
	from, to string
	net      *FaultNet
	once     sync.Once
}

func (c *faultConn) Close() error {
	if c.net != nil {
		c.once.Do(func() { c.net.forget(c) })
	}
	return c.Conn.Close()
}
