package nomad

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// autopilotConfig is the configuration in effect: the one written through
// the API, or the agent's until one is.
func (s *Server) autopilotConfig() *structs.AutopilotConfig {
	if _, cfg, err := s.State().AutopilotConfig(nil); err == nil && cfg != nil {
		return cfg
	}
	return s.config.Autopilot.Copy()
}

// applyAutopilotConfig stores the configuration and answers whether it
// was written (a stale CAS is not), or an error.
func applyAutopilotConfig(f *nomadFSM, t structs.MessageType, body []byte, index uint64) any {
	var req structs.AutopilotSetConfigRequest
	if err := structs.Decode(body, &req); err != nil {
		return fmt.Errorf("decoding %s: %w", t, err)
	}
	updated, err := f.State().AutopilotSetConfig(index, &req.Config, req.CAS)
	if err != nil {
		return err
	}
	return updated
}

// AutopilotGetConfiguration returns the configuration in effect; until
// one is written, the agent's, at index 0. A blocking query.
func (op *Operator) AutopilotGetConfiguration(args *structs.GenericRequest, reply *structs.AutopilotConfigResponse) error {
	if done, err := op.srv.forwardQuery("Operator.AutopilotGetConfiguration", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := op.srv.authorize(args.AuthToken, permOperatorRead); err != nil {
		return err
	}
	return op.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		index, cfg, err := st.AutopilotConfig(ws)
		if err != nil {
			return 0, err
		}
		if cfg == nil {
			cfg = op.srv.config.Autopilot
		}
		reply.Config = cfg.Copy()
		return index, nil
	})
}

// AutopilotSetConfiguration writes the configuration, refusing by name
// what this version cannot honour. With CAS only over the stored
// configuration's ModifyIndex (0: none stored yet).
func (op *Operator) AutopilotSetConfiguration(args *structs.AutopilotSetConfigRequest, reply *structs.AutopilotSetConfigResponse) error {
	if done, err := op.srv.forward("Operator.AutopilotSetConfiguration", args, reply); done {
		return err
	}
	if err := op.srv.authorize(args.AuthToken, permOperatorWrite); err != nil {
		return err
	}
	if err := args.Config.Validate(); err != nil {
		return err
	}
	args.AuthToken = ""
	resp, index, err := op.srv.raftApply(structs.AutopilotConfigRequestType, args)
	if err != nil {
		return err
	}
	updated, ok := resp.(bool)
	if !ok {
		return fmt.Errorf("autopilot configuration: unexpected apply result %T", resp)
	}
	reply.Updated, reply.Index = updated, index
	return nil
}

// RaftStats reports this server's raft position, for the leader's health
// view.
func (s *Status) RaftStats(args *structs.GenericRequest, reply *structs.RaftStats) error {
	*reply = s.srv.raftStats()
	return nil
}

func (s *Server) raftStats() structs.RaftStats {
	st := structs.RaftStats{LastIndex: s.raft.LastIndex()}
	st.LastTerm, _ = strconv.ParseUint(s.raft.Stats()["last_log_term"], 10, 64)
	if !s.IsLeader() {
		st.LastContact = s.clock.Now().Sub(s.raft.LastContact())
	}
	return st
}

// stableSince remembers since when each server has been healthy without a
// break, for ServerStabilizationTime.
type stableSince struct {
	mu    sync.Mutex
	since map[string]time.Time
}

func (t *stableSince) observe(id string, healthy bool, now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.since == nil {
		t.since = map[string]time.Time{}
	}
	if !healthy {
		delete(t.since, id)
		return time.Time{}
	}
	if _, ok := t.since[id]; !ok {
		t.since[id] = now
	}
	return t.since[id]
}

// raftStatsTimeout bounds the leader's call to each server for its stats:
// a server that does not answer in time is unhealthy.
const raftStatsTimeout = 2 * time.Second

// ServerHealth returns the servers' health as the leader sees it, by
// upstream's rules: a server is healthy when gossip has it alive, it
// heard from the leader within LastContactThreshold, it is on the
// leader's term and no more than MaxTrailingLogs behind its index. The
// cluster is healthy when every server is; its failure tolerance is how
// many healthy voters, stable for ServerStabilizationTime, it could lose
// and keep a quorum.
func (op *Operator) ServerHealth(args *structs.GenericRequest, reply *structs.OperatorHealthReply) error {
	// Always the leader's view.
	if done, err := op.srv.forward("Operator.ServerHealth", args, reply); done {
		return err
	}
	if err := op.srv.authorize(args.AuthToken, permOperatorRead); err != nil {
		return err
	}
	s := op.srv
	cfg := s.autopilotConfig()
	conf, _, err := s.RaftConfiguration()
	if err != nil {
		return err
	}
	members := map[string]*serverParts{}
	for _, p := range s.regionServers() {
		members[p.ID] = p
	}
	leader := s.raftStats()
	now := s.clock.Now()
	type result struct {
		i     int
		stats structs.RaftStats
		err   error
	}
	out := make([]structs.ServerHealth, len(conf.Servers))
	results := make(chan result, len(conf.Servers))
	for i, srv := range conf.Servers {
		h := &out[i]
		h.ID, h.Address, h.Voter = string(srv.ID), string(srv.Address), srv.Suffrage == raft.Voter
		h.Name, h.SerfStatus, h.Version = s.LocalMemberName(), "alive", s.config.Version
		if p, ok := members[h.ID]; ok {
			h.Name, h.SerfStatus, h.Version = p.Name, p.Status.String(), p.Build
		} else if h.ID != s.id {
			h.Name, h.SerfStatus = "", "none"
		}
		if h.ID == s.id {
			h.Leader = true
			results <- result{i: i, stats: leader}
			continue
		}
		go func(i int, addr string) {
			var st structs.RaftStats
			err := s.connPool.RPC(addr, "Status.RaftStats", &structs.GenericRequest{
				QueryOptions: structs.QueryOptions{Region: s.config.Region, AllowStale: true}}, &st, raftStatsTimeout)
			results <- result{i: i, stats: st, err: err}
		}(i, h.Address)
	}
	for range conf.Servers {
		r := <-results
		h := &out[r.i]
		h.LastContact, h.LastTerm, h.LastIndex = r.stats.LastContact, r.stats.LastTerm, r.stats.LastIndex
		h.Healthy = r.err == nil && h.SerfStatus == "alive" &&
			(h.Leader || h.LastContact <= cfg.LastContactThreshold) &&
			h.LastTerm == leader.LastTerm && h.LastIndex+cfg.MaxTrailingLogs >= leader.LastIndex
		h.StableSince = s.stable.observe(h.ID, h.Healthy, now)
	}
	reply.Healthy = true
	healthyVoters, voters := 0, 0
	for _, h := range out {
		reply.Healthy = reply.Healthy && h.Healthy
		if h.Voter {
			voters++
			reply.Voters = append(reply.Voters, h.ID)
			// A voter counts towards the tolerance once it has been
			// healthy for ServerStabilizationTime.
			if h.Healthy && !h.StableSince.After(now.Add(-cfg.ServerStabilizationTime)) {
				healthyVoters++
			}
		}
		if h.Leader {
			reply.Leader = h.ID
		}
	}
	reply.FailureTolerance = max(0, healthyVoters-(voters/2+1))
	reply.Servers = out
	return nil
}
