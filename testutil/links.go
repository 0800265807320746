package testutil

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/nomad-edge/nomad/testutil/fault"
)

// links is the fault state of a network of named hosts, shared by MemNet
// and the loopback FaultNet so that a host isolated on either fails the
// same way: the mode each isolated host's links fail in, and every
// connection open across the network, to close, stall or hold.
type links struct {
	mu    sync.Mutex
	cut   map[string]fault.Mode // by host
	conns map[*faultConn]struct{}
	// changed is closed and replaced at every Isolate and Heal, for the
	// dials and writes that Stall holds.
	changed chan struct{}
}

func newLinks() links {
	return links{cut: map[string]fault.Mode{}, conns: map[*faultConn]struct{}{}, changed: make(chan struct{})}
}

// Isolate implements fault.Net: Reset closes host's connections and
// refuses its dials; Blackhole makes what is sent vanish and dials hang to
// their deadline; Stall holds writes and dials until the heal.
func (l *links) Isolate(host string, m fault.Mode) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m == fault.Healthy {
		l.healLocked(host)
		return
	}
	l.cut[host] = m
	for c := range l.conns {
		if !c.touches(host) {
			continue
		}
		switch m {
		case fault.Blackhole:
			c.stalled.Store(true)
		case fault.Stall:
			c.held.Store(true)
		case fault.Reset:
			c.closeLocked()
		}
	}
	l.bumpLocked()
}

// Heal implements fault.Net. Connections that were blackholed are closed,
// as their TCP peers would have given up on them; held ones go on.
func (l *links) Heal(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.healLocked(host)
}

func (l *links) healLocked(host string) {
	delete(l.cut, host)
	for c := range l.conns {
		m := l.modeLocked(c.hosts[0], c.hosts[1])
		if c.stalled.Load() && m == fault.Healthy {
			c.closeLocked()
		}
		if m != fault.Stall {
			c.held.Store(false)
		}
	}
	l.bumpLocked()
}

func (l *links) bumpLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// closeAll closes every connection, so that no goroutine is left waiting
// on the network.
func (l *links) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.closeLocked()
	}
	l.bumpLocked()
}

// mode returns how the link between hosts a and b fails, or Healthy.
func (l *links) mode(a, b string) fault.Mode {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.modeLocked(a, b)
}

func (l *links) modeLocked(a, b string) fault.Mode {
	if m, ok := l.cut[a]; ok {
		return m
	}
	return l.cut[b]
}

// hold waits while the link between a and b is in Stall mode, or until
// done closes (then false); it returns the mode the link is in then.
func (l *links) hold(done <-chan struct{}, a, b string) (fault.Mode, bool) {
	for {
		l.mu.Lock()
		m, ch := l.modeLocked(a, b), l.changed
		l.mu.Unlock()
		if m != fault.Stall {
			return m, true
		}
		select {
		case <-ch:
		case <-done:
			return m, false
		}
	}
}

// gate is what a dial from host from to host to meets before it connects.
func (l *links) gate(ctx context.Context, from, to, address string) error {
	m, ok := l.hold(ctx.Done(), from, to)
	if !ok {
		return fmt.Errorf("%w: dial %s: %w", fault.ErrPartitioned, address, ctx.Err())
	}
	switch m {
	case fault.Reset:
		return fault.ErrPartitioned
	case fault.Blackhole:
		<-ctx.Done()
		return fmt.Errorf("%w: dial %s: %w", fault.ErrPartitioned, address, ctx.Err())
	}
	return nil
}

// track wraps c, an end on host from of a connection to host to, so the
// network can fail it; it refuses (and closes) c if the link was reset
// meanwhile. local and remote, when not nil, stand in for c's addresses.
func (l *links) track(c net.Conn, from, to string, local, remote net.Addr) (*faultConn, error) {
	fc := &faultConn{Conn: c, hosts: [2]string{from, to}, local: local, remote: remote, links: l, closed: make(chan struct{})}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.modeLocked(from, to) == fault.Reset {
		c.Close()
		return nil, fault.ErrPartitioned
	}
	l.conns[fc] = struct{}{}
	return fc, nil
}

// faultConn is one end of a connection across a faulty network. A
// blackholed (stalled) end drops what it writes, whole writes only, so
// nothing new reaches the peer; what was already on its way (a write that
// began before the stall, the rest of a yamux frame) is delivered, so a
// reader never waits for the second half of a frame; a held end blocks
// its writes until the heal.
type faultConn struct {
	net.Conn
	// local and remote, when set, stand in for the Conn's addresses
	// (a net.Pipe has none worth reading).
	local, remote net.Addr
	hosts         [2]string // this end's host, then the peer's
	links         *links
	stalled       atomic.Bool
	held          atomic.Bool
	once          sync.Once
	closed        chan struct{}
	// owed is what is left of the yamux data frame whose header this end
	// last wrote: its body goes through even if the link stalls meanwhile
	// (see Write). Only Write touches it, and yamux writes from one
	// goroutine.
	owed int
}

// yamuxDataHeader reports the body length of a yamux data frame header
// (12 bytes: version 0, type 0 data, flags, stream ID, length), 0 for
// anything else.
func yamuxDataHeader(b []byte) int {
	if len(b) != 12 || b[0] != 0 || b[1] != 0 {
		return 0
	}
	return int(binary.BigEndian.Uint32(b[8:12]))
}

func (c *faultConn) LocalAddr() net.Addr {
	if c.local != nil {
		return c.local
	}
	return c.Conn.LocalAddr()
}

func (c *faultConn) RemoteAddr() net.Addr {
	if c.remote != nil {
		return c.remote
	}
	return c.Conn.RemoteAddr()
}

func (c *faultConn) touches(host string) bool { return c.hosts[0] == host || c.hosts[1] == host }

func (c *faultConn) Write(b []byte) (int, error) {
	if c.held.Load() {
		if _, ok := c.links.hold(c.closed, c.hosts[0], c.hosts[1]); !ok {
			return 0, net.ErrClosed
		}
	}
	// A stall drops whole yamux frames, never half of one: yamux writes a
	// data frame's header and its body in two writes, and a reader given
	// the header waits for the body holding the stream's receive lock. On
	// a real network the session's keepalive would end that wait; in a
	// synctest bubble a goroutine queued on that lock (a sync.Mutex is not
	// durably blocking) keeps the fake clock from ever reaching the
	// keepalive, and the test hangs. So the body of a frame whose header
	// went out is sent even if the stall began in between.
	if c.owed > 0 {
		c.owed = max(c.owed-len(b), 0)
		return c.Conn.Write(b)
	}
	if c.stalled.Load() {
		return len(b), nil
	}
	if n := yamuxDataHeader(b); n > 0 {
		c.owed = n
	}
	return c.Conn.Write(b)
}

func (c *faultConn) Close() error {
	c.links.mu.Lock()
	defer c.links.mu.Unlock()
	c.closeLocked()
	return nil
}

func (c *faultConn) closeLocked() {
	c.once.Do(func() {
		delete(c.links.conns, c)
		// A closed end fails writes, blackholed or not.
		c.stalled.Store(false)
		close(c.closed)
		_ = c.Conn.Close()
	})
}
