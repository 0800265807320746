package agent_test

//lint:file-ignore SA1019 the test reads the legacy Resources fields on purpose: upstream keeps filling them, and tools such as the Autoscaler's nomad-apm read them

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// Node reads carry upstream's legacy Resources and Reserved and an empty
// SecretID, and allocations their legacy Resources, TaskResources and
// SharedResources: the Nomad Autoscaler's nomad-apm sums allocation
// Resources.CPU and MemoryMB over a node pool and fails on an allocation
// without them ("allocation resources are incomplete").
func TestHTTP_LegacyResources(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)

	job := mockJob("legacy", "mock_driver", map[string]any{"run_for": "5m"})
	job.TaskGroups[0].Networks = []*nomadapi.NetworkResource{{DynamicPorts: []nomadapi.Port{{Label: "http"}}}}
	_, _, err := c.Jobs().Register(job, nil)
	must.NoError(t, err)

	nodes, _, err := c.Nodes().List(nil)
	must.NoError(t, err)
	must.SliceLen(t, 1, nodes)
	node, _, err := c.Nodes().Info(nodes[0].ID, nil)
	must.NoError(t, err)
	must.NotNil(t, node.Resources)
	must.NotNil(t, node.Reserved)
	must.Eq(t, node.NodeResources.Cpu.CpuShares, int64(*node.Resources.CPU))
	must.Eq(t, node.NodeResources.Memory.MemoryMB, int64(*node.Resources.MemoryMB))
	must.Eq(t, node.NodeResources.Disk.DiskMB, int64(*node.Resources.DiskMB))
	must.Eq(t, node.ReservedResources.Cpu.CpuShares, uint64(*node.Reserved.CPU))
	must.Eq(t, node.ReservedResources.Memory.MemoryMB, uint64(*node.Reserved.MemoryMB))

	// The field is there, empty: the secret never leaves the servers.
	raw := map[string]json.RawMessage{}
	getJSON(t, a.HTTPAddr+"/v1/node/"+node.ID, &raw)
	must.Eq(t, `""`, string(raw["SecretID"]))

	var allocs []*nomadapi.Allocation
	wait.Poll(t, 30*time.Second, "the allocation to be placed", func() (bool, string) {
		allocs, _, err = c.Nodes().Allocations(node.ID, nil)
		return err == nil && len(allocs) == 1, "allocs or error: " + errString(err)
	})
	got := allocs[0]
	must.NotNil(t, got.Resources)
	must.Eq(t, 100, *got.Resources.CPU)
	must.Eq(t, 64, *got.Resources.MemoryMB)
	must.Eq(t, 64, *got.Resources.MemoryMaxMB, must.Sprint("a task without memory_max counts its memory, as upstream adds them"))
	must.Eq(t, int(got.AllocatedResources.Shared.DiskMB), *got.Resources.DiskMB)
	must.SliceLen(t, 1, got.Resources.Networks)
	must.SliceLen(t, 1, got.Resources.Networks[0].DynamicPorts)
	must.Eq(t, "http", got.Resources.Networks[0].DynamicPorts[0].Label)
	must.Positive(t, got.Resources.Networks[0].DynamicPorts[0].Value)
	must.MapContainsKey(t, got.TaskResources, "web")
	must.Eq(t, 100, *got.TaskResources["web"].CPU)
	var shared struct{ SharedResources struct{ DiskMB int } }
	getJSON(t, a.HTTPAddr+"/v1/allocation/"+got.ID, &shared)
	must.Eq(t, *got.Resources.DiskMB, shared.SharedResources.DiskMB)

	one, _, err := c.Allocations().Info(got.ID, nil)
	must.NoError(t, err)
	must.Eq(t, got.Resources, one.Resources)
}

func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}
