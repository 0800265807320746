package client

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocnet/allocnettest"
	"github.com/nomad-edge/nomad/client/clienttest"
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
