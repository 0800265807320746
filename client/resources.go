package client

import (
	"fmt"
	"strconv"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// NodeResourcesConfig is what the operator says about the node's capacity,
// over what fingerprinting finds: the client keys reserved,
// cpu_total_compute, memory_total_mb, min_dynamic_port, max_dynamic_port
// and node_max_allocs. Zero values leave the fingerprint and the defaults.
type NodeResourcesConfig struct {
	// Reserved, when set, is held back from scheduling instead of the
	// automatic reservation (see reserve): CPU, memory, disk and host
	// ports no allocation is given.
	Reserved *structs.NodeReservedResources
	// CPUTotalCompute (MHz) and MemoryTotalMB replace the fingerprinted
	// totals, for hosts whose probes are wrong (VMs, ARM boards without
	// a frequency in /proc/cpuinfo) or to offer less than the host has.
	CPUTotalCompute int64
	MemoryTotalMB   int64
	// MinDynamicPort and MaxDynamicPort bound the dynamic ports the
	// scheduler hands out on this node; 0 is upstream's default range.
	MinDynamicPort int
	MaxDynamicPort int
	// NodeMaxAllocs caps how many allocations the node runs at once; 0
	// is no cap.
	NodeMaxAllocs int
}

// validate refuses what the scheduler cannot use, naming the agent's key.
func (r NodeResourcesConfig) validate() error {
	minPort, maxPort := r.portRange()
	switch {
	case minPort < 1 || minPort > 65535:
		return fmt.Errorf("client config: min_dynamic_port must be between 1 and 65535, not %d", minPort)
	case maxPort < 1 || maxPort > 65535:
		return fmt.Errorf("client config: max_dynamic_port must be between 1 and 65535, not %d", maxPort)
	case minPort > maxPort:
		return fmt.Errorf("client config: min_dynamic_port (%d) must not be above max_dynamic_port (%d)", minPort, maxPort)
	case r.NodeMaxAllocs < 0:
		return fmt.Errorf("client config: node_max_allocs can't be negative")
	case r.CPUTotalCompute < 0 || r.MemoryTotalMB < 0:
		return fmt.Errorf("client config: cpu_total_compute and memory_total_mb can't be negative")
	}
	if res := r.Reserved; res != nil {
		if res.Cpu.CpuShares < 0 || res.Memory.MemoryMB < 0 || res.Disk.DiskMB < 0 {
			return fmt.Errorf("client config: reserved cpu, memory and disk can't be negative")
		}
		if _, err := structs.ParsePortRanges(res.Networks.ReservedHostPorts); err != nil {
			return fmt.Errorf("client config: reserved.reserved_ports: %w", err)
		}
	}
	return nil
}

// portRange is the dynamic range in effect.
func (r NodeResourcesConfig) portRange() (lo, hi int) {
	lo, hi = r.MinDynamicPort, r.MaxDynamicPort
	if lo == 0 {
		lo = structs.MinDynamicPort
	}
	if hi == 0 {
		hi = structs.MaxDynamicPort
	}
	return lo, hi
}

// apply lays the operator's settings over a fingerprinted node. The
// totals go into the attributes too, which constraints read
// (${attr.cpu.totalcompute}).
func (r NodeResourcesConfig) apply(node *structs.Node) {
	res := node.NodeResources
	if r.CPUTotalCompute > 0 {
		res.Cpu.CpuShares = r.CPUTotalCompute
		node.Attributes["cpu.totalcompute"] = strconv.FormatInt(r.CPUTotalCompute, 10)
	}
	if r.MemoryTotalMB > 0 {
		res.Memory.MemoryMB = r.MemoryTotalMB
		node.Attributes["memory.totalbytes"] = strconv.FormatInt(r.MemoryTotalMB<<20, 10)
	}
	res.MinDynamicPort, res.MaxDynamicPort = r.portRange()
	if r.Reserved != nil {
		cp := *r.Reserved
		node.ReservedResources = &cp
	} else if (r.CPUTotalCompute > 0 || r.MemoryTotalMB > 0) && node.ReservedResources != nil {
		// The automatic reservation follows the totals in effect.
		node.ReservedResources = reserve(res)
	}
	node.NodeMaxAllocs = r.NodeMaxAllocs
}
