package client

import (
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The node's network address comes from network_interface when it is set
// (an interface that does not exist is an error naming the key, not a
// silent fallback), else from the advertised address when that is a
// usable IP.
func TestFingerprintNetwork(t *testing.T) {
	attrs := map[string]string{}
	must.NoError(t, fingerprintNetwork(attrs, "lo", "10.1.2.3:4646"))
	must.Eq(t, "127.0.0.1", attrs[structs.NodeAttrNetworkIP])

	err := fingerprintNetwork(map[string]string{}, "wwan-none", "10.1.2.3:4646")
	must.ErrorContains(t, err, `client.network_interface "wwan-none": no such network interface`)

	attrs = map[string]string{}
	must.NoError(t, fingerprintNetwork(attrs, "", "10.1.2.3:4646"))
	must.Eq(t, "10.1.2.3", attrs[structs.NodeAttrNetworkIP])

	attrs = map[string]string{}
	must.NoError(t, fingerprintNetwork(attrs, "", "0.0.0.0:4646"))
	must.MapNotContainsKey(t, attrs, structs.NodeAttrNetworkIP)
}

// A client with network_interface registers its node with that
// interface's address, whatever address its HTTP API advertises; the
// scheduler hands that address out with the node's ports.
func TestClient_NetworkInterface(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c, err := NewClient(&Config{
			Logger: clienttest.Logger(), RPCHandler: srv, StateDB: state.NewMemDB(), AllocDir: t.TempDir(),
			NodeName: "n", HTTPAddr: "10.9.9.9:4646", NetworkInterface: "lo",
		})
		must.NoError(t, err)
		defer c.Destroy()
		waitReady(t, c)
		must.Eq(t, "127.0.0.1", srv.Node(c.NodeID()).Attributes[structs.NodeAttrNetworkIP])

		_, err = NewClient(&Config{
			Logger: clienttest.Logger(), RPCHandler: srv, StateDB: state.NewMemDB(), AllocDir: t.TempDir(),
			NodeName: "m", NetworkInterface: "does-not-exist0",
		})
		must.ErrorContains(t, err, `client.network_interface "does-not-exist0"`)
	})
}

// The client's host_network blocks become the node's host networks, each
// address found by interface and cidr; the node's network address serves
// "default"; a block no address matches is left out (its ports are not
// placed here) rather than failing the client.
func TestFingerprintHostNetworks(t *testing.T) {
	nets := []HostNetwork{
		{Name: "loopback", CIDR: "127.0.0.0/8", ReservedPorts: "22"},
		{Name: "by-iface", Interface: "lo"},
		{Name: "nowhere", CIDR: "203.0.113.0/24"},
	}
	got := fingerprintHostNetworks(nets, "10.1.2.3", "", clienttest.Logger())
	node := &structs.Node{NodeResources: &structs.NodeResources{NodeNetworks: got}}

	a, ok := node.HostNetworkAddress("loopback")
	must.True(t, ok)
	must.Eq(t, "127.0.0.1", a.Address)
	must.Eq(t, "22", a.ReservedPorts)
	must.Eq(t, "ipv4", a.Family)
	a, ok = node.HostNetworkAddress("by-iface")
	must.True(t, ok)
	must.Eq(t, "127.0.0.1", a.Address)
	_, ok = node.HostNetworkAddress("nowhere")
	must.False(t, ok)
	a, ok = node.HostNetworkAddress(structs.DefaultHostNetwork)
	must.True(t, ok)
	must.Eq(t, "10.1.2.3", a.Address)
}
