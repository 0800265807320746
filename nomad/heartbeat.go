package nomad

import (
	"sync"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// heartbeater keeps one TTL timer per live node on the leader. A client
// that does not heartbeat within its TTL plus the grace period is marked
// disconnected (when some allocation on it may still come back) or down.
type heartbeater struct {
	srv *Server

	mu     sync.Mutex
	timers map[string]Timer
}

func newHeartbeater(s *Server) *heartbeater {
	return &heartbeater{srv: s, timers: map[string]Timer{}}
}

// reset (re)arms the node's timer and returns the TTL the client must keep
// and the number of live nodes timed. TTLs grow with the number of nodes so
// the leader handles at most max_heartbeats_per_second, and are staggered
// so clients spread out.
func (h *heartbeater) reset(nodeID string) (time.Duration, int) {
	cfg := h.srv.config
	h.mu.Lock()
	defer h.mu.Unlock()
	ttl := cfg.MinHeartbeatTTL
	if cfg.MaxHeartbeatsPerSecond > 0 {
		scaled := time.Duration(float64(len(h.timers)) / cfg.MaxHeartbeatsPerSecond * float64(time.Second))
		ttl = max(ttl, scaled)
	}
	ttl += time.Duration(h.srv.rand.Int63n(int64(ttl)/4 + 1))
	if h.srv.IsLeader() {
		h.armLocked(nodeID, ttl+cfg.HeartbeatGrace)
	}
	return ttl, len(h.timers)
}

func (h *heartbeater) armLocked(nodeID string, d time.Duration) {
	if t, ok := h.timers[nodeID]; ok {
		t.Stop()
	}
	h.timers[nodeID] = h.srv.clock.AfterFunc(d, func() { h.expired(nodeID) })
}

// clear stops tracking a node (it went down or was removed).
func (h *heartbeater) clear(nodeID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.timers[nodeID]; ok {
		t.Stop()
		delete(h.timers, nodeID)
	}
}

// initialize gives every live node the failover TTL after this server
// becomes leader: clients need time to find the new leader.
func (h *heartbeater) initialize() error {
	iter, err := h.srv.State().Nodes(nil)
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
		h.armLocked(n.ID, h.srv.config.FailoverHeartbeatTTL)
	}
	return nil
}

// stopAll drops every timer when leadership is lost.
func (h *heartbeater) stopAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, t := range h.timers {
		t.Stop()
		delete(h.timers, id)
	}
}

// expired runs when a node missed its heartbeat.
func (h *heartbeater) expired(nodeID string) {
	s := h.srv
	if !s.IsLeader() {
		return
	}
	node, err := s.State().NodeByID(nil, nodeID)
	if err != nil || node == nil || node.TerminalStatus() {
		h.clear(nodeID)
		return
	}
	status, err := s.missedHeartbeatStatus(node)
	if err != nil {
		s.logger.Error("deciding node status after missed heartbeat", "node_id", nodeID, "error", err)
		return
	}
	s.logger.Warn("node missed its heartbeat", "node_id", nodeID, "status", status)
	event := structs.NewNodeEvent(structs.NodeEventSubsystemCluster, structs.NodeEventHeartbeatMissed, s.clock.Now())
	if node.Status != status {
		index, err := s.setNodeStatus(node, status, event)
		if err != nil {
			s.logger.Error("updating node status", "node_id", nodeID, "error", err)
			return
		}
		if _, _, err := s.createNodeEvals(nodeID, index); err != nil {
			s.logger.Error("creating node evaluations", "node_id", nodeID, "error", err)
		}
	}
	if status == structs.NodeStatusDown {
		h.clear(nodeID)
		return
	}
	// A disconnected node keeps a timer: at each expiry the rule is
	// applied again, so it goes down once the last window has passed.
	h.mu.Lock()
	h.armLocked(nodeID, s.config.MinHeartbeatTTL+s.config.HeartbeatGrace)
	h.mu.Unlock()
}

// missedHeartbeatStatus applies the rule of "Heartbeats and node status"
// (docs/concepts/disconnected-clients.md): a node that missed its
// heartbeat becomes disconnected iff it hosts an allocation that is desired
// run, running or unknown, whose group has a lost window not yet expired;
// otherwise down.
func (s *Server) missedHeartbeatStatus(node *structs.Node) (string, error) {
	if ok, reason := s.disconnectGate(); !ok {
		s.logger.Info("disconnect windows not honoured: node goes down", "node_id", node.ID, "reason", reason)
		return structs.NodeStatusDown, nil
	}
	if !clientSupportsDisconnect(node) {
		s.logger.Info("node's client is too old to reconnect: node goes down", "node_id", node.ID,
			"client_version", node.Attributes["nomad.version"], "min_version", MinDisconnectVersion.String())
		return structs.NodeStatusDown, nil
	}
	allocs, err := s.State().AllocsByNode(nil, node.ID)
	if err != nil {
		return "", err
	}
	now := s.clock.Now()
	for _, a := range allocs {
		if a.DesiredStatus != structs.AllocDesiredStatusRun {
			continue
		}
		switch a.ClientStatus {
		case structs.AllocClientStatusRunning:
			// Not yet marked unknown by the scheduler: its window runs
			// from the moment the node was found disconnected.
			window := a.LookupTaskGroup().LostAfter()
			if window <= 0 {
				continue
			}
			if node.Status != structs.NodeStatusDisconnected || now.Before(time.Unix(node.StatusUpdatedAt, 0).Add(window)) {
				return structs.NodeStatusDisconnected, nil
			}
		case structs.AllocClientStatusUnknown:
			if a.SupportsDisconnect() && !a.Expired(now) {
				return structs.NodeStatusDisconnected, nil
			}
		}
	}
	return structs.NodeStatusDown, nil
}
