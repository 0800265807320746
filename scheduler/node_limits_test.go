package scheduler_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// A node at its node_max_allocs takes no more allocations whatever room it
// has, and the placement failure names upstream's dimension, so an
// operator sees why a roomy node was passed over.
func TestServiceSched_NodeMaxAllocs(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := mock.Node()
	node.NodeMaxAllocs = 2
	h.UpsertNodes(node)
	job := mock.Job()
	job.TaskGroups[0].Count = 3
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 10, MemoryMB: 10}
	job, eval := registerJob(t, h, job)

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	must.Len(t, 2, desiredRun(h.JobAllocs(job)))
	m := h.LastEval().FailedTGAllocs["web"]
	must.NotNil(t, m)
	must.Eq(t, 1, m.DimensionExhausted[structs.DimensionMaxAllocs])
}

// The client's reserved capacity is held back from placements: a node
// whose reservation leaves room for two allocations gets two, and the
// third is reported exhausted on cpu.
func TestServiceSched_ReservedCapacity(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := mock.Node()
	node.ReservedResources = &structs.NodeReservedResources{Cpu: structs.NodeReservedCpuResources{CpuShares: 3000}}
	h.UpsertNodes(node) // 4000 MHz, 1000 free
	job := mock.Job()
	job.TaskGroups[0].Count = 3
	job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 500, MemoryMB: 10}
	job, eval := registerJob(t, h, job)

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	must.Len(t, 2, desiredRun(h.JobAllocs(job)))
	m := h.LastEval().FailedTGAllocs["web"]
	must.NotNil(t, m)
	must.Eq(t, 1, m.DimensionExhausted["cpu"])
}

// Dynamic ports come from the node's own range (min_dynamic_port,
// max_dynamic_port) less its reserved_ports, and a static port the node
// reserves filters the node: a firewall or another daemon owns it.
func TestServiceSched_NodePortRangeAndReservedPorts(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := mock.Node()
	node.NodeResources.MinDynamicPort, node.NodeResources.MaxDynamicPort = 25000, 25003
	node.ReservedResources.Networks.ReservedHostPorts = "25001,9090"
	h.UpsertNodes(node)

	job, eval := registerJob(t, h, withPorts(mock.Job(), 3, 0, "http"))
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	allocs := desiredRun(h.JobAllocs(job))
	must.Len(t, 3, allocs)
	got := map[int]bool{}
	for _, a := range allocs {
		got[a.AllocatedResources.Shared.Ports[0].Value] = true
	}
	must.Eq(t, map[int]bool{25000: true, 25002: true, 25003: true}, got)

	// The range is full now: a fourth dynamic port has nowhere to go.
	more, eval := registerJob(t, h, withPorts(mock.Job(), 1, 0, "http"))
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	must.Len(t, 0, desiredRun(h.JobAllocs(more)))

	static, eval := registerJob(t, h, withPorts(mock.Job(), 1, 9090))
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	must.Len(t, 0, desiredRun(h.JobAllocs(static)))
	must.Eq(t, 1, h.LastEval().FailedTGAllocs["web"].ConstraintFiltered["network: port collision"])
}
