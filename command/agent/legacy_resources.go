package agent

import (
	"slices"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// legacyResources is upstream's pre-0.9 resource shape (its structs.Resources),
// which upstream still fills on nodes (Resources, Reserved) and allocations
// (Resources, TaskResources, SharedResources) and which tools read: the
// Nomad Autoscaler's nomad-apm sums allocation Resources.CPU and MemoryMB
// over a node pool and refuses an allocation without them. It is computed
// here, at the edge, from our model; nothing of ours reads it.
type legacyResources struct {
	CPU         int64
	Cores       int
	MemoryMB    int64
	MemoryMaxMB int64
	DiskMB      int64
	IOPS        int
	Networks    []*legacyNetwork
	Devices     []any
}

// legacyNetwork is upstream's NetworkResource as the legacy shapes carry
// it: the host IP and the host ports of a group's network block.
type legacyNetwork struct {
	Mode          string
	Device        string
	CIDR          string
	IP            string
	Hostname      string
	MBits         int
	DNS           any
	ReservedPorts []structs.Port
	DynamicPorts  []structs.Port
}

// nodeView is a node as GET /v1/node/{id} shows it: ours plus upstream's
// legacy Resources and Reserved, and the SecretID field, always empty, that
// upstream's readers expect to find (the secret itself never leaves the
// servers).
type nodeView struct {
	*structs.Node
	SecretID  string
	Resources *legacyResources
	Reserved  *legacyResources
}

func viewNode(n *structs.Node) nodeView {
	v := nodeView{Node: n, Resources: &legacyResources{}, Reserved: &legacyResources{}}
	if r := n.NodeResources; r != nil {
		v.Resources.CPU = r.Cpu.CpuShares
		v.Resources.MemoryMB = r.Memory.MemoryMB
		v.Resources.DiskMB = r.Disk.DiskMB
	}
	if r := n.ReservedResources; r != nil {
		v.Reserved.CPU = r.Cpu.CpuShares
		v.Reserved.MemoryMB = r.Memory.MemoryMB
		v.Reserved.DiskMB = r.Disk.DiskMB
	}
	return v
}

// legacyAlloc is upstream's legacy resource fields of an allocation:
// TaskResources per task, SharedResources (the group's disk and network),
// and Resources, their sum, where a task without memory_max counts its
// memory toward MemoryMaxMB, as upstream adds them.
type legacyAlloc struct {
	Resources       *legacyResources            `json:",omitempty"`
	TaskResources   map[string]*legacyResources `json:",omitempty"`
	SharedResources *legacyResources            `json:",omitempty"`
}

func legacyAllocResources(a *structs.Allocation) legacyAlloc {
	ar := a.AllocatedResources
	if ar == nil {
		return legacyAlloc{}
	}
	shared := &legacyResources{DiskMB: ar.Shared.DiskMB, Networks: legacyNetworks(a)}
	total := &legacyResources{DiskMB: shared.DiskMB, Networks: shared.Networks}
	tasks := make(map[string]*legacyResources, len(ar.Tasks))
	for name, t := range ar.Tasks {
		tasks[name] = &legacyResources{CPU: t.Cpu.CpuShares, MemoryMB: t.Memory.MemoryMB, MemoryMaxMB: t.Memory.MemoryMaxMB}
		total.CPU += t.Cpu.CpuShares
		total.MemoryMB += t.Memory.MemoryMB
		total.MemoryMaxMB += max(t.Memory.MemoryMaxMB, t.Memory.MemoryMB)
	}
	return legacyAlloc{Resources: total, TaskResources: tasks, SharedResources: shared}
}

// legacyNetworks is the allocation's group network with the host ports it
// was given, split as the group declares them (static ones reserved);
// nil for a group without a network block.
func legacyNetworks(a *structs.Allocation) []*legacyNetwork {
	var declared *structs.NetworkResource
	if a.Job != nil {
		if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg != nil && len(tg.Networks) > 0 {
			declared = tg.Networks[0]
		}
	}
	ports := a.AllocatedResources.Shared.Ports
	if declared == nil && len(ports) == 0 {
		return nil
	}
	n := &legacyNetwork{}
	if declared != nil && declared.Mode != structs.NetworkModeHost {
		n.Mode = declared.Mode
	}
	for _, p := range ports {
		if n.IP == "" {
			n.IP = p.HostIP
		}
		port := structs.Port{Label: p.Label, Value: p.Value, To: p.To, HostNetwork: "default"}
		static := declared != nil && slices.ContainsFunc(declared.ReservedPorts, func(r structs.Port) bool { return r.Label == p.Label })
		if static {
			n.ReservedPorts = append(n.ReservedPorts, port)
		} else {
			n.DynamicPorts = append(n.DynamicPorts, port)
		}
	}
	return []*legacyNetwork{n}
}
