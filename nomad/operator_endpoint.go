package nomad

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Operator is the Operator.* RPC endpoint: the raft membership as operators
// inspect and repair it (`nomad operator raft ...`).
type Operator struct {
	srv *Server
}

// unknownNode is the Node of a raft server the gossip pool does not know,
// upstream's placeholder.
const unknownNode = "(unknown)"

// RaftGetConfiguration returns the raft membership, each server with its
// gossip name, whether it leads and whether it votes. Like every read it is
// answered by the leader unless AllowStale.
func (op *Operator) RaftGetConfiguration(args *structs.GenericRequest, reply *structs.RaftConfigurationResponse) error {
	if done, err := op.srv.forwardQuery("Operator.RaftGetConfiguration", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := op.srv.authorize(args.AuthToken, permOperatorRead); err != nil {
		return err
	}
	cfg, index, err := op.srv.RaftConfiguration()
	if err != nil {
		return err
	}
	members := membersByRaftID(op.srv.Members())
	leader := raft.ServerAddress(op.srv.Leader())
	servers := make([]*structs.RaftServer, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		rs := &structs.RaftServer{
			ID:           string(s.ID),
			Node:         unknownNode,
			Address:      string(s.Address),
			Leader:       leader != "" && s.Address == leader,
			Voter:        s.Suffrage == raft.Voter,
			RaftProtocol: "unknown",
		}
		if m, ok := members[string(s.ID)]; ok {
			rs.Node = m.Name
			if v := m.Tags[serfTagRaftVsn]; v != "" {
				rs.RaftProtocol = v
			}
		}
		servers = append(servers, rs)
	}
	reply.Configuration = structs.RaftConfiguration{Servers: servers, Index: index}
	op.srv.setQueryMeta(&reply.QueryMeta, index)
	return nil
}

// RaftRemovePeerByID removes a server from raft by its raft ID. A server
// that is still alive in the gossip pool is added back by the leader's
// membership loop: this is for servers that are gone for good.
func (op *Operator) RaftRemovePeerByID(args *structs.RaftPeerByIDRequest, reply *struct{}) error {
	if done, err := op.srv.forward("Operator.RaftRemovePeerByID", args, reply); done {
		return err
	}
	if err := op.srv.authorize(args.AuthToken, permOperatorWrite); err != nil {
		return err
	}
	if args.ID == "" {
		return fmt.Errorf("%w: raft peer ID", structs.ErrMissingField)
	}
	return op.removePeer(args.ID, "", fmt.Sprintf("id %q", args.ID))
}

// RaftRemovePeerByAddress removes a server from raft by its raft address
// (host:port), for a peer whose ID the operator does not know.
func (op *Operator) RaftRemovePeerByAddress(args *structs.RaftPeerByAddressRequest, reply *struct{}) error {
	if done, err := op.srv.forward("Operator.RaftRemovePeerByAddress", args, reply); done {
		return err
	}
	if err := op.srv.authorize(args.AuthToken, permOperatorWrite); err != nil {
		return err
	}
	if args.Address == "" {
		return fmt.Errorf("%w: raft peer address", structs.ErrMissingField)
	}
	return op.removePeer("", args.Address, fmt.Sprintf("address %q", args.Address))
}

func (op *Operator) removePeer(id, addr, what string) error {
	err := op.srv.RemoveRaftPeer(id, addr)
	if errors.Is(err, ErrPeerNotFound) {
		return fmt.Errorf("%w: %s is not in the raft configuration", structs.ErrUnknownPeer, what)
	}
	if err != nil {
		return fmt.Errorf("removing raft peer with %s: %w", what, err)
	}
	op.srv.logger.Warn("removed raft peer on operator request", "peer", what)
	return nil
}

// membersByRaftID indexes the Nomad servers of the gossip pool by the raft
// ID they advertise.
func membersByRaftID(members []serf.Member) map[string]serf.Member {
	out := make(map[string]serf.Member, len(members))
	for _, m := range members {
		if id := m.Tags[serfTagID]; id != "" && m.Tags[serfTagRole] == serfRoleNomad {
			out[id] = m
		}
	}
	return out
}

// setQueryMeta fills a read's metadata for an answer at index: whether a
// leader is known and, on a follower, how long since it heard from it.
func (s *Server) setQueryMeta(m *structs.QueryMeta, index uint64) {
	m.Index = max(index, 1)
	m.KnownLeader = s.Leader() != ""
	if !s.IsLeader() {
		m.LastContact = s.clock.Now().Sub(s.raft.LastContact())
	}
}

// SchedulerGetConfiguration returns the scheduler configuration, the
// default until one is written. A blocking query.
func (op *Operator) SchedulerGetConfiguration(args *structs.GenericRequest, reply *structs.SchedulerConfigurationResponse) error {
	if done, err := op.srv.forwardQuery("Operator.SchedulerGetConfiguration", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := op.srv.authorize(args.AuthToken, permOperatorRead); err != nil {
		return err
	}
	return op.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		index, cfg, err := st.SchedulerConfig(ws)
		if err != nil {
			return 0, err
		}
		reply.SchedulerConfig = cfg.Copy()
		return index, nil
	})
}

// SchedulerSetConfiguration writes the scheduler configuration, refusing
// by name a value this version cannot honour. With CAS it writes only over
// the stored configuration's ModifyIndex; reply.Updated says whether it
// did.
func (op *Operator) SchedulerSetConfiguration(args *structs.SchedulerSetConfigRequest, reply *structs.SchedulerSetConfigurationResponse) error {
	if done, err := op.srv.forward("Operator.SchedulerSetConfiguration", args, reply); done {
		return err
	}
	if err := op.srv.authorize(args.AuthToken, permOperatorWrite); err != nil {
		return err
	}
	if err := args.Config.Validate(); err != nil {
		return err
	}
	if args.Config.SchedulerAlgorithm == "" {
		args.Config.SchedulerAlgorithm = structs.SchedulerAlgorithmBinpack
	}
	args.AuthToken = ""
	resp, index, err := op.srv.raftApply(structs.SchedulerConfigRequestType, args)
	if err != nil {
		return err
	}
	updated, ok := resp.(bool)
	if !ok {
		return fmt.Errorf("scheduler configuration: unexpected apply result %T", resp)
	}
	reply.Updated, reply.Index = updated, index
	return nil
}
