package client

import (
	"fmt"
	"net"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// fingerprintNetwork sets the node's network address: that of iface when
// the client names one (network_interface, -network-interface), failing
// if it has none; otherwise the host of the advertised HTTP address, when
// it is an IP other than the unspecified one. Upstream falls back to the
// interface of the default route instead: here the node keeps the address
// it already advertises, which on a machine with several links (LTE and
// a LAN) is the one its operator chose.
func fingerprintNetwork(attrs map[string]string, iface, httpAddr string) error {
	if iface != "" {
		ip, err := interfaceIP(iface)
		if err != nil {
			return fmt.Errorf("client.network_interface %q: %w", iface, err)
		}
		attrs[structs.NodeAttrNetworkIP] = ip
		return nil
	}
	host, _, err := net.SplitHostPort(httpAddr)
	if err != nil {
		host = httpAddr
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		attrs[structs.NodeAttrNetworkIP] = ip.String()
	}
	return nil
}

// interfaceIP returns the first IPv4 address of the named interface, or
// its first IPv6 one when it has no IPv4 address; link-local addresses
// only when there is nothing else.
func interfaceIP(name string) (string, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return "", fmt.Errorf("no such network interface: %w", err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return "", fmt.Errorf("reading its addresses: %w", err)
	}
	var v4, v6, linkLocal net.IP
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip := ipn.IP
		switch {
		case ip.IsLinkLocalUnicast():
			if linkLocal == nil {
				linkLocal = ip
			}
		case ip.To4() != nil:
			if v4 == nil {
				v4 = ip
			}
		case v6 == nil:
			v6 = ip
		}
	}
	for _, ip := range []net.IP{v4, v6, linkLocal} {
		if ip != nil {
			return ip.String(), nil
		}
	}
	return "", fmt.Errorf("the interface has no IP address")
}

// HostNetwork is one client host_network block: the address of Interface
// (any interface when empty) within CIDR (any address when empty) serves
// the host network Name; ReservedPorts ("22,8000-8100") are never handed
// out on it.
type HostNetwork struct {
	Name          string
	CIDR          string
	Interface     string
	ReservedPorts string
}

// fingerprintHostNetworks returns the node's host networks, upstream's
// shape: one entry per interface, each address with the host network it
// serves. The node's network address serves "default" unless a block of
// that name says otherwise. A block no address matches is left out with a
// warning: ports naming it are then not placed on this node ("missing host
// network"), which is upstream's behaviour too.
func fingerprintHostNetworks(nets []HostNetwork, defaultIP, defaultIface string, logger hclog.Logger) []*structs.NodeNetworkResource {
	byDevice := map[string]*structs.NodeNetworkResource{}
	var out []*structs.NodeNetworkResource
	add := func(device string, a structs.NodeNetworkAddress) {
		nw := byDevice[device]
		if nw == nil {
			nw = &structs.NodeNetworkResource{Mode: structs.NetworkModeHost, Device: device}
			byDevice[device] = nw
			out = append(out, nw)
		}
		nw.Addresses = append(nw.Addresses, a)
	}
	hasDefault := false
	for _, hn := range nets {
		device, ip, err := hostNetworkAddress(hn)
		if err != nil {
			logger.Warn("host network has no address on this machine: ports naming it are not placed here", "host_network", hn.Name, "error", err)
			continue
		}
		hasDefault = hasDefault || hn.Name == structs.DefaultHostNetwork
		add(device, structs.NodeNetworkAddress{Family: family(ip), Alias: hn.Name, Address: ip.String(), ReservedPorts: hn.ReservedPorts})
	}
	if ip := net.ParseIP(defaultIP); ip != nil && !hasDefault {
		add(defaultIface, structs.NodeNetworkAddress{Family: family(ip), Alias: structs.DefaultHostNetwork, Address: ip.String()})
	}
	return out
}

// hostNetworkAddress finds the interface and address a host_network block
// names: the first address of its interface (or of any interface) that
// lies in its cidr (or any, with no cidr).
func hostNetworkAddress(hn HostNetwork) (string, net.IP, error) {
	var cidr *net.IPNet
	if hn.CIDR != "" {
		_, n, err := net.ParseCIDR(hn.CIDR)
		if err != nil {
			return "", nil, fmt.Errorf("cidr %q: %w", hn.CIDR, err)
		}
		cidr = n
	}
	var ifaces []net.Interface
	if hn.Interface != "" {
		ifc, err := net.InterfaceByName(hn.Interface)
		if err != nil {
			return "", nil, fmt.Errorf("no such network interface %q: %w", hn.Interface, err)
		}
		ifaces = []net.Interface{*ifc}
	} else {
		all, err := net.Interfaces()
		if err != nil {
			return "", nil, err
		}
		ifaces = all
	}
	for _, ifc := range ifaces {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || (cidr != nil && !cidr.Contains(ipn.IP)) {
				continue
			}
			return ifc.Name, ipn.IP, nil
		}
	}
	return "", nil, fmt.Errorf("no address in %q on %q", hn.CIDR, hn.Interface)
}

func family(ip net.IP) string {
	if ip.To4() != nil {
		return "ipv4"
	}
	return "ipv6"
}
