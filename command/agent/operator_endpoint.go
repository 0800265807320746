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

// operatorSchedulerGet handles GET /v1/operator/scheduler/configuration:
// the scheduler configuration with the read's metadata, upstream's body.
func (s *HTTPServer) operatorSchedulerGet(w http.ResponseWriter, r *http.Request) (any, error) {
	var args structs.GenericRequest
	var reply structs.SchedulerConfigurationResponse
	if err := s.query(w, r, readCall{Method: "Operator.SchedulerGetConfiguration", Opts: &args.QueryOptions, Args: &args, Reply: &reply, Meta: &reply.QueryMeta}); err != nil {
		return nil, err
	}
	return reply, nil
}

// operatorSchedulerPut handles PUT (and POST) /v1/operator/scheduler/configuration:
// the body is the whole configuration; ?cas=<index> writes it only over
// the configuration stored at that index. The answer says whether it was
// written and at which index.
func (s *HTTPServer) operatorSchedulerPut(w http.ResponseWriter, r *http.Request) (any, error) {
	args := structs.SchedulerSetConfigRequest{WriteRequest: writeRequest(r)}
	if err := decodeBody(r, &args.Config); err != nil {
		return nil, err
	}
	var err error
	if args.Config.ModifyIndex, args.CAS, err = casParam(r); err != nil {
		return nil, err
	}
	var reply structs.SchedulerSetConfigurationResponse
	if err := s.call(r, "Operator.SchedulerSetConfiguration", &args, &reply); err != nil {
		return nil, err
	}
	setIndex(w, reply.Index)
	return reply, nil
}
