package nomad

import "github.com/nomad-edge/nomad/nomad/structs"

// Status is the Status.* RPC endpoint.
type Status struct {
	srv *Server
	// peer is who calls through this instance: HasNodeConn is for
	// servers only (requireServer).
	peer rpcPeer
}

// Leader returns the leader's RPC address, as the leader itself answers
// it: a follower forwards the call, as upstream does, so a leader that was
// killed is not named from a follower's stale view (the forward fails
// until a new one is elected). While no leader is known the call is held
// for up to rpcHoldTimeout (see leaderForCall), then fails with
// ErrNoLeader.
func (s *Status) Leader(args *structs.GenericRequest, reply *string) error {
	if done, err := s.srv.forward("Status.Leader", args, reply); done {
		return err
	}
	leader := s.srv.Leader()
	if leader == "" {
		return structs.ErrNoLeader
	}
	*reply = leader
	return nil
}

// Ping answers, for liveness checks.
func (s *Status) Ping(args *structs.GenericRequest, reply *struct{}) error { return nil }

// Peers returns the RPC addresses of the raft peers, as
// GET /v1/status/peers does.
func (s *Status) Peers(args *structs.GenericRequest, reply *[]string) error {
	if handled, err := s.srv.forwardRegion("Status.Peers", args, reply); handled {
		return err
	}
	cfg, _, err := s.srv.RaftConfiguration()
	if err != nil {
		return err
	}
	out := make([]string, 0, len(cfg.Servers))
	for _, srv := range cfg.Servers {
		out = append(out, string(srv.Address))
	}
	*reply = out
	return nil
}

// Members returns this server's view of the servers' gossip pool, as
// GET /v1/agent/members and `nomad server members` show it. Gossip is
// eventually consistent, so it is answered locally, never forwarded.
func (s *Status) Members(args *structs.GenericRequest, reply *structs.ServerMembersResponse) error {
	members := s.srv.Members()
	out := make([]*structs.ServerMember, 0, len(members))
	for _, m := range members {
		out = append(out, &structs.ServerMember{
			Name: m.Name, Addr: m.Addr.String(), Port: m.Port, Tags: m.Tags, Status: m.Status.String(),
			ProtocolMin: m.ProtocolMin, ProtocolMax: m.ProtocolMax, ProtocolCur: m.ProtocolCur,
			DelegateMin: m.DelegateMin, DelegateMax: m.DelegateMax, DelegateCur: m.DelegateCur,
		})
	}
	*reply = structs.ServerMembersResponse{
		ServerName:   s.srv.config.NodeName,
		ServerRegion: s.srv.config.Region,
		ServerDC:     s.srv.config.Datacenter,
		Members:      out,
	}
	return nil
}
