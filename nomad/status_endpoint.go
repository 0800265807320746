package nomad

import "github.com/nomad-edge/nomad/nomad/structs"

// Status is the Status.* RPC endpoint.
type Status struct {
	srv *Server
}

// Leader returns the leader's RPC address, or an error when there is none.
func (s *Status) Leader(args *structs.GenericRequest, reply *string) error {
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
