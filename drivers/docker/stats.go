package docker

import (
	"context"
	"net/http"
	"net/url"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/stats"
)

var _ drivers.StatsReporter = (*Driver)(nil)

// containerStats is the part of the engine's stats answer the driver reads.
// Memory is in bytes; CPU counters are nanoseconds since the container
// started. memory_stats.stats has rss and cache on cgroup v1 hosts, anon
// and file on v2.
type containerStats struct {
	MemoryStats struct {
		Usage    uint64            `json:"usage"`
		MaxUsage uint64            `json:"max_usage"`
		Stats    map[string]uint64 `json:"stats"`
	} `json:"memory_stats"`
	CPUStats struct {
		CPUUsage struct {
			TotalUsage        uint64 `json:"total_usage"`
			UsageInKernelmode uint64 `json:"usage_in_kernelmode"`
			UsageInUsermode   uint64 `json:"usage_in_usermode"`
		} `json:"cpu_usage"`
		ThrottlingData struct {
			ThrottledPeriods uint64 `json:"throttled_periods"`
			ThrottledTime    uint64 `json:"throttled_time"`
		} `json:"throttling_data"`
	} `json:"cpu_stats"`
}

// containerStats takes one sample: stream=false and one-shot=true make the
// engine answer at once instead of streaming, or waiting a second for a
// second sample. The driver keeps the previous sample itself.
func (c *client) containerStats(ctx context.Context, id string) (containerStats, error) {
	var out containerStats
	q := url.Values{"stream": {"false"}, "one-shot": {"true"}}
	err := c.call(ctx, http.MethodGet, "/containers/"+id+"/stats", q, nil, &out)
	return out, c.notFound(err, id)
}

var (
	dockerMemMeasured = []string{drivers.MeasuredRSS, drivers.MeasuredCache, drivers.MeasuredUsage, drivers.MeasuredMaxUsage}
	dockerCPUMeasured = []string{drivers.MeasuredSystemMode, drivers.MeasuredUserMode, drivers.MeasuredThrottledPeriods,
		drivers.MeasuredThrottledTime, drivers.MeasuredPercent}
)

// TaskStats implements drivers.StatsReporter through the engine's stats
// endpoint, one sample a call.
func (d *Driver) TaskStats(taskID string) (*drivers.TaskResourceUsage, error) {
	h, err := d.tasks.Get(taskID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	cs, err := d.api.containerStats(ctx, h.state.ContainerID)
	if err != nil {
		return nil, err
	}
	now := d.clock.Now()
	mem := cs.MemoryStats
	rss, cache := mem.Stats["rss"], mem.Stats["cache"]
	if _, v2 := mem.Stats["anon"]; v2 {
		rss, cache = mem.Stats["anon"], mem.Stats["file"]
	}
	cu := cs.CPUStats.CPUUsage
	cpu := h.cpu.CPUStats(now, stats.CPUTime{User: cu.UsageInUsermode, System: cu.UsageInKernelmode, Total: cu.TotalUsage}, dockerCPUMeasured)
	cpu.ThrottledPeriods = cs.CPUStats.ThrottlingData.ThrottledPeriods
	cpu.ThrottledTime = cs.CPUStats.ThrottlingData.ThrottledTime
	return &drivers.TaskResourceUsage{
		ResourceUsage: &drivers.ResourceUsage{
			MemoryStats: &drivers.MemoryStats{
				RSS: rss, Cache: cache, Usage: mem.Usage, MaxUsage: mem.MaxUsage, Measured: dockerMemMeasured,
			},
			CpuStats: cpu,
		},
		Timestamp: now.UnixNano(),
	}, nil
}
