package command

import (
	"fmt"
	"math"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// nodeStats is what node status shows of the host's stats: host nil
// leaves them out; detail is -stats. allocs is what the node's running
// allocations use, nil when it could not be measured.
type nodeStats struct {
	host   *api.HostStats
	detail bool
	allocs *allocUsage
}

// allocUsage is the sum of what the running allocations of a node use:
// CPU in MHz, memory (resident) in bytes.
type allocUsage struct {
	cpuMHz   float64
	memBytes uint64
}

// nodeAllocUsage asks the node for the stats of each of its running
// allocations and sums them, as upstream's "Allocation Resource
// Utilization". Any allocation that cannot be asked (its status is
// unknown, the node is cut off, the allocation just stopped) leaves the
// section out rather than showing a sum that misses it.
func nodeAllocUsage(client *api.Client, node *api.Node, allocs []*api.Allocation) *allocUsage {
	if node.Status == api.NodeStatusDown {
		return nil
	}
	var u allocUsage
	for _, a := range allocs {
		if a.ClientStatus == api.AllocClientStatusUnknown {
			// Cut off: what it uses cannot be asked, and a sum without
			// it would read as idle.
			return nil
		}
		if a.ClientStatus != api.AllocClientStatusRunning {
			continue
		}
		st, err := client.Allocations().Stats(a, nil)
		if err != nil || st.ResourceUsage == nil {
			return nil
		}
		if c := st.ResourceUsage.CpuStats; c != nil {
			u.cpuMHz += c.TotalTicks
		}
		if m := st.ResourceUsage.MemoryStats; m != nil {
			u.memBytes += m.RSS
		}
	}
	return &u
}

// formatAllocUtilization is upstream's "Allocation Resource Utilization":
// what the running allocations use against what the node offers them
// (the totals of "Allocated Resources").
func formatAllocUtilization(node *api.Node, u *allocUsage) string {
	cpu, mem, _ := nodeAllocatable(node)
	return formatList([]string{
		"CPU|Memory",
		fmt.Sprintf("%.0f/%d MHz|%s/%s", math.Floor(u.cpuMHz), cpu, formatBytes(u.memBytes), formatMB(mem)),
	})
}

// nodeHostStats reads the node's host stats for node status; nil when
// the node cannot be asked (down, cut off, no session), which the status
// shows without them, as upstream.
func nodeHostStats(client *api.Client, node *api.Node) *api.HostStats {
	if node.Status == api.NodeStatusDown {
		return nil
	}
	st, err := client.Nodes().Stats(node.ID, nil)
	if err != nil {
		return nil
	}
	return st
}

// formatHostUtilization is upstream's "Host Resource Utilization": what
// the host's processes use, all of them, against what the node offers.
func formatHostUtilization(node *api.Node, st *api.HostStats) string {
	var totalCPU int64
	if r := node.NodeResources; r != nil {
		totalCPU = r.Cpu.CpuShares
	}
	var memUsed, memTotal uint64
	if m := st.Memory; m != nil {
		memUsed, memTotal = m.Used, m.Total
	}
	var diskUsed, diskSize uint64
	if d := st.AllocDirStats; d != nil {
		diskUsed, diskSize = d.Used, d.Size
	}
	return formatList([]string{
		"CPU|Memory|Disk",
		fmt.Sprintf("%d/%d MHz|%s/%s|%s/%s", int64(st.CPUTicksConsumed), totalCPU,
			formatBytes(memUsed), formatBytes(memTotal), formatBytes(diskUsed), formatBytes(diskSize)),
	})
}

// formatHostStatsDetail is what -stats adds, under upstream's headings:
// each CPU, the memory, each disk.
func formatHostStatsDetail(st *api.HostStats) string {
	var b strings.Builder
	b.WriteString("CPU Stats\n")
	cpus := make([]string, 0, len(st.CPU))
	for _, c := range st.CPU {
		cpus = append(cpus, formatKV([]string{
			"CPU|" + c.CPU,
			fmt.Sprintf("User|%.2f%%", c.User),
			fmt.Sprintf("System|%.2f%%", c.System),
			fmt.Sprintf("Idle|%.2f%%", c.Idle),
		}))
	}
	b.WriteString(strings.Join(cpus, "\n\n"))
	if m := st.Memory; m != nil {
		b.WriteString("\n\nMemory Stats\n")
		b.WriteString(formatKV([]string{
			"Total|" + formatBytes(m.Total),
			"Available|" + formatBytes(m.Available),
			"Used|" + formatBytes(m.Used),
			"Free|" + formatBytes(m.Free),
		}))
	}
	disks := make([]string, 0, len(st.DiskStats))
	for _, d := range st.DiskStats {
		disks = append(disks, formatKV([]string{
			"Device|" + d.Device,
			"MountPoint|" + d.Mountpoint,
			"Size|" + formatBytes(d.Size),
			"Used|" + formatBytes(d.Used),
			"Available|" + formatBytes(d.Available),
			fmt.Sprintf("Used Percent|%.2f%%", d.UsedPercent),
			fmt.Sprintf("Inodes Percent|%.2f%%", d.InodesUsedPercent),
		}))
	}
	if len(disks) > 0 {
		b.WriteString("\n\nDisk Stats\n")
		b.WriteString(strings.Join(disks, "\n\n"))
	}
	return b.String()
}
