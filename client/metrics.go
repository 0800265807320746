package client

import (
	"io"
	"strconv"
	"strings"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// The client's gauges, under upstream's names (every one is listed in
// website/content/docs/metrics.md). They go through go-metrics'
// process-wide instance, which the agent installs.

// statsSources are the files the host gauges read; tests point them at
// fixtures.
type statsSources struct {
	hostSources
	procStat string
	uptime   string
}

var defaultStatsSources = statsSources{hostSources: defaultHostSources, procStat: "/proc/stat", uptime: "/proc/uptime"}

// publishStats emits the client's gauges every StatsCollectionInterval
// until shutdown: allocation counts always, host and allocated-capacity
// gauges with PublishNodeMetrics, each allocation's resources with
// PublishAllocationMetrics. A zero interval publishes nothing.
func (c *Client) publishStats() {
	interval := c.cfg.StatsCollectionInterval
	if interval <= 0 {
		return
	}
	h := &hostGauges{r: &hostStatsReader{src: defaultStatsSources, allocDir: c.cfg.AllocDir}}
	for c.sleep(interval) {
		node := c.Node()
		labels := baseLabels(node)
		allocs := c.Allocs()
		emitAllocCounts(allocs, labels)
		if c.cfg.PublishNodeMetrics {
			h.emit(labels, c.clock.Now())
			emitAllocated(node, allocs, labels)
		}
		if c.cfg.PublishAllocationMetrics {
			emitAllocResources(allocs, labels)
		}
	}
}

// baseLabels name the node on every client gauge, as upstream's do.
func baseLabels(n *structs.Node) []metrics.Label {
	return []metrics.Label{
		{Name: "node_id", Value: n.ID}, {Name: "datacenter", Value: n.Datacenter},
		{Name: "node_class", Value: n.NodeClass}, {Name: "node_pool", Value: n.NodePool},
	}
}

// emitAllocCounts publishes nomad.client.allocations.*. This client never
// waits on a previous allocation's data nor migrates it, so blocked and
// migrating are always zero; they are emitted for upstream's dashboards.
func emitAllocCounts(allocs []*structs.Allocation, labels []metrics.Label) {
	var running, pending, terminal float32
	for _, a := range allocs {
		switch {
		case a.ClientStatus == structs.AllocClientStatusRunning:
			running++
		case a.ClientStatus == structs.AllocClientStatusPending:
			pending++
		case a.ClientTerminalStatus():
			terminal++
		}
	}
	for _, g := range []struct {
		name string
		v    float32
	}{{"running", running}, {"pending", pending}, {"terminal", terminal}, {"blocked", 0}, {"migrating", 0}} {
		metrics.SetGaugeWithLabels([]string{"client", "allocations", g.name}, g.v, labels)
	}
}

// emitAllocated publishes what the live allocations take from the node
// and what is left, in the scheduler's units (MHz, MB).
func emitAllocated(node *structs.Node, allocs []*structs.Allocation, labels []metrics.Label) {
	used := &structs.ComparableResources{}
	for _, a := range allocs {
		if !a.ClientTerminalStatus() {
			used.Add(a.ComparableResources())
		}
	}
	capacity := node.Comparable()
	for _, r := range []struct {
		name        string
		used, total int64
	}{
		{"cpu", used.CPUShares, capacity.CPUShares},
		{"memory", used.MemoryMB, capacity.MemoryMB},
		{"disk", used.DiskMB, capacity.DiskMB},
	} {
		metrics.SetGaugeWithLabels([]string{"client", "allocated", r.name}, float32(r.used), labels)
		metrics.SetGaugeWithLabels([]string{"client", "unallocated", r.name}, float32(r.total-r.used), labels)
	}
}

// emitAllocResources publishes each live task's allocated CPU and memory.
// The series are per allocation, as upstream's: an operator turns them
// on knowing that.
func emitAllocResources(allocs []*structs.Allocation, base []metrics.Label) {
	for _, a := range allocs {
		if a.ClientTerminalStatus() || a.AllocatedResources == nil {
			continue
		}
		for task, r := range a.AllocatedResources.Tasks {
			labels := append([]metrics.Label{
				{Name: "alloc_id", Value: a.ID}, {Name: "job", Value: a.JobID}, {Name: "namespace", Value: a.Namespace},
				{Name: "task_group", Value: a.TaskGroup}, {Name: "task", Value: task},
			}, base...)
			metrics.SetGaugeWithLabels([]string{"client", "allocs", "cpu", "allocated"}, float32(r.Cpu.CpuShares), labels)
			metrics.SetGaugeWithLabels([]string{"client", "allocs", "memory", "allocated"}, float32(r.Memory.MemoryMB*1024*1024), labels)
			if r.Memory.MemoryMaxMB > 0 {
				metrics.SetGaugeWithLabels([]string{"client", "allocs", "memory", "max_allocated"}, float32(r.Memory.MemoryMaxMB*1024*1024), labels)
			}
		}
	}
}

// hostGauges publishes the host's memory, CPU, disk and uptime, read by
// a hostStatsReader of its own: CPU use is the change between two
// intervals, so the first interval has none.
type hostGauges struct {
	r      *hostStatsReader
	primed bool
}

func (h *hostGauges) emit(labels []metrics.Label, now time.Time) {
	st := h.r.read(now, 0)
	if m := st.Memory; m != nil {
		metrics.SetGaugeWithLabels([]string{"client", "host", "memory", "total"}, float32(m.Total), labels)
		metrics.SetGaugeWithLabels([]string{"client", "host", "memory", "available"}, float32(m.Available), labels)
		metrics.SetGaugeWithLabels([]string{"client", "host", "memory", "used"}, float32(m.Used), labels)
		metrics.SetGaugeWithLabels([]string{"client", "host", "memory", "free"}, float32(m.Free), labels)
	}
	if h.primed {
		for _, p := range st.CPU {
			l := append([]metrics.Label{{Name: "cpu", Value: p.CPU}}, labels...)
			metrics.SetGaugeWithLabels([]string{"client", "host", "cpu", "total"}, float32(100-p.Idle), l)
			metrics.SetGaugeWithLabels([]string{"client", "host", "cpu", "user"}, float32(p.User), l)
			metrics.SetGaugeWithLabels([]string{"client", "host", "cpu", "system"}, float32(p.System), l)
			metrics.SetGaugeWithLabels([]string{"client", "host", "cpu", "idle"}, float32(p.Idle), l)
		}
	}
	h.primed = true
	if d := st.AllocDirStats; d != nil {
		l := append([]metrics.Label{{Name: "disk", Value: d.Device}}, labels...)
		metrics.SetGaugeWithLabels([]string{"client", "host", "disk", "size"}, float32(d.Size), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "disk", "used"}, float32(d.Used), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "disk", "available"}, float32(d.Available), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "disk", "used_percent"}, float32(d.UsedPercent), l)
		metrics.SetGaugeWithLabels([]string{"client", "host", "disk", "inodes_percent"}, float32(d.InodesUsedPercent), l)
	}
	if st.Uptime > 0 {
		metrics.SetGaugeWithLabels([]string{"client", "uptime"}, float32(st.Uptime), labels)
	}
}

// parseUptime reads the host's uptime in seconds from /proc/uptime.
func parseUptime(r io.Reader) (float64, bool) {
	b, err := io.ReadAll(io.LimitReader(r, 256))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}
