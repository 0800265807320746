package agent

import (
	"net/http"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// operatorRaftConfiguration handles GET /v1/operator/raft/configuration:
// the raft membership, answered by the leader unless ?stale.
func (s *HTTPServer) operatorRaftConfiguration(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	var reply structs.RaftConfigurationResponse
	if err := s.query(w, r, readCall{Method: "Operator.RaftGetConfiguration", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	reply.Configuration.Servers = nonNil(reply.Configuration.Servers)
	return reply.Configuration, nil
}

// operatorRaftPeer handles DELETE /v1/operator/raft/peer?id=... or
// ?address=...: removes a server from raft, on the leader.
func (s *HTTPServer) operatorRaftPeer(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	id, addr := q.Get("id"), q.Get("address")
	switch {
	case id == "" && addr == "":
		return nil, codedErrorf(http.StatusBadRequest, "Must specify either ?id with the server's ID or ?address with IP:port of peer to remove")
	case id != "" && addr != "":
		return nil, codedErrorf(http.StatusBadRequest, "Must specify only one of ?id or ?address")
	}
	var reply struct{}
	if id != "" {
		args := structs.RaftPeerByIDRequest{ID: id, WriteRequest: writeRequest(r)}
		return nil, s.call(r, "Operator.RaftRemovePeerByID", &args, &reply)
	}
	args := structs.RaftPeerByAddressRequest{Address: addr, WriteRequest: writeRequest(r)}
	return nil, s.call(r, "Operator.RaftRemovePeerByAddress", &args, &reply)
}
