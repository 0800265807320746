package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// An agent's client host_network block reaches the node, and a job's port
// naming it is placed on its address; a port naming a host network no node
// has is not placed, and the evaluation says why.
func TestAgent_HostNetworkPlacement(t *testing.T) {
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Client.HostNetworks = []*agent.HostNetworkConfig{{Name: "loop", CIDR: "127.0.0.0/8", ReservedPorts: "20000-20010"}}
	})
	c := officialClient(t, a)

	job := mockJob("hostnet", "mock_driver", map[string]any{"run_for": "1m"})
	job.TaskGroups[0].Networks = []*nomadapi.NetworkResource{{DynamicPorts: []nomadapi.Port{{Label: "http", HostNetwork: "loop"}}}}
	_, _, err := c.Jobs().Register(job, nil)
	must.NoError(t, err)
	var port nomadapi.PortMapping
	wait.Poll(t, 30*time.Second, "the allocation placed", func() (bool, string) {
		stubs, _, err := c.Jobs().Allocations("hostnet", false, nil)
		if err != nil || len(stubs) == 0 {
			return false, "no allocation"
		}
		alloc, _, err := c.Allocations().Info(stubs[0].ID, nil)
		if err != nil || alloc.AllocatedResources == nil || len(alloc.AllocatedResources.Shared.Ports) == 0 {
			return false, "no ports yet"
		}
		port = alloc.AllocatedResources.Shared.Ports[0]
		return true, ""
	})
	must.Eq(t, "127.0.0.1", port.HostIP)
	must.Greater(t, 20010, port.Value, must.Sprint("a reserved port of the host network was handed out"))

	missing := mockJob("nohostnet", "mock_driver", map[string]any{"run_for": "1m"})
	missing.TaskGroups[0].Networks = []*nomadapi.NetworkResource{{DynamicPorts: []nomadapi.Port{{Label: "http", HostNetwork: "public"}}}}
	resp, _, err := c.Jobs().Register(missing, nil)
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the placement failure", func() (bool, string) {
		ev, _, err := c.Evaluations().Info(resp.EvalID, nil)
		if err != nil {
			return false, err.Error()
		}
		m := ev.FailedTGAllocs["web"]
		if m == nil {
			return false, "eval status " + ev.Status
		}
		return m.ConstraintFiltered[`missing host network "public" for port "http"`] == 1, fmt.Sprintf("filtered %v", m.ConstraintFiltered)
	})
}
