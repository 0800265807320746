package allocnet

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
)

// Upstream's defaults for the client's bridge_network_* keys.
const (
	DefaultBridgeName = "nomad"
	DefaultSubnet     = "172.26.64.0/20"
	// DefaultNetnsDir is where namespaces are pinned, where `ip netns`
	// lists them.
	DefaultNetnsDir = "/var/run/netns"
	// AdminChainName is the iptables chain the firewall plugin leaves
	// for operators' own rules, as upstream names it.
	AdminChainName = "NOMAD-ADMIN"
	// IfName is the allocation's interface inside its namespace.
	IfName = "eth0"
)

// DefaultCNIPath is searched for the plugins when cni_path is unset:
// upstream's /opt/cni/bin, then where Debian's containernetworking-plugins
// installs them.
var DefaultCNIPath = []string{"/opt/cni/bin", "/usr/lib/cni"}

// Plugins are the CNI plugins bridge mode runs, in their order.
var Plugins = []string{"loopback", "bridge", "host-local", "firewall", "portmap"}

// bridgeNameRE is what Linux takes as an interface name (IFNAMSIZ-1 bytes,
// no slash or space).
var bridgeNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)

// BridgeConfig is the client's bridge_network_* settings.
type BridgeConfig struct {
	// Name is bridge_network_name; empty means DefaultBridgeName.
	Name string
	// Subnet is bridge_network_subnet, an IPv4 CIDR; empty means
	// DefaultSubnet.
	Subnet string
	// HairpinMode is bridge_network_hairpin_mode: traffic an allocation
	// sends to its own host port comes back through the bridge port it
	// left by.
	HairpinMode bool
}

// withDefaults fills the defaults and checks the values, naming the key.
func (b BridgeConfig) withDefaults() (BridgeConfig, error) {
	if b.Name == "" {
		b.Name = DefaultBridgeName
	}
	if b.Subnet == "" {
		b.Subnet = DefaultSubnet
	}
	if !bridgeNameRE.MatchString(b.Name) {
		return b, fmt.Errorf("bridge_network_name %q: not an interface name (1-15 letters, digits, '_', '.', '-')", b.Name)
	}
	p, err := netip.ParsePrefix(b.Subnet)
	if err != nil || !p.Addr().Is4() || p.Bits() > 30 {
		return b, fmt.Errorf("bridge_network_subnet %q: want an IPv4 CIDR with room for a gateway and allocations, such as %s", b.Subnet, DefaultSubnet)
	}
	b.Subnet = p.Masked().String()
	return b, nil
}

// conflist renders the CNI network configuration list of the bridge. The
// network is named after the bridge, so that two bridges never share IPAM
// leases or iptables chains; leases live under ipamDir.
func (b BridgeConfig) conflist(ipamDir string) ([]byte, error) {
	type obj = map[string]any
	list := obj{
		"cniVersion": "0.4.0",
		"name":       b.Name,
		"plugins": []obj{
			{"type": "loopback"},
			{
				"type":         "bridge",
				"bridge":       b.Name,
				"ipMasq":       true,
				"isGateway":    true,
				"forceAddress": true,
				"hairpinMode":  b.HairpinMode,
				"ipam": obj{
					"type":    "host-local",
					"ranges":  [][]obj{{{"subnet": b.Subnet}}},
					"routes":  []obj{{"dst": "0.0.0.0/0"}},
					"dataDir": filepath.Join(ipamDir, b.Name),
				},
			},
			{"type": "firewall", "backend": "iptables", "iptablesAdminChainName": AdminChainName},
			{"type": "portmap", "capabilities": obj{"portMappings": true}, "snat": true},
		},
	}
	return json.Marshal(list)
}
