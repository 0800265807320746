package nomad

import (
	"slices"
	"strings"

	"github.com/hashicorp/serf/serf"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// clientServers returns the servers a client should know of, for the
// heartbeat and registration responses: every server of the region that
// serf sees alive, so that a client configured with one server learns the
// others and fails over to them. A server without serf (-dev) lists itself.
func (s *Server) clientServers() []*structs.NodeServerInfo {
	var out []*structs.NodeServerInfo
	for _, p := range s.regionServers() {
		if p.Status != serf.StatusAlive {
			continue
		}
		out = append(out, &structs.NodeServerInfo{RPCAdvertiseAddr: p.RPCAddr.String(), Datacenter: p.Datacenter})
	}
	if len(out) == 0 {
		return []*structs.NodeServerInfo{{RPCAdvertiseAddr: s.rpcAdvertise.String(), Datacenter: s.config.Datacenter}}
	}
	slices.SortFunc(out, func(a, b *structs.NodeServerInfo) int { return strings.Compare(a.RPCAdvertiseAddr, b.RPCAdvertiseAddr) })
	return out
}
