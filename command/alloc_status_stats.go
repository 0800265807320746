package command

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// usedResources is the task's usage, nil when its driver measured nothing
// (the task is not running, or mock_driver).
func usedResources(u *api.TaskResourceUsage) *api.ResourceUsage {
	if u == nil || u.ResourceUsage == nil || u.ResourceUsage.MemoryStats == nil || u.ResourceUsage.CpuStats == nil {
		return nil
	}
	if len(u.ResourceUsage.MemoryStats.Measured) == 0 && len(u.ResourceUsage.CpuStats.Measured) == 0 {
		return nil
	}
	return u.ResourceUsage
}

// formatUsage renders the memory and CPU figures the driver measured, one
// column each, as upstream's -stats does; a task without usage says so.
func formatUsage(u *api.ResourceUsage) string {
	if u == nil {
		return "\n\nResource usage is not available for this task."
	}
	m, c := u.MemoryStats, u.CpuStats
	memory := map[string]string{
		"RSS": formatBytes(m.RSS), "Cache": formatBytes(m.Cache), "Swap": formatBytes(m.Swap),
		"Mapped File": formatBytes(m.MappedFile), "Usage": formatBytes(m.Usage), "Max Usage": formatBytes(m.MaxUsage),
		"Kernel Usage": formatBytes(m.KernelUsage), "Kernel Max Usage": formatBytes(m.KernelMaxUsage),
	}
	cpu := map[string]string{
		"Percent": fmt.Sprintf("%.2f%%", c.Percent), "System Mode": fmt.Sprintf("%.2f%%", c.SystemMode),
		"User Mode": fmt.Sprintf("%.2f%%", c.UserMode), "Throttled Periods": fmt.Sprint(c.ThrottledPeriods),
		"Throttled Time": fmt.Sprint(c.ThrottledTime),
	}
	var b strings.Builder
	for _, table := range []struct {
		title    string
		measured []string
		values   map[string]string
	}{{"Memory Stats", m.Measured, memory}, {"CPU Stats", c.Measured, cpu}} {
		names := slices.Sorted(slices.Values(table.measured))
		if len(names) == 0 {
			continue
		}
		vals := make([]string, len(names))
		for i, n := range names {
			vals[i] = table.values[n]
		}
		b.WriteString("\n\n" + table.title + "\n")
		b.WriteString(formatList([]string{strings.Join(names, "|"), strings.Join(vals, "|")}))
	}
	return b.String()
}

// formatBytes renders a byte count in binary units.
func formatBytes(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, suffixes := float64(n)/1024, []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for v >= 1024 && i < len(suffixes)-1 {
		v /= 1024
		i++
	}
	// One decimal below 10 and none above, rounded first, as upstream's
	// CLI shows sizes (go-humanize's IBytes): "1.5 GiB", "24 GiB".
	v = math.Round(v*10) / 10
	if v < 10 {
		return fmt.Sprintf("%.1f %s", v, suffixes[i])
	}
	return fmt.Sprintf("%.0f %s", v, suffixes[i])
}
