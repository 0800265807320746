package allocrunner

import (
	"net"
	"slices"
	"strconv"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// allocPorts returns the host ports the scheduler gave the allocation.
func allocPorts(alloc *structs.Allocation) structs.AllocatedPorts {
	if alloc == nil || alloc.AllocatedResources == nil {
		return nil
	}
	return alloc.AllocatedResources.Shared.Ports
}

// taskPorts are the allocation's ports in the driver's terms. A port
// naming a host network of its own carries that network's address, for
// the driver to publish it there only; the others are published on every
// address, as before host networks existed.
func taskPorts(alloc *structs.Allocation) []drivers.Port {
	ps := allocPorts(alloc)
	if len(ps) == 0 {
		return nil
	}
	named := map[string]bool{}
	if tg := alloc.LookupTaskGroup(); tg != nil {
		if nw := tg.GroupNetwork(); nw != nil {
			for _, p := range slices.Concat(nw.ReservedPorts, nw.DynamicPorts) {
				named[p.Label] = p.HostNetwork != "" && p.HostNetwork != structs.DefaultHostNetwork
			}
		}
	}
	out := make([]drivers.Port, len(ps))
	for i, p := range ps {
		out[i] = drivers.Port{Label: p.Label, Value: p.Value, To: p.To}
		if named[p.Label] {
			out[i].HostIP = p.HostIP
		}
	}
	return out
}

// addPortEnv sets upstream's per-port variables: NOMAD_PORT_<label> is
// the port the task listens on (`to` when set, else the host port),
// NOMAD_HOST_PORT_<label> the host port, NOMAD_ADDR_<label> and
// NOMAD_HOST_ADDR_<label> the host address, NOMAD_IP_<label> and
// NOMAD_HOST_IP_<label> the host IP. In bridge mode (bridge set),
// NOMAD_ALLOC_IP_<label> and NOMAD_ALLOC_ADDR_<label> are the allocation's
// own address on the bridge and that address with the port inside.
func addPortEnv(env map[string]string, alloc *structs.Allocation, bridge *allocnet.Status) {
	for _, p := range allocPorts(alloc) {
		inside := p.Value
		if p.To > 0 {
			inside = p.To
		}
		host := strconv.Itoa(p.Value)
		addr := net.JoinHostPort(p.HostIP, host)
		env["NOMAD_PORT_"+p.Label] = strconv.Itoa(inside)
		env["NOMAD_ALLOC_PORT_"+p.Label] = strconv.Itoa(inside)
		env["NOMAD_HOST_PORT_"+p.Label] = host
		env["NOMAD_IP_"+p.Label] = p.HostIP
		env["NOMAD_HOST_IP_"+p.Label] = p.HostIP
		env["NOMAD_ADDR_"+p.Label] = addr
		env["NOMAD_HOST_ADDR_"+p.Label] = addr
		if bridge != nil && bridge.Address != "" {
			env["NOMAD_ALLOC_IP_"+p.Label] = bridge.Address
			env["NOMAD_ALLOC_ADDR_"+p.Label] = net.JoinHostPort(bridge.Address, strconv.Itoa(inside))
		}
	}
}
