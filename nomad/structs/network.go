package structs

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The range the scheduler picks dynamic ports from, per node: upstream's
// default min_dynamic_port and max_dynamic_port.
const (
	MinDynamicPort = 20000
	MaxDynamicPort = 32000
)

// Group network modes. In host mode (also what an empty mode means, as
// upstream) tasks share the host's network namespace and ports are host
// ports. In bridge mode the allocation gets a namespace of its own on the
// client's bridge, and each host port is mapped to its `to` port inside.
//
// A mode "cni/<name>" also gives the allocation a namespace of its own,
// configured by the CNI network of that name in the client's
// cni_config_dir.
const (
	NetworkModeHost   = "host"
	NetworkModeBridge = "bridge"
	// NetworkModeCNIPrefix starts a mode naming a CNI network.
	NetworkModeCNIPrefix = "cni/"
)

// IsBridge reports whether the network puts the allocation in a namespace
// of its own on the client's bridge.
func (n *NetworkResource) IsBridge() bool { return n != nil && n.Mode == NetworkModeBridge }

// CNIName returns the CNI network a "cni/<name>" mode names.
func (n *NetworkResource) CNIName() (string, bool) {
	if n == nil {
		return "", false
	}
	name, ok := strings.CutPrefix(n.Mode, NetworkModeCNIPrefix)
	if !ok || name == "" {
		return "", false
	}
	return name, true
}

// OwnNamespace reports whether the network gives the allocation a network
// namespace of its own: bridge and cni/<name> modes.
func (n *NetworkResource) OwnNamespace() bool {
	_, cni := n.CNIName()
	return n.IsBridge() || cni
}

// NamespaceNetwork returns the group's network if it gives the allocation
// a namespace of its own (bridge or cni/<name> mode).
func (tg *TaskGroup) NamespaceNetwork() (*NetworkResource, bool) {
	for _, n := range tg.Networks {
		if n.OwnNamespace() {
			return n, true
		}
	}
	return nil, false
}

// GroupNetwork returns the group's network block, nil when it has none.
func (tg *TaskGroup) GroupNetwork() *NetworkResource {
	for _, n := range tg.Networks {
		if n != nil {
			return n
		}
	}
	return nil
}

// NodeAttrNetworkIP is the node attribute holding the address its tasks'
// ports are reached at (upstream's name), set by the client's network
// fingerprint.
const NodeAttrNetworkIP = "unique.network.ip-address"

// DefaultHostNetwork is the host network a port without one is placed on:
// the node's network address (NodeAttrNetworkIP).
const DefaultHostNetwork = "default"

// ParsePortRanges parses a reserved ports list such as "22,80,8000-8100"
// into its ports, in order, each once.
func ParsePortRanges(spec string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(strings.TrimSpace(lo))
		last := first
		if err == nil && isRange {
			last, err = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err != nil || first < 1 || last > 65535 || first > last {
			return nil, fmt.Errorf("invalid port range %q: ports are 1-65535, a range is low-high", part)
		}
		for p := first; p <= last; p++ {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// NetworkResource is a group's `network` block.
type NetworkResource struct {
	Mode string
	// ReservedPorts are the ports with a `static` host port.
	ReservedPorts []Port
	// DynamicPorts are the ports the scheduler picks a host port for.
	DynamicPorts []Port
	// DNS is `dns { servers searches options }`: the resolv.conf the
	// tasks see instead of the host's. Nil: the host's.
	DNS *DNSConfig
	// Hostname is the allocation's host name in its own namespace
	// (bridge and cni modes only).
	Hostname string
}

// DNSConfig is a network's `dns` block, the lines of a resolv.conf.
type DNSConfig struct {
	Servers  []string
	Searches []string
	Options  []string
}

// Copy returns a deep copy.
func (d *DNSConfig) Copy() *DNSConfig {
	if d == nil {
		return nil
	}
	return &DNSConfig{Servers: slices.Clone(d.Servers), Searches: slices.Clone(d.Searches), Options: slices.Clone(d.Options)}
}

// Port is one `port "<label>" { static to }`. Value is the static host
// port (zero for a dynamic one); To is the port inside the task that the
// host port maps to, where the driver maps ports (docker).
type Port struct {
	Label       string
	Value       int
	To          int
	HostNetwork string
}

// AllocatedPortMapping is a port the scheduler gave an allocation.
type AllocatedPortMapping struct {
	Label  string
	Value  int
	To     int
	HostIP string
}

// Copy returns a deep copy.
func (n *NetworkResource) Copy() *NetworkResource {
	if n == nil {
		return nil
	}
	c := *n
	c.ReservedPorts = slices.Clone(n.ReservedPorts)
	c.DynamicPorts = slices.Clone(n.DynamicPorts)
	c.DNS = n.DNS.Copy()
	return &c
}

func copyNetworks(ns []*NetworkResource) []*NetworkResource {
	if ns == nil {
		return nil
	}
	out := make([]*NetworkResource, len(ns))
	for i, n := range ns {
		out[i] = n.Copy()
	}
	return out
}

// validateNetworks checks the group's network block: one block, host mode,
// unique labels, ports in range and no static port twice.
func (tg *TaskGroup) validateNetworks() []string {
	var p problems
	if len(tg.Networks) > 1 {
		p.add("Only one network block is allowed per group, got %d", len(tg.Networks))
	}
	labels := map[string]bool{}
	static := map[int]string{}
	for _, n := range tg.Networks {
		if n == nil {
			continue
		}
		_, cni := n.CNIName()
		switch {
		case n.Mode == "" || n.Mode == NetworkModeHost || n.Mode == NetworkModeBridge || cni:
		case strings.HasPrefix(n.Mode, NetworkModeCNIPrefix):
			p.add("Network mode %q needs a CNI network name after %q", n.Mode, NetworkModeCNIPrefix)
		default:
			p.add("Network mode %q is not supported: only %q (the default), %q and %q<name>", n.Mode, NetworkModeHost, NetworkModeBridge, NetworkModeCNIPrefix)
		}
		p = append(p, n.validateDNSAndHostname()...)
		for _, port := range slices.Concat(n.ReservedPorts, n.DynamicPorts) {
			switch {
			case port.Label == "":
				p.add("Network port must have a label")
			case labels[port.Label]:
				p.add("Network port label %q is used twice", port.Label)
			}
			labels[port.Label] = true
			if port.To < 0 || port.To > 65535 {
				p.add("Port %q: to %d is out of range 0-65535", port.Label, port.To)
			}
		}
		for _, port := range n.ReservedPorts {
			if port.Value < 1 || port.Value > 65535 {
				p.add("Port %q: static %d is out of range 1-65535", port.Label, port.Value)
				continue
			}
			if other, dup := static[port.Value]; dup {
				p.add("Port %q: static port %d is already used by port %q", port.Label, port.Value, other)
			}
			static[port.Value] = port.Label
		}
	}
	return p
}

// Copy returns a copy whose slice shares nothing with p.
func (p AllocatedPorts) Copy() AllocatedPorts { return slices.Clone(p) }

// AllocatedPorts are the host ports of an allocation.
type AllocatedPorts []AllocatedPortMapping

// HostPorts returns the host ports the allocations hold, for the scheduler
// and the plan applier to keep two allocations off one port.
func HostPorts(allocs []*Allocation) map[int]string {
	used := map[int]string{}
	for _, a := range allocs {
		if a == nil || a.AllocatedResources == nil {
			continue
		}
		for _, p := range a.AllocatedResources.Shared.Ports {
			used[p.Value] = a.ID
		}
	}
	return used
}

// PortCollision returns a host port two of allocs hold, if any.
func PortCollision(allocs []*Allocation) (int, bool) {
	seen := map[int]bool{}
	for _, a := range allocs {
		if a == nil || a.AllocatedResources == nil || a.TerminalStatus() {
			continue
		}
		for _, p := range a.AllocatedResources.Shared.Ports {
			if seen[p.Value] {
				return p.Value, true
			}
			seen[p.Value] = true
		}
	}
	return 0, false
}

// hostnameRE is an RFC 1123 host name: dot-separated labels of letters,
// digits and inner hyphens.
var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

// ValidHostname reports whether s is an RFC 1123 host name of at most 253
// characters.
func ValidHostname(s string) bool { return len(s) <= 253 && hostnameRE.MatchString(s) }

// validateDNSAndHostname checks the dns block's servers are IP addresses
// and its lines fit a resolv.conf, and that hostname is a host name set
// only where the allocation has a namespace (and so a host name) of its
// own.
func (n *NetworkResource) validateDNSAndHostname() []string {
	var p problems
	if d := n.DNS; d != nil {
		for _, s := range d.Servers {
			if _, err := netip.ParseAddr(s); err != nil {
				p.add("network.dns.servers: %q is not an IP address", s)
			}
		}
		for _, l := range [][]string{d.Searches, d.Options} {
			for _, v := range l {
				if v == "" || strings.ContainsAny(v, " \t\r\n#;") {
					p.add("network.dns: %q is not one search domain or option (no spaces, newlines or comments)", v)
				}
			}
		}
	}
	if n.Hostname != "" {
		switch {
		case !n.OwnNamespace():
			p.add("network.hostname needs network mode %q or %q<name>: in host mode tasks share the host's name", NetworkModeBridge, NetworkModeCNIPrefix)
		case strings.Contains(n.Hostname, "${"):
			// Interpolated on the client, which checks the result
			// (ValidHostname) before the allocation starts.
		case !ValidHostname(n.Hostname):
			p.add("network.hostname %q is not a valid host name (letters, digits, '-' and '.', or ${...} interpolation)", n.Hostname)
		}
	}
	return p
}
