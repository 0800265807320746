package testutil

import (
	"context"
	"net"

	"github.com/nomad-edge/nomad/testutil/fault"
)

// FaultNet is the network between in-process servers on loopback: every
// server dials its peers through it, so a test can isolate a server (its
// raft and forwarded RPC links, both ways) and heal it again. It is a
// fault.Net whose hosts are the servers' RPC addresses, failing as MemNet
// does. Gossip is not cut: membership stays, as it often does when only
// the raft port is firewalled.
type FaultNet struct {
	links
}

var _ fault.Net = (*FaultNet)(nil)

// NewFaultNet returns a healthy network.
func NewFaultNet() *FaultNet { return &FaultNet{links: newLinks()} }

// Dialer returns the dialer for the server whose RPC address is from.
func (n *FaultNet) Dialer(from func() string) *FaultDialer {
	return &FaultDialer{net: n, from: from}
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
	if err := d.net.gate(ctx, from, address, address); err != nil {
		return nil, err
	}
	c, err := d.d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return d.net.track(c, from, address, nil, nil)
}
