package structs

import "errors"

// ErrUnknownPeer is returned when a raft peer named for removal is not in
// the raft configuration.
var ErrUnknownPeer = errors.New("raft peer not found")

// ServerMember is one member of the servers' gossip pool, in the shape of
// upstream's GET /v1/agent/members entries.
type ServerMember struct {
	Name        string
	Addr        string
	Port        uint16
	Tags        map[string]string
	Status      string
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
	DelegateMin uint8
	DelegateMax uint8
	DelegateCur uint8
}

// ServerMembersResponse is the answering server's view of the gossip pool,
// with the server's own name, region and datacenter.
type ServerMembersResponse struct {
	ServerName   string
	ServerRegion string
	ServerDC     string
	Members      []*ServerMember
}

// RaftServer is one server of the raft configuration.
type RaftServer struct {
	// ID is the server's raft ID; Node its name in the gossip pool, or
	// "(unknown)" when the pool does not know it.
	ID   string
	Node string
	// Address is the server's raft (RPC) address, host:port.
	Address string
	Leader  bool
	Voter   bool
	// RaftProtocol is the raft protocol version the server advertises.
	RaftProtocol string
}

// RaftConfiguration is the raft membership at a raft index, the body of
// GET /v1/operator/raft/configuration.
type RaftConfiguration struct {
	Servers []*RaftServer
	Index   uint64
}

// RaftConfigurationResponse is Operator.RaftGetConfiguration's reply. The
// configuration is a named field: embedded, its Index would collide with
// QueryMeta's.
type RaftConfigurationResponse struct {
	Configuration RaftConfiguration
	QueryMeta
}

// RaftPeerByIDRequest names a raft peer to remove by its raft ID.
type RaftPeerByIDRequest struct {
	ID string
	WriteRequest
}

// RaftPeerByAddressRequest names a raft peer to remove by its address.
type RaftPeerByAddressRequest struct {
	Address string
	WriteRequest
}
