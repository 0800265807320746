package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

func withPorts(job *structs.Job, count int, static int, dynamic ...string) *structs.Job {
	tg := job.TaskGroups[0]
	tg.Count = count
	tg.Tasks[0].Resources = &structs.Resources{CPU: 10, MemoryMB: 10}
	nw := &structs.NetworkResource{}
	if static > 0 {
		nw.ReservedPorts = []structs.Port{{Label: "admin", Value: static}}
	}
	for _, l := range dynamic {
		nw.DynamicPorts = append(nw.DynamicPorts, structs.Port{Label: l, To: 8080})
	}
	tg.Networks = []*structs.NetworkResource{nw}
	return job
}

// A static port can be held by one allocation per node: the group spreads
// over the nodes, and what cannot fit is reported as a port collision the
// operator can read in the placement failure.
func TestServiceSched_StaticPortOnePerNode(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node(), mock.Node())
	job, eval := registerJob(t, h, withPorts(mock.Job(), 3, 9090, "http"))

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	allocs := desiredRun(h.JobAllocs(job))
	must.Len(t, 2, allocs)
	nodes := map[string]bool{}
	for _, a := range allocs {
		nodes[a.NodeID] = true
		ports := a.AllocatedResources.Shared.Ports
		must.Len(t, 2, ports)
		must.Eq(t, structs.AllocatedPortMapping{Label: "admin", Value: 9090, HostIP: ports[0].HostIP}, ports[0])
		must.Eq(t, "http", ports[1].Label)
		must.Eq(t, 8080, ports[1].To)
		must.Between(t, structs.MinDynamicPort, ports[1].Value, structs.MaxDynamicPort)
	}
	must.MapLen(t, 2, nodes)
	m := h.LastEval().FailedTGAllocs["web"]
	must.NotNil(t, m)
	must.Eq(t, 2, m.ConstraintFiltered["network: port collision"])
}

// An in-place update keeps the allocation's ports: the task goes on
// listening where clients already reach it.
func TestServiceSched_InPlaceUpdateKeepsPorts(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node())
	job, eval := registerJob(t, h, withPorts(mock.Job(), 1, 0, "http"))
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	before := desiredRun(h.JobAllocs(job))[0].AllocatedResources.Shared.Ports

	job = job.Copy()
	job.Meta = map[string]string{"rev": "2"}
	job, eval = registerJob(t, h, job)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	after := desiredRun(h.JobAllocs(job))
	must.Len(t, 1, after)
	must.Eq(t, before, after[0].AllocatedResources.Shared.Ports)
}

// Property: whatever groups are placed, in however many evaluations, no
// two live allocations on a node share a host port, and every dynamic port
// is in the node's dynamic range.
func TestPorts_NeverShared(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := schedtest.NewHarness(t)
		nodes := rapid.IntRange(1, 3).Draw(rt, "nodes")
		for range nodes {
			h.UpsertNodes(mock.Node())
		}
		jobs := rapid.IntRange(1, 4).Draw(rt, "jobs")
		for j := range jobs {
			job := mock.Job()
			job.ID = fmt.Sprintf("job-%d", j)
			job.Name = job.ID
			n := rapid.IntRange(1, 4).Draw(rt, "dynamic")
			labels := make([]string, n)
			for i := range labels {
				labels[i] = fmt.Sprintf("p%d", i)
			}
			static := rapid.SampledFrom([]int{0, 0, 8000}).Draw(rt, "static")
			_, eval := registerJob(t, h, withPorts(job, rapid.IntRange(1, 12).Draw(rt, "count"), static, labels...))
			if err := h.Process(scheduler.NewServiceScheduler, eval); err != nil {
				rt.Fatal(err)
			}
		}
		perNode := map[string]map[int]string{}
		var all []*structs.Allocation
		for j := range jobs {
			all = append(all, h.JobAllocs(&structs.Job{ID: fmt.Sprintf("job-%d", j), Namespace: structs.DefaultNamespace})...)
		}
		if len(all) == 0 {
			rt.Fatal("nothing was placed")
		}
		for _, a := range all {
			if a.TerminalStatus() {
				continue
			}
			if perNode[a.NodeID] == nil {
				perNode[a.NodeID] = map[int]string{}
			}
			for _, p := range a.AllocatedResources.Shared.Ports {
				if other, dup := perNode[a.NodeID][p.Value]; dup {
					rt.Fatalf("port %d on node %s held by %s and %s", p.Value, a.NodeID, other, a.ID)
				}
				perNode[a.NodeID][p.Value] = a.ID
				if p.Label != "admin" && (p.Value < structs.MinDynamicPort || p.Value > structs.MaxDynamicPort) {
					rt.Fatalf("dynamic port %d out of range", p.Value)
				}
			}
		}
	})
}

// A node whose client fingerprinted a network address (network_interface)
// gets its ports on that address, not on its HTTP API's: tasks listen
// where the operator's interface is, and NOMAD_IP_<label> says so.
func TestServiceSched_PortsOnFingerprintedAddress(t *testing.T) {
	h := schedtest.NewHarness(t)
	node := mock.Node()
	node.HTTPAddr = "10.0.0.1:4646"
	node.Attributes[structs.NodeAttrNetworkIP] = "192.168.7.7"
	plain := mock.Node()
	plain.HTTPAddr = "10.0.0.2:4646"
	delete(plain.Attributes, structs.NodeAttrNetworkIP)
	h.UpsertNodes(node, plain)
	job, eval := registerJob(t, h, withPorts(mock.Job(), 2, 9090, "http"))

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	allocs := desiredRun(h.JobAllocs(job))
	must.Len(t, 2, allocs)
	want := map[string]string{node.ID: "192.168.7.7", plain.ID: "10.0.0.2"}
	for _, a := range allocs {
		for _, p := range a.AllocatedResources.Shared.Ports {
			must.Eq(t, want[a.NodeID], p.HostIP)
		}
	}
}

// A port with a host_network is placed only on a node that has that host
// network (client host_network blocks), on its address, never on one of
// its reserved ports; a node without it is filtered with upstream's
// "missing host network" reason, so the operator reads why.
func TestServiceSched_PortsOnHostNetwork(t *testing.T) {
	h := schedtest.NewHarness(t)
	with := mock.Node()
	with.NodeResources.NodeNetworks = []*structs.NodeNetworkResource{{Mode: "host", Device: "wwan0", Addresses: []structs.NodeNetworkAddress{
		{Family: "ipv4", Alias: "public", Address: "100.64.0.7", ReservedPorts: "9090"},
		{Family: "ipv4", Alias: "default", Address: "10.0.0.1"},
	}}}
	without := mock.Node()
	h.UpsertNodes(with, without)
	job := withPorts(mock.Job(), 1, 0, "http", "admin")
	nw := job.TaskGroups[0].Networks[0]
	nw.DynamicPorts[0].HostNetwork = "public"
	job, eval := registerJob(t, h, job)

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	allocs := desiredRun(h.JobAllocs(job))
	must.Len(t, 1, allocs)
	must.Eq(t, with.ID, allocs[0].NodeID)
	ports := allocs[0].AllocatedResources.Shared.Ports
	must.Eq(t, "100.64.0.7", ports[0].HostIP, must.Sprint("the public port on the public address"))
	must.Eq(t, "10.0.0.1", ports[1].HostIP, must.Sprint("a port without host_network on the default one"))

	// A static port the host network reserves is refused there.
	h2 := schedtest.NewHarness(t)
	h2.UpsertNodes(with.Copy())
	static := withPorts(mock.Job(), 1, 9090)
	static.TaskGroups[0].Networks[0].ReservedPorts[0].HostNetwork = "public"
	static, eval2 := registerJob(t, h2, static)
	must.NoError(t, h2.Process(scheduler.NewServiceScheduler, eval2))
	must.Len(t, 0, desiredRun(h2.JobAllocs(static)))
	must.Eq(t, 1, h2.LastEval().FailedTGAllocs["web"].ConstraintFiltered["network: port collision"])
}

// A node without the port's host network is filtered, naming it.
func TestServiceSched_MissingHostNetwork(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node())
	job := withPorts(mock.Job(), 1, 0, "http")
	job.TaskGroups[0].Networks[0].DynamicPorts[0].HostNetwork = "public"
	job, eval := registerJob(t, h, job)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	must.Len(t, 0, desiredRun(h.JobAllocs(job)))
	must.Eq(t, 1, h.LastEval().FailedTGAllocs["web"].ConstraintFiltered[`missing host network "public" for port "http"`])
}

// A bridge-mode group is placed only on a node whose client offers the
// bridge; one without it is filtered with upstream's "missing network",
// instead of failing on the client after placement.
func TestServiceSched_BridgeModeNeedsBridge(t *testing.T) {
	h := schedtest.NewHarness(t)
	with := mock.Node()
	with.NodeResources.NodeNetworks = []*structs.NodeNetworkResource{{Mode: structs.NetworkModeBridge, Device: "nomad"}}
	without := mock.Node()
	h.UpsertNodes(with, without)
	job := withPorts(mock.Job(), 2, 0, "http")
	job.TaskGroups[0].Networks[0].Mode = structs.NetworkModeBridge
	job, eval := registerJob(t, h, job)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	allocs := desiredRun(h.JobAllocs(job))
	must.Len(t, 2, allocs)
	for _, a := range allocs {
		must.Eq(t, with.ID, a.NodeID)
	}

	h2 := schedtest.NewHarness(t)
	h2.UpsertNodes(without.Copy())
	job2, eval2 := registerJob(t, h2, job.Copy())
	must.NoError(t, h2.Process(scheduler.NewServiceScheduler, eval2))
	must.Len(t, 0, desiredRun(h2.JobAllocs(job2)))
	must.Eq(t, 1, h2.LastEval().FailedTGAllocs["web"].ConstraintFiltered["missing network"])
}

// A cni/<name> group is placed only on a node whose client fingerprinted
// that CNI network; a node with the bridge or another CNI network is
// filtered as "missing network", as upstream.
func TestServiceSched_CNIModeNeedsItsNetwork(t *testing.T) {
	h := schedtest.NewHarness(t)
	with := mock.Node()
	with.NodeResources.NodeNetworks = []*structs.NodeNetworkResource{{Mode: "cni/mynet"}}
	other := mock.Node()
	other.NodeResources.NodeNetworks = []*structs.NodeNetworkResource{{Mode: structs.NetworkModeBridge, Device: "nomad"}, {Mode: "cni/othernet"}}
	h.UpsertNodes(with, other)
	job := withPorts(mock.Job(), 2, 0, "http")
	job.TaskGroups[0].Networks[0].Mode = "cni/mynet"
	job, eval := registerJob(t, h, job)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	allocs := desiredRun(h.JobAllocs(job))
	must.Len(t, 2, allocs)
	for _, a := range allocs {
		must.Eq(t, with.ID, a.NodeID)
	}

	h2 := schedtest.NewHarness(t)
	h2.UpsertNodes(other.Copy())
	job2, eval2 := registerJob(t, h2, job.Copy())
	must.NoError(t, h2.Process(scheduler.NewServiceScheduler, eval2))
	must.Len(t, 0, desiredRun(h2.JobAllocs(job2)))
	must.Eq(t, 1, h2.LastEval().FailedTGAllocs["web"].ConstraintFiltered["missing network"])
}
