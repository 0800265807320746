package nomad

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// nodeSessionServerTimeout is how long the leader trusts a server's word
// on the sessions it holds without a new digest, once gossip no longer
// lists the server alive: past it the server is taken to hold none (it
// crashed, or is cut off), and the nodes nobody else holds have their
// heartbeat timers brought in. A server gossip still lists alive is
// trusted up to nodeSessionServerTimeoutAlive: one starved of CPU for a
// while must not cost the fleet its nodes.
const (
	nodeSessionServerTimeout      = 5 * time.Second
	nodeSessionServerTimeoutAlive = 30 * time.Second
)

// nodeSessionMinGrace is the least time a node whose session was lost is
// given to get one back before its heartbeat timer fires, whatever
// heartbeat_grace says: a session cut by a server's restart or a blip of
// the link is open again, and reported, within about two seconds. A
// shorter grace (tests set 1 s) would turn those into disconnects.
const nodeSessionMinGrace = 5 * time.Second

// sessionLedger is the leader's view of which server holds which node's
// liveness session, built from the servers' digests. When the last
// server holding a node's session loses it, the node's heartbeat timer is
// brought in to heartbeat_grace (heartbeater.pullIn); when a server holds
// it again before the timer fires, the timer goes back to where it stood
// (heartbeater.restore). A node that never held a session (an older
// client, an in-process one) is never touched: only a loss acts.
//
// Work per digest is proportional to what changed, except for a full
// digest (a server's first to this leader, or after one went missing),
// which is proportional to the nodes that server holds.
type sessionLedger struct {
	deps sessionLedgerDeps

	mu      sync.Mutex
	servers map[string]*serverSessions
	// holders counts, per node, the servers holding its session: two for
	// a moment while a session moves.
	holders map[string]int
}

// serverSessions is what one server last said it holds.
type serverSessions struct {
	epoch    string
	seq      uint64
	lastSeen time.Time
	held     map[string]struct{}
}

// sessionLedgerDeps are what the ledger needs from the server.
type sessionLedgerDeps struct {
	// grace is how long a node without a session has to get one back,
	// or heartbeat, before its timer fires: heartbeat_grace, and
	// nodeSessionMinGrace at the least.
	grace   time.Duration
	now     func() time.Time
	pullIn  func(nodeID string, d time.Duration) bool
	restore func(nodeID string) bool
	// serverAlive reports whether gossip lists the server alive.
	serverAlive func(serverID string) bool
	logger      hclog.Logger
}

func newSessionLedger(deps sessionLedgerDeps) *sessionLedger {
	return &sessionLedger{deps: deps, servers: map[string]*serverSessions{}, holders: map[string]int{}}
}

// reset forgets every server's word: a new leader, or one that stopped
// leading, starts from the servers' next full digests.
func (l *sessionLedger) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.servers)
	clear(l.holders)
}

// apply takes a digest and reports whether the server must send a full
// one: a delta whose predecessor the leader did not see is not applied.
func (l *sessionLedger) apply(d *structs.NodeSessionDigestRequest) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ss := l.servers[d.ServerID]
	if d.Full {
		if ss == nil {
			ss = &serverSessions{held: map[string]struct{}{}}
			l.servers[d.ServerID] = ss
		}
		now := make(map[string]struct{}, len(d.Held))
		for _, id := range d.Held {
			now[id] = struct{}{}
		}
		for id := range ss.held {
			if _, ok := now[id]; !ok {
				l.lostLocked(ss, id)
			}
		}
		for id := range now {
			l.heldLocked(ss, id)
		}
		// Sessions the server lost lately: a leader new to the server
		// learns of a node cut off just before it took over.
		for _, id := range d.Lost {
			if l.holders[id] == 0 && l.deps.pullIn(id, l.deps.grace) {
				l.deps.logger.Debug("no server holds the node's liveness session: heartbeat due within the grace", "node_id", id, "grace", l.deps.grace)
			}
		}
		ss.epoch, ss.seq, ss.lastSeen = d.Epoch, d.Seq, l.deps.now()
		return false
	}
	if ss == nil || ss.epoch != d.Epoch || d.Seq != ss.seq+1 {
		return true
	}
	ss.seq, ss.lastSeen = d.Seq, l.deps.now()
	for _, id := range d.Held {
		l.heldLocked(ss, id)
	}
	for _, id := range d.Lost {
		l.lostLocked(ss, id)
	}
	return false
}

func (l *sessionLedger) heldLocked(ss *serverSessions, nodeID string) {
	if _, ok := ss.held[nodeID]; ok {
		return
	}
	ss.held[nodeID] = struct{}{}
	l.holders[nodeID]++
	if l.holders[nodeID] == 1 && l.deps.restore(nodeID) {
		l.deps.logger.Debug("node's liveness session is back: heartbeat TTL restored", "node_id", nodeID)
	}
}

func (l *sessionLedger) lostLocked(ss *serverSessions, nodeID string) {
	if _, ok := ss.held[nodeID]; !ok {
		return
	}
	delete(ss.held, nodeID)
	if l.holders[nodeID]--; l.holders[nodeID] > 0 {
		return
	}
	delete(l.holders, nodeID)
	if l.deps.pullIn(nodeID, l.deps.grace) {
		l.deps.logger.Debug("no server holds the node's liveness session: heartbeat due within the grace", "node_id", nodeID, "grace", l.deps.grace)
	}
}

// sweep forgets servers that sent no digest for nodeSessionServerTimeout
// (nodeSessionServerTimeoutAlive while gossip lists them alive): the
// sessions they held count as lost.
func (l *sessionLedger) sweep() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.deps.now()
	for id, ss := range l.servers {
		silent := now.Sub(ss.lastSeen)
		if silent < nodeSessionServerTimeout || silent < nodeSessionServerTimeoutAlive && l.deps.serverAlive(id) {
			continue
		}
		l.deps.logger.Info("no node session digest from a server: the sessions it held count as lost", "server_id", id, "sessions", len(ss.held))
		for nodeID := range ss.held {
			l.lostLocked(ss, nodeID)
		}
		delete(l.servers, id)
	}
}

// runNodeSessions is the leader's duty that sweeps the ledger until stop.
func (s *Server) runNodeSessions(stop <-chan struct{}) {
	t := s.clock.NewTimer(nodeSessionDigestInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C():
		case <-stop:
			return
		}
		t.Reset(nodeSessionDigestInterval)
		s.ledger.sweep()
	}
}
