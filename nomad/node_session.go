package nomad

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/serf/serf"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Liveness sessions (pool.RPCNodeKeepalive): how the servers learn within
// seconds that a node went silent, however long its heartbeat TTL has
// grown with the fleet. The node pings its session every few seconds; the
// server holding it closes a session silent for nodeSessionSilence and
// tells the leader in its next digest; the leader, once no server holds
// the node's session, brings the node's heartbeat timer in to
// heartbeat_grace (sessionLedger), and the heartbeat path decides as on
// any missed TTL. The TTL, and with it the heartbeat RPC rate, stays as
// it was.
const (
	// nodeSessionSilence is how long a session may go without a ping
	// (the client sends one every client.SessionPingInterval, 5 s) before
	// the server closes it.
	nodeSessionSilence = 8 * time.Second
	// nodeSessionDigestInterval is how often a server tells the leader
	// what changed among the sessions it holds.
	nodeSessionDigestInterval = time.Second
	// nodeSessionRecentLoss is how long a server keeps telling a new
	// leader (in its full digests) of a session it lost: a node cut off
	// just before a leader change is then still brought in, rather than
	// left to failover_heartbeat_ttl.
	nodeSessionRecentLoss = time.Minute
)

// sessionHolder is one server's record of the liveness sessions it
// holds, and of what changed since its last digest to the leader.
type sessionHolder struct {
	epoch string
	now   func() time.Time

	mu   sync.Mutex
	held map[string]int // node ID → open sessions (a replaced one may linger)
	// changed are nodes gained (true) or lost (false) since the last
	// digest; a node that came and went in between is sent as it is now.
	changed map[string]bool
	// lostAt are the nodes whose last session ended within
	// nodeSessionRecentLoss, and when.
	lostAt map[string]time.Time
	seq    uint64
	// full makes the next digest a full one; leader is whom the last
	// digest went to (a new leader gets a full one).
	full   bool
	leader string
}

func newSessionHolder(now func() time.Time) *sessionHolder {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &sessionHolder{
		epoch: hex.EncodeToString(b[:]), now: now, full: true,
		held: map[string]int{}, changed: map[string]bool{}, lostAt: map[string]time.Time{},
	}
}

func (h *sessionHolder) open(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held[nodeID]++
	if h.held[nodeID] == 1 {
		h.changed[nodeID] = true
		delete(h.lostAt, nodeID)
	}
}

func (h *sessionHolder) close(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held[nodeID]--; h.held[nodeID] > 0 {
		return
	}
	delete(h.held, nodeID)
	h.changed[nodeID] = false
	h.lostAt[nodeID] = h.now()
}

// holds reports whether the server holds a session of the node.
func (h *sessionHolder) holds(nodeID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held[nodeID] > 0
}

// digest builds the next digest for leader: everything held when the
// leader needs it, else what changed since the last one. What it carries
// is taken out of the record; failed puts it back, in the form of a full
// digest next time.
func (h *sessionHolder) digest(serverID, leader string) *structs.NodeSessionDigestRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	if leader != h.leader {
		h.full, h.leader = true, leader
	}
	h.seq++
	d := &structs.NodeSessionDigestRequest{ServerID: serverID, Epoch: h.epoch, Seq: h.seq, Full: h.full}
	if h.full {
		d.Held = make([]string, 0, len(h.held))
		for id := range h.held {
			d.Held = append(d.Held, id)
		}
		cutoff := h.now().Add(-nodeSessionRecentLoss)
		for id, at := range h.lostAt {
			if at.Before(cutoff) {
				delete(h.lostAt, id)
				continue
			}
			d.Lost = append(d.Lost, id)
		}
	} else {
		for id, up := range h.changed {
			if up {
				d.Held = append(d.Held, id)
			} else {
				d.Lost = append(d.Lost, id)
			}
		}
	}
	// An empty digest still goes: it tells the leader this server is
	// alive and holds what it said.
	clear(h.changed)
	h.full = false
	return d
}

// sent records the leader's answer to a digest.
func (h *sessionHolder) sent(needFull bool) {
	if needFull {
		h.failed()
	}
}

// failed records a digest the leader may or may not have had: the next
// one is full, so nothing depends on which.
func (h *sessionHolder) failed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.full = true
}

// serveKeepalive serves a node's liveness session: the hello, then a
// byte back for every byte the node sends, until it goes silent for
// nodeSessionSilence, closes the stream, or the server shuts down.
func (s *Server) serveKeepalive(stream net.Conn, peer rpcPeer) {
	defer stream.Close()
	nodeID, ok := s.acceptNodeHello(stream, peer, "liveness session")
	if !ok {
		return
	}
	s.sessions.open(nodeID)
	defer s.sessions.close(nodeID)
	// Shutdown closes the connection under the stream (closeConns), which
	// ends the read below at once: the nodes move to another server
	// rather than wait out the silence window.
	var b [1]byte
	for {
		_ = stream.SetReadDeadline(time.Now().Add(nodeSessionSilence))
		if _, err := stream.Read(b[:]); err != nil {
			if !s.isShutdown() {
				s.logger.Debug("node liveness session ended", "node_id", nodeID, "error", err)
			}
			return
		}
		_ = stream.SetWriteDeadline(time.Now().Add(nodeSessionSilence))
		if _, err := stream.Write(b[:]); err != nil {
			return
		}
	}
}

// sendSessionDigests tells the leader, every nodeSessionDigestInterval,
// what changed among the liveness sessions this server holds, until
// shutdown. The leader applies its own without a call.
func (s *Server) sendSessionDigests() {
	t := s.clock.NewTimer(nodeSessionDigestInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C():
		case <-s.shutdownCh:
			return
		}
		t.Reset(nodeSessionDigestInterval)
		leader := s.Leader()
		if leader == "" {
			continue
		}
		d := s.sessions.digest(s.id, leader)
		var reply structs.NodeSessionDigestResponse
		var err error
		if s.IsLeader() {
			reply.NeedFull = s.ledger.apply(d)
		} else {
			err = s.connPool.RPC(leader, "NodeSession.Digest", d, &reply, 0)
		}
		if err != nil {
			s.logger.Debug("sending node session digest to the leader", "leader", leader, "error", err)
			s.sessions.failed()
			continue
		}
		s.sessions.sent(reply.NeedFull)
	}
}

// NodeSession is the endpoint servers send their liveness-session digests
// to (servers only).
type NodeSession struct {
	srv  *Server
	peer rpcPeer
}

// Digest takes a server's digest, on the leader.
func (n *NodeSession) Digest(args *structs.NodeSessionDigestRequest, reply *structs.NodeSessionDigestResponse) error {
	if err := n.srv.requireServer(n.peer, "NodeSession.Digest"); err != nil {
		return err
	}
	if !n.srv.IsLeader() {
		return structs.ErrNotLeader
	}
	reply.NeedFull = n.srv.ledger.apply(args)
	return nil
}

// serverAlive reports whether gossip lists the server of this raft ID
// alive.
func (s *Server) serverAlive(id string) bool {
	for _, p := range s.regionServers() {
		if p.ID == id {
			return p.Status == serf.StatusAlive
		}
	}
	return false
}

// HoldsNodeSession reports whether this server holds a liveness session
// of the node.
func (s *Server) HoldsNodeSession(nodeID string) bool { return s.sessions.holds(nodeID) }
