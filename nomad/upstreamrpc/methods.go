package upstreamrpc

import (
	"sync"

	"github.com/hashicorp/go-version"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// AttrUpstream is the node attribute set on every node that registers
// over upstream's protocol: its nomad.version is upstream's numbering, not
// ours, and is judged by MinDisconnectVersion.
const AttrUpstream = "nomad.upstream"

// MinDisconnectVersion is upstream's first client version with the
// reconnect path the disconnected-clients rules rely on (an allocation
// unknown while its client is away, taken back on reconnect:
// max_client_disconnect, upstream 1.3.0). An older upstream client is
// treated as one without the feature: its node goes down, not
// disconnected.
var MinDisconnectVersion = version.Must(version.NewVersion("1.3.0"))

// clientMethods are the RPCs an upstream client agent makes to its
// servers that we serve: observed from a v1.6.5 client that registers,
// runs allocations and heartbeats, plus the reads it makes for a
// migrating allocation (Alloc.GetAlloc, Node.GetNode) and for its server
// list. Any other method is refused by name; in particular nothing that
// only servers or operators call passes here.
var clientMethods = map[string]bool{
	"Status.Ping":          true,
	"Status.Leader":        true,
	"Status.Peers":         true,
	"Status.Members":       true,
	"Node.Register":        true,
	"Node.UpdateStatus":    true,
	"Node.GetClientAllocs": true,
	"Node.UpdateAlloc":     true,
	"Node.EmitEvents":      true,
	"Node.GetNode":         true,
	"Alloc.GetAllocs":      true,
	"Alloc.GetAlloc":       true,
}

// session is what the translation remembers across the streams of one
// upstream connection.
type session struct {
	mu sync.Mutex
	// nodeIndex is the node modify index last told to each node.
	nodeIndex map[string]uint64
	// onNode, when set, is told once of each node whose call an endpoint
	// accepted (its secret checked, or its first registration).
	onNode func(nodeID string)
	nodes  map[string]bool
}

func newSession() *session { return &session{nodeIndex: map[string]uint64{}, nodes: map[string]bool{}} }

// sawNode records a node the session serves.
func (s *session) sawNode(nodeID string) {
	if nodeID == "" {
		return
	}
	s.mu.Lock()
	first := !s.nodes[nodeID]
	s.nodes[nodeID] = true
	s.mu.Unlock()
	if first && s.onNode != nil {
		s.onNode(nodeID)
	}
}

// translateRequest brings a decoded upstream request to our shape where
// the two differ beyond field names.
func translateRequest(method string, body any) error {
	switch args := body.(type) {
	case *structs.NodeRegisterRequest:
		markUpstream(args.Node)
	case *structs.AllocUpdateRequest:
		// Upstream names the node on each allocation only; ours on the
		// request, which is what the endpoint authorises.
		if args.NodeID == "" {
			args.NodeID = commonNodeID(args.Alloc)
		}
	}
	return nil
}

// markUpstream sets AttrUpstream on a node that is an upstream client's:
// one registering over upstream's protocol, or one read from an upstream
// snapshot (its client comes back over upstream's protocol, heartbeating
// without registering again).
func markUpstream(n *structs.Node) {
	if n == nil {
		return
	}
	if n.Attributes == nil {
		n.Attributes = map[string]string{}
	}
	n.Attributes[AttrUpstream] = "true"
}

// commonNodeID is the node all allocs name, or "" when they name none or
// several (the endpoint then refuses the update).
func commonNodeID(allocs []*structs.Allocation) string {
	id := ""
	for _, a := range allocs {
		if a == nil {
			continue
		}
		switch {
		case id == "":
			id = a.NodeID
		case a.NodeID != id:
			return ""
		}
	}
	return id
}

// translateReply brings our reply to upstream's shape before it is
// encoded. args is the call's request, as translateRequest left it.
func (s *session) translateReply(method string, args, reply any) {
	switch r := reply.(type) {
	case *structs.NodeUpdateResponse:
		nodeID := ""
		switch a := args.(type) {
		case *structs.NodeRegisterRequest:
			if a.Node != nil {
				nodeID = a.Node.ID
			}
		case *structs.NodeUpdateStatusRequest:
			nodeID = a.NodeID
		}
		s.heartbeatIndex(method, nodeID, r)
		s.sawNode(nodeID)
	case *structs.NodeClientAllocsResponse:
		if a, ok := args.(*structs.NodeSpecificRequest); ok {
			s.sawNode(a.NodeID)
		}
	}
}

// heartbeatIndex zeroes the indexes of a heartbeat that changed nothing.
// Upstream's client reads a non-zero Index in a Node.UpdateStatus reply as
// "the servers changed my status" (it logs a missed heartbeat); ours
// always carries the node's modify index.
func (s *session) heartbeatIndex(method, nodeID string, r *structs.NodeUpdateResponse) {
	if nodeID == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last, seen := s.nodeIndex[nodeID]
	s.nodeIndex[nodeID] = r.NodeModifyIndex
	if method == "Node.UpdateStatus" && seen && last == r.NodeModifyIndex && len(r.EvalIDs) == 0 {
		r.Index, r.NodeModifyIndex = 0, 0
	}
}
