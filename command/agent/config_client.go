package agent

import (
	"errors"
	"fmt"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// ReservedConfig is the client's `reserved` block: capacity (MHz, MB) and
// host ports held back for the OS and the agent. Field names are
// upstream's /v1/agent/self keys.
type ReservedConfig struct {
	CPU           int
	MemoryMB      int
	DiskMB        int
	ReservedPorts string
}

// clientResourceKeys are the client keys this file decodes.
var clientResourceKeys = []string{
	"min_dynamic_port", "max_dynamic_port", "node_max_allocs", "cpu_total_compute", "memory_total_mb",
	"gc_interval", "gc_disk_usage_threshold", "gc_inode_usage_threshold", "gc_max_allocs", "gc_parallel_destroys",
}

// unsupportedReserved are upstream's reserved keys this version cannot
// honour.
var unsupportedReserved = map[string]string{
	"cores": "there is no core pinning; reserve MHz with cpu",
}

// clientResources decodes the client's capacity, port range and
// garbage-collector keys of b into c.
func (d *configDecoder) clientResources(b *block, c *ClientConfig) {
	b.integer("min_dynamic_port", &c.MinDynamicPort, 1, 65535)
	b.integer("max_dynamic_port", &c.MaxDynamicPort, 1, 65535)
	if c.MinDynamicPort != 0 && c.MaxDynamicPort != 0 && c.MinDynamicPort > c.MaxDynamicPort {
		d.errorf(b.attr("max_dynamic_port").Expr.Range(), "client.max_dynamic_port (%d) must not be below client.min_dynamic_port (%d)", c.MaxDynamicPort, c.MinDynamicPort)
	}
	b.integer("node_max_allocs", &c.NodeMaxAllocs, 0, 1<<31-1)
	b.integer("cpu_total_compute", &c.CPUTotalCompute, 0, 1<<31-1)
	b.integer("memory_total_mb", &c.MemoryTotalMB, 0, 1<<31-1)
	b.duration("gc_interval", &c.GCInterval)
	if a := b.attr("gc_interval"); a != nil && c.GCInterval == 0 {
		d.errorf(a.Expr.Range(), "client.gc_interval must be above zero")
	}
	b.percent("gc_disk_usage_threshold", &c.GCDiskUsageThreshold)
	b.percent("gc_inode_usage_threshold", &c.GCInodeUsageThreshold)
	b.integer("gc_max_allocs", &c.GCMaxAllocs, 1, 1<<31-1)
	b.integer("gc_parallel_destroys", &c.GCParallelDestroys, 1, 1024)
	if blk := b.sub("reserved"); blk != nil {
		rb := d.open(blk.Body, "client.reserved.", bodySpec{
			attrs:       []string{"cpu", "memory", "disk", "reserved_ports"},
			unsupported: unsupportedReserved,
		})
		r := &ReservedConfig{}
		rb.integer("cpu", &r.CPU, 0, 1<<31-1)
		rb.integer("memory", &r.MemoryMB, 0, 1<<31-1)
		rb.integer("disk", &r.DiskMB, 0, 1<<31-1)
		if rb.str("reserved_ports", &r.ReservedPorts) {
			if _, err := structs.ParsePortRanges(r.ReservedPorts); err != nil {
				d.errorf(rb.attr("reserved_ports").Expr.Range(), "client.reserved.reserved_ports: %v", err)
			}
		}
		c.Reserved = r
	}
}

// percent reads a number between 0 and 100.
func (b *block) percent(name string, dst *float64) {
	var v float64
	a := b.attr(name)
	if a == nil {
		return
	}
	b.float(name, &v)
	if v < 0 || v > 100 {
		b.d.errorf(a.Expr.Range(), "%s must be a percentage between 0 and 100, not %v", b.key(a), v)
		return
	}
	*dst = v
}

// mergeResources layers cl's capacity and collector settings over o; a
// reserved block replaces the one before it whole, as upstream.
func (o *ClientConfig) mergeResources(cl *ClientConfig) {
	setInt(&o.MinDynamicPort, cl.MinDynamicPort)
	setInt(&o.MaxDynamicPort, cl.MaxDynamicPort)
	setInt(&o.NodeMaxAllocs, cl.NodeMaxAllocs)
	setInt(&o.CPUTotalCompute, cl.CPUTotalCompute)
	setInt(&o.MemoryTotalMB, cl.MemoryTotalMB)
	setDuration(&o.GCInterval, cl.GCInterval)
	if cl.GCDiskUsageThreshold != 0 {
		o.GCDiskUsageThreshold = cl.GCDiskUsageThreshold
	}
	if cl.GCInodeUsageThreshold != 0 {
		o.GCInodeUsageThreshold = cl.GCInodeUsageThreshold
	}
	setInt(&o.GCMaxAllocs, cl.GCMaxAllocs)
	setInt(&o.GCParallelDestroys, cl.GCParallelDestroys)
	if cl.Reserved != nil {
		r := *cl.Reserved
		o.Reserved = &r
	}
}

// validateResources checks the merged settings, which flags and several
// files can still get wrong (a range whose ends come from two files).
func (cl *ClientConfig) validateResources() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if cl.MinDynamicPort < 0 || cl.MinDynamicPort > 65535 {
		add("client.min_dynamic_port must be between 1 and 65535, not %d", cl.MinDynamicPort)
	}
	if cl.MaxDynamicPort < 0 || cl.MaxDynamicPort > 65535 {
		add("client.max_dynamic_port must be between 1 and 65535, not %d", cl.MaxDynamicPort)
	}
	if lo, hi := cl.MinDynamicPort, cl.MaxDynamicPort; lo != 0 && hi != 0 && lo > hi {
		add("client.min_dynamic_port (%d) must not be above client.max_dynamic_port (%d)", lo, hi)
	}
	for _, k := range []struct {
		key string
		v   int
	}{{"node_max_allocs", cl.NodeMaxAllocs}, {"cpu_total_compute", cl.CPUTotalCompute}, {"memory_total_mb", cl.MemoryTotalMB},
		{"gc_max_allocs", cl.GCMaxAllocs}, {"gc_parallel_destroys", cl.GCParallelDestroys}} {
		if k.v < 0 {
			add("client.%s can't be negative", k.key)
		}
	}
	for _, k := range []struct {
		key string
		v   float64
	}{{"gc_disk_usage_threshold", cl.GCDiskUsageThreshold}, {"gc_inode_usage_threshold", cl.GCInodeUsageThreshold}} {
		if k.v < 0 || k.v > 100 {
			add("client.%s must be a percentage between 0 and 100, not %v", k.key, k.v)
		}
	}
	if cl.GCInterval < 0 {
		errs = append(errs, errors.New("client.gc_interval can't be negative"))
	}
	if r := cl.Reserved; r != nil {
		if r.CPU < 0 || r.MemoryMB < 0 || r.DiskMB < 0 {
			add("client.reserved: cpu, memory and disk can't be negative")
		}
		if _, err := structs.ParsePortRanges(r.ReservedPorts); err != nil {
			add("client.reserved.reserved_ports: %v", err)
		}
	}
	return errs
}

// resources is the client's view of the capacity keys.
func (cl *ClientConfig) resources() client.NodeResourcesConfig {
	out := client.NodeResourcesConfig{
		CPUTotalCompute: int64(cl.CPUTotalCompute),
		MemoryTotalMB:   int64(cl.MemoryTotalMB),
		MinDynamicPort:  cl.MinDynamicPort,
		MaxDynamicPort:  cl.MaxDynamicPort,
		NodeMaxAllocs:   cl.NodeMaxAllocs,
	}
	if r := cl.Reserved; r != nil {
		out.Reserved = &structs.NodeReservedResources{
			Cpu:      structs.NodeReservedCpuResources{CpuShares: int64(r.CPU)},
			Memory:   structs.NodeReservedMemoryResources{MemoryMB: int64(r.MemoryMB)},
			Disk:     structs.NodeReservedDiskResources{DiskMB: int64(r.DiskMB)},
			Networks: structs.NodeReservedNetworkResources{ReservedHostPorts: r.ReservedPorts},
		}
	}
	return out
}

// gc is the client's view of the gc_* keys.
func (cl *ClientConfig) gc() client.GCConfig {
	return client.GCConfig{
		Interval:            cl.GCInterval,
		DiskUsageThreshold:  cl.GCDiskUsageThreshold,
		InodeUsageThreshold: cl.GCInodeUsageThreshold,
		MaxAllocs:           cl.GCMaxAllocs,
		ParallelDestroys:    cl.GCParallelDestroys,
	}
}
