package allocrunner

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestPortEnv checks upstream's per-port variables, which is how a task
// learns the dynamic port the scheduler picked for it.
func TestPortEnv(t *testing.T) {
	alloc := &structs.Allocation{AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: structs.AllocatedPorts{{Label: "http", Value: 23456, To: 8080, HostIP: "10.0.0.5"}, {Label: "admin", Value: 9090, HostIP: "10.0.0.5"}},
	}}}
	env := map[string]string{}
	addPortEnv(env, alloc, nil)
	must.Eq(t, "8080", env["NOMAD_PORT_http"])
	must.Eq(t, "23456", env["NOMAD_HOST_PORT_http"])
	must.Eq(t, "10.0.0.5:23456", env["NOMAD_ADDR_http"])
	must.Eq(t, "10.0.0.5", env["NOMAD_IP_http"])
	must.Eq(t, "9090", env["NOMAD_PORT_admin"])
	must.Eq(t, "10.0.0.5:9090", env["NOMAD_HOST_ADDR_admin"])
	must.Eq(t, []drivers.Port{{Label: "http", Value: 23456, To: 8080}, {Label: "admin", Value: 9090}}, taskPorts(alloc))
	_, ok := env["NOMAD_ALLOC_IP_http"]
	must.False(t, ok, must.Sprint("host mode has no allocation address"))
}

// TestPortEnv_Bridge checks the variables a bridge-mode task gets: the
// allocation's own address on the bridge with the port inside, beside the
// host's address and port, so that a task can advertise either.
func TestPortEnv_Bridge(t *testing.T) {
	alloc := &structs.Allocation{AllocatedResources: &structs.AllocatedResources{Shared: structs.AllocatedSharedResources{
		Ports: structs.AllocatedPorts{{Label: "http", Value: 23456, To: 8080, HostIP: "10.0.0.5"}, {Label: "raw", Value: 9090, HostIP: "10.0.0.5"}},
	}}}
	env := map[string]string{}
	addPortEnv(env, alloc, &allocnet.Status{Address: "172.26.64.7"})
	must.Eq(t, "8080", env["NOMAD_PORT_http"])
	must.Eq(t, "23456", env["NOMAD_HOST_PORT_http"])
	must.Eq(t, "10.0.0.5:23456", env["NOMAD_HOST_ADDR_http"])
	must.Eq(t, "172.26.64.7", env["NOMAD_ALLOC_IP_http"])
	must.Eq(t, "172.26.64.7:8080", env["NOMAD_ALLOC_ADDR_http"])
	must.Eq(t, "8080", env["NOMAD_ALLOC_PORT_http"])
	must.Eq(t, "172.26.64.7:9090", env["NOMAD_ALLOC_ADDR_raw"])
}

// A port naming a host network of its own reaches the driver with that
// network's address, so that docker publishes it there only (a port for
// a private network must not answer on the public address); the others
// stay published on every address.
func TestTaskPorts_HostNetworkAddress(t *testing.T) {
	alloc := clienttest.MockAlloc("node-1", nil)
	alloc.Job.TaskGroups[0].Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{
		{Label: "admin", HostNetwork: "private"}, {Label: "http", HostNetwork: "default"},
	}}}
	alloc.AllocatedResources.Shared.Ports = structs.AllocatedPorts{
		{Label: "admin", Value: 23456, HostIP: "192.168.7.2"}, {Label: "http", Value: 23457, HostIP: "10.0.0.5"},
	}
	must.Eq(t, []drivers.Port{{Label: "admin", Value: 23456, HostIP: "192.168.7.2"}, {Label: "http", Value: 23457}}, taskPorts(alloc))
}
