package nomad

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// ErrPeerNotFound is returned when a raft peer to remove is not in the
// configuration.
var ErrPeerNotFound = errors.New("no raft peer with that ID or address")

// reconcileInterval is how often the leader re-checks raft membership
// against serf even without an event, so a missed event cannot leave a
// joined server out of raft.
const reconcileInterval = 5 * time.Second

// triggerReconcile asks the leader's membership loop to run now.
func (s *Server) triggerReconcile() {
	select {
	case s.reconcileCh <- struct{}{}:
	default:
	}
}

// raftMembership keeps raft's configuration following serf while this
// server leads: servers that join become voters, servers that left are
// removed, and servers that stayed failed past DeadServerCleanup are
// removed (autopilot's dead-server cleanup, unless its CleanupDeadServers
// is off) as long as a majority of the voters, and MinQuorum, remains.
func (s *Server) raftMembership(stopCh <-chan struct{}) {
	failedSince := map[string]time.Time{}
	tick := time.NewTicker(reconcileInterval)
	defer tick.Stop()
	for {
		s.reconcilePeers(failedSince)
		select {
		case <-stopCh:
			return
		case <-s.reconcileCh:
		case <-tick.C:
		}
	}
}

func (s *Server) reconcilePeers(failedSince map[string]time.Time) {
	if s.serf == nil || !s.IsLeader() {
		return
	}
	fut := s.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		s.logger.Warn("reading raft configuration", "error", err)
		return
	}
	inRaft := map[raft.ServerID]raft.Server{}
	for _, srv := range fut.Configuration().Servers {
		inRaft[srv.ID] = srv
	}
	voters := len(inRaft)
	now := s.clock.Now()
	var dead []*serverParts
	for _, p := range s.regionServers() {
		if p.ID == "" || p.ID == s.id {
			continue
		}
		id := raft.ServerID(p.ID)
		cur, member := inRaft[id]
		switch p.Status {
		case serf.StatusAlive:
			delete(failedSince, p.ID)
			addr := raft.ServerAddress(p.RPCAddr.String())
			if member && cur.Address == addr {
				continue
			}
			if err := s.removeStaleAddress(inRaft, id, addr); err != nil {
				s.logger.Warn("removing a stale raft entry before adding a server", "name", p.Name, "address", addr, "error", err)
				continue
			}
			if err := s.raft.AddVoter(id, addr, 0, 0).Error(); err != nil {
				s.logger.Warn("adding server to raft", "name", p.Name, "error", err)
				continue
			}
			s.logger.Info("server added to raft", "name", p.Name, "id", p.ID, "address", addr)
		case serf.StatusLeft:
			delete(failedSince, p.ID)
			if member {
				s.removeRaftPeer(p, "left")
			}
		case serf.StatusFailed:
			if !member {
				continue
			}
			since, ok := failedSince[p.ID]
			if !ok {
				failedSince[p.ID] = now
				continue
			}
			if now.Sub(since) >= s.config.DeadServerCleanup {
				dead = append(dead, p)
			}
		}
	}
	for _, p := range deadToRemove(dead, voters, s.autopilotConfig()) {
		s.removeRaftPeer(p, "dead")
		delete(failedSince, p.ID)
	}
}

// deadToRemove picks which of the dead servers the cleanup removes: never
// so many that the rest could not form a majority of the old
// configuration (a partitioned minority is not ours to drop), nor so many
// that fewer than autopilot's MinQuorum voters remain, and none when its
// CleanupDeadServers is off.
func deadToRemove(dead []*serverParts, voters int, ap *structs.AutopilotConfig) []*serverParts {
	if !ap.CleanupDeadServers {
		return nil
	}
	var out []*serverParts
	for i, p := range dead {
		if i+1 > (voters-1)/2 || voters-(i+1) < int(ap.MinQuorum) {
			break
		}
		out = append(out, p)
	}
	return out
}

// removeStaleAddress removes the raft entry that holds addr under an ID
// other than id. A server whose data dir was wiped comes back on its old
// address with a new ID; raft refuses two entries for one address, so
// without this the server could never be added again, and the old entry,
// unknown to serf, would stay a voter forever.
func (s *Server) removeStaleAddress(inRaft map[raft.ServerID]raft.Server, id raft.ServerID, addr raft.ServerAddress) error {
	for oldID, srv := range inRaft {
		if srv.Address != addr || oldID == id {
			continue
		}
		if err := s.raft.RemoveServer(oldID, 0, 0).Error(); err != nil {
			return err
		}
		delete(inRaft, oldID)
		s.logger.Info("stale raft entry removed: its address now belongs to another server", "id", oldID, "address", addr, "new_id", id)
	}
	return nil
}

func (s *Server) removeRaftPeer(p *serverParts, why string) {
	if err := s.raft.RemoveServer(raft.ServerID(p.ID), 0, 0).Error(); err != nil {
		s.logger.Warn("removing server from raft", "name", p.Name, "error", err)
		return
	}
	s.logger.Info("server removed from raft", "name", p.Name, "id", p.ID, "reason", why)
}

// RaftConfiguration returns the current raft membership.
func (s *Server) RaftConfiguration() (raft.Configuration, uint64, error) {
	fut := s.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return raft.Configuration{}, 0, err
	}
	return fut.Configuration(), fut.Index(), nil
}

// RaftStats returns raft's own figures (last_log_index, applied_index,
// state, ...), as upstream's /v1/agent/self reports them under "raft".
func (s *Server) RaftStats() map[string]string { return s.raft.Stats() }

// RemoveRaftPeer removes a server from raft by ID or address, as
// `nomad operator raft remove-peer` does.
func (s *Server) RemoveRaftPeer(id, addr string) error {
	cfg, _, err := s.RaftConfiguration()
	if err != nil {
		return err
	}
	for _, srv := range cfg.Servers {
		if (id != "" && string(srv.ID) == id) || (addr != "" && string(srv.Address) == addr) {
			return s.raft.RemoveServer(srv.ID, 0, 0).Error()
		}
	}
	return ErrPeerNotFound
}
