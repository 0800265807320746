//go:build linux

package rawexec

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// BenchmarkRawExec_100Tasks starts 100 tasks with the driver, one after
// the other, as the agent would, with a cgroup each (where the host has
// them and the benchmark runs as root) and without. It reports the mean
// start latency and what the 100 running tasks cost the agent's Go memory.
func BenchmarkRawExec_100Tasks(b *testing.B) {
	for _, mode := range []string{"cgroup", "no-cgroup"} {
		b.Run(mode, func(b *testing.B) {
			d, err := New(drivers.Options{Config: map[string]any{"enabled": true}})
			must.NoError(b, err)
			if mode == "no-cgroup" {
				d.cgroupHost = func() cgroupHost { return cgroupHost{} }
			} else if detectCgroupHost().version == 0 {
				b.Skip("the host offers no cgroups (or this is not root)")
			}
			benchStarts(b, d)
		})
	}
}

func benchStarts(b *testing.B, d *Driver) {
	const n = 100
	var total time.Duration
	var held int
	for b.Loop() {
		b.StopTimer()
		cfgs := make([]*drivers.TaskConfig, n)
		for i := range cfgs {
			dir := b.TempDir()
			cfgs[i] = &drivers.TaskConfig{
				ID:      fmt.Sprintf("bench%d-%d-%d/web", os.Getpid(), b.N, i),
				Name:    "web",
				TaskDir: filepath.Join(dir, "web"),
				Config:  map[string]any{"command": "/bin/sleep", "args": []any{"300"}},
			}
		}
		before := drivertest.HeldKiB()
		b.StartTimer()
		start := time.Now()
		for _, c := range cfgs {
			_, err := d.StartTask(c)
			must.NoError(b, err)
		}
		total += time.Since(start)
		b.StopTimer()
		held += drivertest.HeldKiB() - before
		for _, c := range cfgs {
			must.NoError(b, d.DestroyTask(c.ID, true))
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N*n)/1000, "ms/start")
	b.ReportMetric(float64(held)/float64(b.N), "agent-KiB/100tasks")
}
