package client

import (
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The operator's totals, reservation, port range and allocation cap are
// what the node registers with, over the fingerprint: the scheduler acts
// on the node the servers hold, so a setting that stayed on the client
// would be stored and ignored.
func TestClient_NodeResourcesConfig(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		reserved := &structs.NodeReservedResources{
			Cpu:      structs.NodeReservedCpuResources{CpuShares: 300},
			Memory:   structs.NodeReservedMemoryResources{MemoryMB: 64},
			Disk:     structs.NodeReservedDiskResources{DiskMB: 10},
			Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "22"},
		}
		c := newTestClient(t, srv, testClientOpts{resources: NodeResourcesConfig{
			Reserved: reserved, CPUTotalCompute: 1234, MemoryTotalMB: 2048,
			MinDynamicPort: 40000, MaxDynamicPort: 40100, NodeMaxAllocs: 7,
		}})
		defer c.Destroy()
		waitReady(t, c)

		n := srv.Node(c.NodeID())
		must.Eq(t, 1234, n.NodeResources.Cpu.CpuShares)
		must.Eq(t, "1234", n.Attributes["cpu.totalcompute"])
		must.Eq(t, 2048, n.NodeResources.Memory.MemoryMB)
		must.Eq(t, "2147483648", n.Attributes["memory.totalbytes"])
		must.Eq(t, 40000, n.NodeResources.MinDynamicPort)
		must.Eq(t, 40100, n.NodeResources.MaxDynamicPort)
		must.Eq(t, reserved, n.ReservedResources)
		must.Eq(t, 7, n.NodeMaxAllocs)
	})
}

// Without settings the node offers upstream's dynamic range and no cap.
func TestClient_NodeResourcesDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		waitReady(t, c)
		n := srv.Node(c.NodeID())
		must.Eq(t, structs.MinDynamicPort, n.NodeResources.MinDynamicPort)
		must.Eq(t, structs.MaxDynamicPort, n.NodeResources.MaxDynamicPort)
		must.Zero(t, n.NodeMaxAllocs)
	})
}

// A range that leaves no port, or a malformed reserved_ports, is refused
// when the client starts, naming the key.
func TestClient_NodeResourcesInvalid(t *testing.T) {
	for _, tc := range []struct {
		res  NodeResourcesConfig
		want string
	}{
		{NodeResourcesConfig{MinDynamicPort: 30000, MaxDynamicPort: 20000}, "min_dynamic_port (30000) must not be above max_dynamic_port (20000)"},
		{NodeResourcesConfig{MaxDynamicPort: 70000}, "max_dynamic_port must be between 1 and 65535"},
		{NodeResourcesConfig{Reserved: &structs.NodeReservedResources{Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: "x"}}}, "reserved.reserved_ports"},
	} {
		_, err := NewClient(&Config{
			RPCHandler: clienttest.NewFakeServer(), StateDB: state.NewMemDB(), AllocDir: t.TempDir(), Resources: tc.res,
		})
		must.ErrorContains(t, err, tc.want)
	}
}
