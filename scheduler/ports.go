package scheduler

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// filterPorts is the reason recorded for a node whose host ports cannot
// serve the group's network block.
const filterPorts = "network: port collision"

// errNoDynamicPort is returned when a node's dynamic range is full.
var errNoDynamicPort = errors.New("dynamic port range exhausted")

// errMissingHostNetwork is wrapped when a port names a host network the
// node does not have; the node is filtered with the error's text.
var errMissingHostNetwork = errors.New("missing host network")

// portChecker rejects nodes that cannot serve the group's network block:
// without its network mode, where a static port of the group is taken, or
// where the dynamic range has no room for the group's dynamic ports.
type portChecker struct {
	ctx *EvalContext
	tg  *structs.TaskGroup
}

func newPortChecker(ctx *EvalContext) *portChecker { return &portChecker{ctx: ctx} }

// SetTaskGroup sets the group whose ports are checked.
func (c *portChecker) SetTaskGroup(tg *structs.TaskGroup) { c.tg = tg }

// filterNetworkMode is upstream's reason for a node whose client cannot
// give the group's network mode (no bridge: not root, no CNI plugins).
const filterNetworkMode = "missing network"

func (c *portChecker) Feasible(n *structs.Node) bool {
	if c.tg != nil {
		if nw, ok := c.tg.NamespaceNetwork(); ok && !n.HasNetworkMode(nw.Mode) {
			c.ctx.filterNode(n, filterNetworkMode)
			return false
		}
	}
	if !hasPorts(c.tg) {
		return true
	}
	if _, err := c.ctx.assignPorts(n, c.tg); err != nil {
		reason := filterPorts
		if errors.Is(err, errMissingHostNetwork) {
			reason = err.Error()
		}
		c.ctx.filterNode(n, reason)
		return false
	}
	return true
}

func hasPorts(tg *structs.TaskGroup) bool {
	if tg == nil {
		return false
	}
	for _, nw := range tg.Networks {
		if nw != nil && len(nw.ReservedPorts)+len(nw.DynamicPorts) > 0 {
			return true
		}
	}
	return false
}

// assignPorts picks the host ports of one new allocation of tg on node:
// its static ports, and for each dynamic port a free port of the node's
// dynamic range. Ports held by the node's proposed allocations (this plan's
// placements included) are never handed out twice. The pick is random, so
// that concurrent evaluations rarely race for a port the plan applier would
// then refuse, and seeded from the evaluation so that it can be replayed.
func (c *EvalContext) assignPorts(node *structs.Node, tg *structs.TaskGroup) (structs.AllocatedPorts, error) {
	if !hasPorts(tg) {
		return nil, nil
	}
	proposed, err := c.ProposedAllocs(node.ID)
	if err != nil {
		return nil, err
	}
	// A port is held on the node whatever address it was given: more
	// cautious than upstream, which tracks ports per address, and never
	// wrong.
	used := structs.HostPorts(proposed)
	// The client's reserved.reserved_ports hold on every address.
	var nodeReserved map[int]bool
	if r := node.ReservedResources; r != nil {
		nodeReserved = reservedSet(r.Networks.ReservedHostPorts)
	}
	lo, hi := dynamicRange(node)
	var out structs.AllocatedPorts
	for _, nw := range tg.Networks {
		for _, p := range nw.ReservedPorts {
			addr, err := portAddress(node, p)
			if err != nil {
				return nil, err
			}
			if _, taken := used[p.Value]; taken || addr.reserved[p.Value] || nodeReserved[p.Value] {
				return nil, fmt.Errorf("static port %d is in use", p.Value)
			}
			used[p.Value] = ""
			out = append(out, structs.AllocatedPortMapping{Label: p.Label, Value: p.Value, To: p.To, HostIP: addr.ip})
		}
	}
	rng := rand.New(rand.NewPCG(portSeed(c.plan.EvalID, node.ID, tg.Name), uint64(len(proposed))))
	for _, nw := range tg.Networks {
		for _, p := range nw.DynamicPorts {
			addr, err := portAddress(node, p)
			if err != nil {
				return nil, err
			}
			v, err := pickDynamicPort(rng, portRange{lo: lo, hi: hi, used: used, reserved: addr.reserved, nodeReserved: nodeReserved})
			if err != nil {
				return nil, err
			}
			used[v] = ""
			out = append(out, structs.AllocatedPortMapping{Label: p.Label, Value: v, To: p.To, HostIP: addr.ip})
		}
	}
	return out, nil
}

// hostAddress is where a port is placed on a node: the address, and the
// ports its host network reserves.
type hostAddress struct {
	ip       string
	reserved map[int]bool
}

// portAddress resolves p's host network on node: "default" (or none) is
// the node's network address; another name must be one of the node's
// host networks (client host_network blocks), or the node cannot take
// the port.
func portAddress(node *structs.Node, p structs.Port) (hostAddress, error) {
	if p.HostNetwork == "" || p.HostNetwork == structs.DefaultHostNetwork {
		if a, ok := node.HostNetworkAddress(structs.DefaultHostNetwork); ok {
			return hostAddress{ip: a.Address, reserved: reservedSet(a.ReservedPorts)}, nil
		}
		return hostAddress{ip: nodeIP(node)}, nil
	}
	a, ok := node.HostNetworkAddress(p.HostNetwork)
	if !ok {
		return hostAddress{}, fmt.Errorf("%w %q for port %q", errMissingHostNetwork, p.HostNetwork, p.Label)
	}
	return hostAddress{ip: a.Address, reserved: reservedSet(a.ReservedPorts)}, nil
}

// reservedSet is a host network's reserved_ports as a set; the client
// checked the list, so a malformed one reserves nothing.
func reservedSet(spec string) map[int]bool {
	if spec == "" {
		return nil
	}
	ports, _ := structs.ParsePortRanges(spec)
	out := make(map[int]bool, len(ports))
	for _, p := range ports {
		out[p] = true
	}
	return out
}

// nodeIP is the address the node's ports are reached at: the address its
// client fingerprinted (client network_interface), else the host of the
// address it advertises.
func nodeIP(node *structs.Node) string {
	if ip := node.Attributes[structs.NodeAttrNetworkIP]; ip != "" {
		return ip
	}
	host, _, _ := strings.Cut(node.HTTPAddr, ":")
	return host
}

// portRange is where a dynamic port may be picked: [lo, hi] less the
// ports in use and those the address or the node reserves.
type portRange struct {
	lo, hi       int
	used         map[int]string
	reserved     map[int]bool
	nodeReserved map[int]bool
}

func (r portRange) free(v int) bool {
	_, taken := r.used[v]
	return !taken && !r.reserved[v] && !r.nodeReserved[v]
}

// dynamicRange is the node's dynamic port range (client min_dynamic_port
// and max_dynamic_port), upstream's default where the node says none.
func dynamicRange(node *structs.Node) (lo, hi int) {
	lo, hi = structs.MinDynamicPort, structs.MaxDynamicPort
	if res := node.NodeResources; res != nil && res.MinDynamicPort > 0 && res.MaxDynamicPort >= res.MinDynamicPort {
		lo, hi = res.MinDynamicPort, res.MaxDynamicPort
	}
	return lo, hi
}

// pickDynamicPort tries random ports, then scans from a random start so
// that a nearly full range still yields its last free port.
func pickDynamicPort(rng *rand.Rand, r portRange) (int, error) {
	span := r.hi - r.lo + 1
	for range 20 {
		if v := r.lo + rng.IntN(span); r.free(v) {
			return v, nil
		}
	}
	start := rng.IntN(span)
	for i := range span {
		if v := r.lo + (start+i)%span; r.free(v) {
			return v, nil
		}
	}
	return 0, errNoDynamicPort
}

func portSeed(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// placePorts gives a new allocation its host ports on the chosen node.
// The checker accepted the node, so an error here means the state changed
// between the two calls; the plan applier has the last word anyway.
func (c *EvalContext) placePorts(alloc *structs.Allocation, node *structs.Node, tg *structs.TaskGroup) {
	ports, err := c.assignPorts(node, tg)
	if err != nil {
		c.logger.Warn("assigning ports", "node_id", node.ID, "group", tg.Name, "error", err)
		return
	}
	alloc.AllocatedResources.Shared.Ports = ports
}

// keepPorts carries an allocation's host ports across an in-place update,
// which rebuilds its resources from the group: the task keeps running on
// the ports it has.
func keepPorts(upd, old *structs.Allocation) {
	if old.AllocatedResources != nil && upd.AllocatedResources != nil {
		upd.AllocatedResources.Shared.Ports = old.AllocatedResources.Shared.Ports.Copy()
	}
}
