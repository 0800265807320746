package client

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The liveness session (pool.RPCNodeKeepalive): a stream the node keeps
// open to one server and pings every SessionPingInterval, so that the
// servers notice within seconds when it goes silent, however long the
// heartbeat TTL has grown with the fleet (the server closes a session
// silent for 8 s and tells the leader; see nomad/node_session.go).
const (
	// SessionPingInterval is how often the node pings its session.
	SessionPingInterval = 5 * time.Second
	// sessionPongTimeout is how long the node waits for a ping's answer
	// before it takes the server for gone and opens a session elsewhere.
	sessionPongTimeout = 4 * time.Second
	// sessionRetryMin and sessionRetryMax bound the wait before a new
	// session after one failed or ended: fast, so that a session cut by a
	// server's restart is back on another server well within
	// heartbeat_grace.
	sessionRetryMin = 250 * time.Millisecond
	sessionRetryMax = 5 * time.Second
	// sessionBeatAfter is how long the node may be without a session
	// before it heartbeats at once: the leader brings the heartbeat of a
	// node nobody holds a session of in to heartbeat_grace (5 s at the
	// least), so a node that cannot get one (a server too old to speak
	// it) but can still call proves itself alive the old way before then.
	sessionBeatAfter = 4 * time.Second
)

// SessionOpener is implemented by an RPCHandler that can carry the node's
// liveness session: OpenSession returns a stream to a server, its kind
// byte already sent. A returned conn that also has a Fail method is told
// when the session failed, so the handler can move to another server.
type SessionOpener interface {
	OpenSession(ctx context.Context) (net.Conn, error)
}

// failer is a session conn that wants to know it failed.
type failer interface{ Fail() }

// keepSession holds the node's liveness session for as long as the client
// runs, once it is registered; a handler that cannot carry one (an
// in-process server) leaves the heartbeat alone to tell the node's
// liveness.
func (c *Client) keepSession() {
	opener, ok := c.cfg.RPCHandler.(SessionOpener)
	if !ok {
		return
	}
	select {
	case <-c.readyCh:
	case <-c.shutdownCh:
		return
	}
	b := backoff{base: sessionRetryMin, max: sessionRetryMax}
	downSince, beaten := c.clock.Now(), false
	for {
		up, err := c.holdSession(opener)
		now := c.clock.Now()
		if c.ctx.Err() != nil {
			return
		}
		if up {
			b.reset()
			downSince, beaten = now, false
			c.logger.Debug("liveness session ended; opening another", "error", err)
		}
		if !beaten && now.Sub(downSince) >= sessionBeatAfter {
			beaten = true
			signal(c.beatNow)
		}
		if !c.sleep(b.next()) {
			return
		}
	}
}

// holdSession opens one session and pings it until it fails; up reports
// whether it was open at all.
func (c *Client) holdSession(opener SessionOpener) (up bool, err error) {
	conn, err := opener.OpenSession(c.ctx)
	if err != nil {
		return false, err
	}
	stop := context.AfterFunc(c.ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	fail := func(err error) (bool, error) {
		if f, ok := conn.(failer); ok && c.ctx.Err() == nil {
			f.Fail()
		}
		return up, err
	}
	if err := pool.NodeHello(conn, structs.NodeSessionHello{NodeID: c.NodeID(), SecretID: c.secretID()}); err != nil {
		if errors.Is(err, pool.ErrSessionRefused) {
			// The server answered: it is not the one to leave.
			return false, err
		}
		return fail(err)
	}
	up = true
	var b [1]byte
	for {
		_ = conn.SetWriteDeadline(time.Now().Add(sessionPongTimeout))
		if _, err := conn.Write(b[:]); err != nil {
			return fail(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(sessionPongTimeout))
		if _, err := conn.Read(b[:]); err != nil {
			return fail(err)
		}
		// Until the next ping the server sends nothing: a read that ends
		// before the deadline is the session ending (the server stopped,
		// the link reset), noticed now rather than at the next ping.
		_ = conn.SetReadDeadline(time.Now().Add(SessionPingInterval))
		_, err := conn.Read(b[:])
		var ne net.Error
		switch {
		case c.ctx.Err() != nil:
			return up, errShutdown
		case errors.As(err, &ne) && ne.Timeout():
		case err == nil:
			return fail(errUnexpectedPong)
		default:
			return fail(err)
		}
	}
}

// errUnexpectedPong is a server that sent on the session between pings.
var errUnexpectedPong = errors.New("server sent on the liveness session unasked")
