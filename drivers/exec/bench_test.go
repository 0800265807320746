//go:build linux

package exec

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

// BenchmarkExec_100Tasks starts 100 isolated tasks with the driver, as the
// agent would, one after the other: each start is namespaces, cgroups, the
// bind mounts and the exec of the command. It reports the mean start
// latency and what the 100 running tasks cost the agent's resident memory
// (the test binary stands in for the agent); the tasks' own memory and the
// kernel's are not the agent's.
func BenchmarkExec_100Tasks(b *testing.B) {
	if v, reason := checkHost(); v == 0 {
		b.Skipf("needs a host that can isolate tasks: %s", reason)
	}
	const n = 100
	var total time.Duration
	var held int
	for b.Loop() {
		b.StopTimer()
		d, err := New(drivers.Options{})
		must.NoError(b, err)
		cfgs := make([]*drivers.TaskConfig, n)
		for i := range cfgs {
			cfgs[i] = benchTaskConfig(b)
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

func benchTaskConfig(b *testing.B) *drivers.TaskConfig {
	b.Helper()
	dir := b.TempDir()
	must.NoError(b, os.Chmod(dir, 0o755))
	task := filepath.Join(dir, "web")
	must.NoError(b, os.MkdirAll(filepath.Join(task, "local"), 0o755))
	id := fmt.Sprintf("bench%d-%d", os.Getpid(), taskSeq.Add(1))
	return &drivers.TaskConfig{
		ID:      id + "/web",
		Name:    "web",
		AllocID: id,
		TaskDir: task,
		Config:  map[string]any{"command": "/bin/sleep", "args": []any{"300"}},
	}
}
