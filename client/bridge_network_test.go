package client

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocnet/allocnettest"
	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestClient_ReapsNetworksOfGoneAllocs checks that a client starting over
// the state of a killed agent tears down the bridge network of an
// allocation it does not restore, before it runs anything: without it,
// every kill -9 at the wrong moment would leak a namespace, a veth, an
// address lease and iptables rules for good.
func TestClient_ReapsNetworksOfGoneAllocs(t *testing.T) {
	env := allocnettest.New(t)
	stateDir := t.TempDir()
	env.Config.StateDir = filepath.Join(stateDir, "allocnet")
	gone := "ffffffff-0000-4000-8000-000000000001"
	left := env.Manager(t)
	_, err := left.Setup(context.Background(), allocnet.SetupInput{AllocID: gone, Ports: []allocnet.PortMapping{{Label: "http", HostPort: 45678, ContainerPort: 8080}}})
	must.NoError(t, err)
	t.Cleanup(func() { _ = left.Teardown(context.Background(), gone) })
	must.SliceNotEmpty(t, env.Leftovers(t, gone))

	srv := clienttest.NewFakeServer()
	defer srv.Close()
	c := newTestClient(t, srv, testClientOpts{stateDir: stateDir, bridge: BridgeNetworkConfig{
		BridgeConfig: env.Config.Bridge, NetnsDir: env.Config.NetnsDir,
	}})
	defer c.Shutdown()
	must.SliceEmpty(t, env.Leftovers(t, gone), must.Sprint(env.Leftovers(t, gone)))
	must.SliceEmpty(t, env.BridgePorts(t))
}

// TestClient_FingerprintsCNINetworks checks that the node registers one
// network mode cni/<name> per network of cni_config_dir, beside bridge:
// what the scheduler places cni-mode groups by.
func TestClient_FingerprintsCNINetworks(t *testing.T) {
	env := allocnettest.New(t)
	env.WriteCNINetwork(t, "mynet")
	srv := clienttest.NewFakeServer()
	defer srv.Close()
	c := newTestClient(t, srv, testClientOpts{stateDir: t.TempDir(), bridge: BridgeNetworkConfig{
		BridgeConfig: env.Config.Bridge, NetnsDir: env.Config.NetnsDir, CNIConfigDir: env.Config.CNIConfigDir,
	}})
	defer c.Shutdown()
	waitReady(t, c)
	node := srv.Node(c.NodeID())
	must.NotNil(t, node)
	must.True(t, node.HasNetworkMode("cni/mynet"))
	must.True(t, node.HasNetworkMode(structs.NetworkModeBridge))
	must.False(t, node.HasNetworkMode("cni/othernet"))
	// Upstream's attributes of the CNI path's plugins and the bridge.
	must.NotEq(t, "", node.Attributes["plugins.cni.version.bridge"], must.Sprint(node.Attributes))
	must.Eq(t, "false", node.Attributes["nomad.bridge.hairpin_mode"])
}
