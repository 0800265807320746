package nomad

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// heartbeatRetryDelay is how soon a missed heartbeat is handled again when
// writing its outcome failed (no quorum for a moment, a leader change).
const heartbeatRetryDelay = time.Second

// heartbeater keeps one TTL timer per live node on the leader. A client
// that does not heartbeat within its TTL plus the grace period is marked
// disconnected (when some allocation on it may still come back) or down.
type heartbeater struct {
	deps heartbeaterDeps

	mu     sync.Mutex
	timers map[string]*nodeTimer
	// gen numbers every arming, so an expiry that raced with a fresh
	// heartbeat sees it is stale and neither acts nor drops the new timer.
	gen uint64

	// nodeLocks serialise, per node (striped), a status change its client
	// asks for with the change its timer decides: without it a timer that
	// fires while a returning node's heartbeat is being written reads the
	// new status and turns it back (a heartbeat that made a disconnected
	// node initializing, followed a moment later by "heartbeat missed"),
	// and the client, told its heartbeat succeeded, has its allocation
	// updates refused until its next beat.
	// They are channels, not mutexes, because their holders wait for a
	// batched raft commit: a goroutine waiting for a mutex would keep a
	// testing/synctest bubble from advancing to the batch's window.
	nodeLocks [nodeLockStripes]chan struct{}
	seed      maphash.Seed
}

const nodeLockStripes = 1024

type nodeTimer struct {
	t   Timer
	gen uint64
	// at is when the timer fires; pulledFrom, when set, is the later
	// moment it was due at before the node's session was lost
	// (pullIn), to which restore sets it back.
	at         time.Time
	pulledFrom time.Time
}

// heartbeaterDeps are what the heartbeater needs from the server.
type heartbeaterDeps struct {
	// minTTL, maxPerSecond, grace and failoverTTL are the server's
	// MinHeartbeatTTL, MaxHeartbeatsPerSecond, HeartbeatGrace and
	// FailoverHeartbeatTTL.
	minTTL       time.Duration
	maxPerSecond float64
	grace        time.Duration
	failoverTTL  time.Duration

	clock  Clock
	logger hclog.Logger
	// jitter returns a random number in [0, n), to stagger the TTLs.
	jitter   func(n int64) int64
	isLeader func() bool
	state    func() *state.StateStore
	// missed decides what a node that missed its heartbeat becomes, and
	// when a disconnected one is looked at again.
	missed func(node *structs.Node) (status string, recheck time.Duration, err error)
	// setStatus writes a node's new status through raft.
	setStatus func(node *structs.Node, status string, event *structs.NodeEvent) (uint64, []*structs.Evaluation, error)
}

// heartbeaterDeps is what the server hands its heartbeater.
func (s *Server) heartbeaterDeps() heartbeaterDeps {
	return heartbeaterDeps{
		minTTL:       s.config.MinHeartbeatTTL,
		maxPerSecond: s.config.MaxHeartbeatsPerSecond,
		grace:        s.config.HeartbeatGrace,
		failoverTTL:  s.config.FailoverHeartbeatTTL,
		clock:        s.clock,
		logger:       s.logger,
		jitter:       s.rand.Int63n,
		isLeader:     s.IsLeader,
		state:        s.State,
		missed:       s.missedHeartbeatStatus,
		setStatus:    s.setNodeStatus,
	}
}

func newHeartbeater(deps heartbeaterDeps) *heartbeater {
	h := &heartbeater{deps: deps, timers: map[string]*nodeTimer{}, seed: maphash.MakeSeed()}
	for i := range h.nodeLocks {
		h.nodeLocks[i] = make(chan struct{}, 1)
	}
	return h
}

// lockNode takes the node's status lock and returns its release. The
// heartbeat and registration endpoints hold it from reading the node's
// status to re-arming its timer; an expiry holds it from checking that its
// timer is current to writing its decision.
func (h *heartbeater) lockNode(nodeID string) func() {
	m := h.nodeLocks[maphash.String(h.seed, nodeID)%nodeLockStripes]
	m <- struct{}{}
	return func() { <-m }
}

// reset (re)arms the node's timer and returns the TTL the client must keep
// and the number of live nodes timed. TTLs grow with the number of nodes so
// the leader handles at most max_heartbeats_per_second, and are staggered
// so clients spread out.
func (h *heartbeater) reset(nodeID string) (time.Duration, int) {
	d := h.deps
	h.mu.Lock()
	defer h.mu.Unlock()
	ttl := d.minTTL
	if d.maxPerSecond > 0 {
		scaled := time.Duration(float64(len(h.timers)) / d.maxPerSecond * float64(time.Second))
		ttl = max(ttl, scaled)
	}
	ttl += time.Duration(d.jitter(int64(ttl)/4 + 1))
	if d.isLeader() {
		h.armLocked(nodeID, ttl+d.grace)
	}
	return ttl, len(h.timers)
}

func (h *heartbeater) armLocked(nodeID string, d time.Duration) {
	if t, ok := h.timers[nodeID]; ok {
		t.t.Stop()
	}
	h.gen++
	gen := h.gen
	h.timers[nodeID] = &nodeTimer{gen: gen, at: h.deps.clock.Now().Add(d), t: h.deps.clock.AfterFunc(d, func() { h.expired(nodeID, gen) })}
}

// pullIn brings the node's timer in to fire within d, when it was due
// later: no server holds the node's session any more (see
// sessionLedger). It never pushes a timer later, and remembers where the
// timer stood so that restore can set it back.
func (h *heartbeater) pullIn(nodeID string, d time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.timers[nodeID]
	if !ok {
		return false
	}
	at := h.deps.clock.Now().Add(d)
	if !at.Before(t.at) {
		return false
	}
	from := t.at
	if !t.pulledFrom.IsZero() {
		from = t.pulledFrom
	}
	h.armLocked(nodeID, d)
	h.timers[nodeID].pulledFrom = from
	return true
}

// restore sets a timer pullIn brought in back to where it stood: a server
// holds the node's session again (a server restarted, the session moved),
// so the node is alive and its TTL rules again.
func (h *heartbeater) restore(nodeID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.timers[nodeID]
	if !ok || t.pulledFrom.IsZero() {
		return false
	}
	h.armLocked(nodeID, max(t.pulledFrom.Sub(h.deps.clock.Now()), 0))
	return true
}

// current reports whether gen is still the node's timer.
func (h *heartbeater) current(nodeID string, gen uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.timers[nodeID]
	return ok && t.gen == gen
}

// rearm arms the node's timer again after d, unless a heartbeat replaced
// timer gen meanwhile.
func (h *heartbeater) rearm(nodeID string, gen uint64, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.timers[nodeID]; ok && t.gen == gen {
		h.armLocked(nodeID, d)
	}
}

// clearGen drops the node's timer if it is still timer gen.
func (h *heartbeater) clearGen(nodeID string, gen uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.timers[nodeID]; ok && t.gen == gen {
		t.t.Stop()
		delete(h.timers, nodeID)
	}
}

// clear stops tracking a node (it went down or was removed).
func (h *heartbeater) clear(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.timers[nodeID]; ok {
		t.t.Stop()
		delete(h.timers, nodeID)
	}
}

// initialize gives every live node the failover TTL after this server
// becomes leader: clients need time to find the new leader. A disconnected
// node gets it too; its window is kept in its allocations' unknown-since
// times, so the leader change neither shortens nor restarts it.
func (h *heartbeater) initialize() error {
	iter, err := h.deps.state().Nodes(nil)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n := raw.(*structs.Node)
		if n.TerminalStatus() {
			continue
		}
		h.armLocked(n.ID, h.deps.failoverTTL)
	}
	return nil
}

// stopAll drops every timer when leadership is lost.
func (h *heartbeater) stopAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, t := range h.timers {
		t.t.Stop()
		delete(h.timers, id)
	}
}

// expired runs when timer gen of a node fired: the node missed its
// heartbeat, or it is disconnected and due for a re-check.
func (h *heartbeater) expired(nodeID string, gen uint64) {
	d := h.deps
	unlock := h.lockNode(nodeID)
	defer unlock()
	if !d.isLeader() || !h.current(nodeID, gen) {
		return
	}
	defer metrics.MeasureSince(keyHeartbeatInvalidate, time.Now())
	node, err := d.state().NodeByID(nil, nodeID)
	if err != nil || node == nil || node.TerminalStatus() {
		h.clearGen(nodeID, gen)
		return
	}
	status, recheck, err := d.missed(node)
	if err != nil {
		d.logger.Error("deciding node status after missed heartbeat; retrying", "node_id", nodeID, "error", err)
		h.rearm(nodeID, gen, heartbeatRetryDelay)
		return
	}
	if node.Status != status {
		event := structs.NewNodeEvent(structs.NodeEventSubsystemCluster, structs.NodeEventHeartbeatMissed, d.clock.Now())
		if _, _, err := d.setStatus(node, status, event); err != nil {
			// Never strand a node: try again after a short while.
			d.logger.Error("updating node status; retrying", "node_id", nodeID, "error", err)
			h.rearm(nodeID, gen, heartbeatRetryDelay)
			return
		}
		d.logger.Info("node missed its heartbeats", "node_id", nodeID, "node_name", node.Name, "from", node.Status, "to", status)
	}
	if status == structs.NodeStatusDown {
		h.clearGen(nodeID, gen)
		return
	}
	// A disconnected node keeps a timer: the rule is applied again when
	// its last window ends, or sooner (an allocation may have stopped).
	h.rearm(nodeID, gen, min(recheck, d.minTTL+d.grace))
}

// missedHeartbeatStatus decides what a node that missed its heartbeat
// becomes, and when a disconnected one must be looked at again.
func (s *Server) missedHeartbeatStatus(node *structs.Node) (string, time.Duration, error) {
	if ok, reason := s.disconnectGate(); !ok {
		if node.Status != structs.NodeStatusDown {
			s.logger.Info("disconnect windows not honoured: node goes down", "node_id", node.ID, "reason", reason)
		}
		return structs.NodeStatusDown, 0, nil
	}
	if !clientSupportsDisconnect(node) {
		s.logger.Info("node's client is too old to reconnect: node goes down", "node_id", node.ID,
			"client_version", node.Attributes["nomad.version"], "min_version", MinDisconnectVersion.String())
		return structs.NodeStatusDown, 0, nil
	}
	allocs, err := s.State().AllocsByNode(nil, node.ID)
	if err != nil {
		return "", 0, err
	}
	now := s.clock.Now()
	status, until := structs.StatusAfterMiss(node, allocs, now)
	return status, until.Sub(now), nil
}
