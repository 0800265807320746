//go:build linux

package cgroup

import (
	"path/filepath"
	"slices"

	"github.com/nomad-edge/nomad/drivers"
)

// userHZ is the unit of cpuacct.stat: USER_HZ, 100 on every Linux.
const userHZ = 100

// Usage is what the kernel counts for a task's cgroups: CPU time since the
// cgroup was made, in nanoseconds, and memory now, in bytes. Measured names
// the figures the host's kernel offered.
type Usage struct {
	CPU    CPUTime
	Memory drivers.MemoryStats

	ThrottledPeriods uint64
	ThrottledTime    uint64 // nanoseconds
	MeasuredCPU      []string
}

// CPUTime is CPU time consumed, in nanoseconds.
type CPUTime struct {
	User, System, Total uint64
}

// Usage reads the task's counters. Files a kernel lacks are left out of
// Measured rather than reported as zero.
func (c Cgroups) Usage() Usage {
	if c.Version == 2 {
		return c.usageV2()
	}
	return c.usageV1()
}

func (c Cgroups) usageV1() Usage {
	var u Usage
	if dir := c.Dir("memory"); dir != "" {
		st := readKeyed(filepath.Join(dir, "memory.stat"))
		m := &u.Memory
		for key, dst := range map[string]struct {
			v    *uint64
			name string
		}{
			"rss":         {&m.RSS, drivers.MeasuredRSS},
			"cache":       {&m.Cache, drivers.MeasuredCache},
			"swap":        {&m.Swap, drivers.MeasuredSwap},
			"mapped_file": {&m.MappedFile, drivers.MeasuredMappedFile},
		} {
			if v, ok := st[key]; ok {
				*dst.v = v
				m.Measured = append(m.Measured, dst.name)
			}
		}
		for file, dst := range map[string]struct {
			v    *uint64
			name string
		}{
			"memory.usage_in_bytes":          {&m.Usage, drivers.MeasuredUsage},
			"memory.max_usage_in_bytes":      {&m.MaxUsage, drivers.MeasuredMaxUsage},
			"memory.kmem.usage_in_bytes":     {&m.KernelUsage, drivers.MeasuredKernelUsage},
			"memory.kmem.max_usage_in_bytes": {&m.KernelMaxUsage, drivers.MeasuredKernelMaxUsage},
		} {
			if v, ok := readUint(filepath.Join(dir, file)); ok {
				*dst.v = v
				m.Measured = append(m.Measured, dst.name)
			}
		}
	}
	if dir := c.Dir("cpuacct"); dir != "" {
		if total, ok := readUint(filepath.Join(dir, "cpuacct.usage")); ok {
			st := readKeyed(filepath.Join(dir, "cpuacct.stat"))
			const tick = 1e9 / userHZ
			u.CPU = CPUTime{User: st["user"] * tick, System: st["system"] * tick, Total: total}
			u.MeasuredCPU = append(u.MeasuredCPU, drivers.MeasuredUserMode, drivers.MeasuredSystemMode, drivers.MeasuredPercent)
		}
	}
	if dir := c.Dir("cpu"); dir != "" {
		if st := readKeyed(filepath.Join(dir, "cpu.stat")); st != nil {
			u.ThrottledPeriods, u.ThrottledTime = st["nr_throttled"], st["throttled_time"]
			u.MeasuredCPU = append(u.MeasuredCPU, drivers.MeasuredThrottledPeriods, drivers.MeasuredThrottledTime)
		}
	}
	sortMeasured(&u)
	return u
}

func (c Cgroups) usageV2() Usage {
	var u Usage
	dir := c.Dir("")
	if dir == "" {
		return u
	}
	m := &u.Memory
	if v, ok := readUint(filepath.Join(dir, "memory.current")); ok {
		m.Usage = v
		m.Measured = append(m.Measured, drivers.MeasuredUsage)
	}
	if v, ok := readUint(filepath.Join(dir, "memory.peak")); ok {
		m.MaxUsage = v
		m.Measured = append(m.Measured, drivers.MeasuredMaxUsage)
	}
	if v, ok := readUint(filepath.Join(dir, "memory.swap.current")); ok {
		m.Swap = v
		m.Measured = append(m.Measured, drivers.MeasuredSwap)
	}
	if st := readKeyed(filepath.Join(dir, "memory.stat")); st != nil {
		// v2 has no rss: anonymous memory is what v1 counted as rss.
		m.RSS, m.Cache, m.MappedFile, m.KernelUsage = st["anon"], st["file"], st["file_mapped"], st["kernel"]
		m.Measured = append(m.Measured, drivers.MeasuredRSS, drivers.MeasuredCache, drivers.MeasuredMappedFile)
		if _, ok := st["kernel"]; ok {
			m.Measured = append(m.Measured, drivers.MeasuredKernelUsage)
		}
	}
	if st := readKeyed(filepath.Join(dir, "cpu.stat")); st != nil {
		const us = 1000
		u.CPU = CPUTime{User: st["user_usec"] * us, System: st["system_usec"] * us, Total: st["usage_usec"] * us}
		u.ThrottledPeriods, u.ThrottledTime = st["nr_throttled"], st["throttled_usec"]*us
		u.MeasuredCPU = append(u.MeasuredCPU, drivers.MeasuredUserMode, drivers.MeasuredSystemMode, drivers.MeasuredPercent)
		if _, ok := st["nr_throttled"]; ok {
			u.MeasuredCPU = append(u.MeasuredCPU, drivers.MeasuredThrottledPeriods, drivers.MeasuredThrottledTime)
		}
	}
	sortMeasured(&u)
	return u
}

// measuredOrder is the order Measured lists names in, whatever order the
// files were read in, so that answers compare equal.
var measuredOrder = []string{
	drivers.MeasuredRSS, drivers.MeasuredCache, drivers.MeasuredSwap, drivers.MeasuredMappedFile,
	drivers.MeasuredUsage, drivers.MeasuredMaxUsage, drivers.MeasuredKernelUsage, drivers.MeasuredKernelMaxUsage,
	drivers.MeasuredSystemMode, drivers.MeasuredUserMode, drivers.MeasuredThrottledPeriods,
	drivers.MeasuredThrottledTime, drivers.MeasuredPercent,
}

func sortMeasured(u *Usage) {
	for _, names := range []*[]string{&u.Memory.Measured, &u.MeasuredCPU} {
		slices.SortFunc(*names, func(a, b string) int {
			return slices.Index(measuredOrder, a) - slices.Index(measuredOrder, b)
		})
	}
}
