package allocrunner

import (
	"testing"

	"github.com/shoenig/test/must"

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
	addPortEnv(env, alloc)
	must.Eq(t, "8080", env["NOMAD_PORT_http"])
	must.Eq(t, "23456", env["NOMAD_HOST_PORT_http"])
	must.Eq(t, "10.0.0.5:23456", env["NOMAD_ADDR_http"])
	must.Eq(t, "10.0.0.5", env["NOMAD_IP_http"])
	must.Eq(t, "9090", env["NOMAD_PORT_admin"])
	must.Eq(t, "10.0.0.5:9090", env["NOMAD_HOST_ADDR_admin"])
	must.Eq(t, []drivers.Port{{Label: "http", Value: 23456, To: 8080}, {Label: "admin", Value: 9090}}, taskPorts(alloc))
}
