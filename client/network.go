package client

import (
	"fmt"
	"net"

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
