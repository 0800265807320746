package drivertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// BusyLoop is a shell command that keeps one core busy.
const BusyLoop = "while :; do :; done"

// BusyStats polls the stats of a busy task until its CPU percent and its
// memory (Usage, or RSS where the driver measures no Usage) are above zero,
// for at most timeout: CPU time only accrues in real time. It fails the
// test with the last sample otherwise.
func BusyStats(t *testing.T, d drivers.StatsReporter, id string, timeout time.Duration) *drivers.TaskResourceUsage {
	t.Helper()
	var u *drivers.TaskResourceUsage
	wait.Poll(t, timeout, "task "+id+" to show CPU and memory", func() (bool, string) {
		var err error
		u, err = d.TaskStats(id)
		must.NoError(t, err)
		cpu, mem := u.ResourceUsage.CpuStats, u.ResourceUsage.MemoryStats
		return cpu.Percent > 0 && max(mem.Usage, mem.RSS) > 0, fmt.Sprintf("cpu %+v, memory %+v", *cpu, *mem)
	})
	return u
}

// BenchStarts is the drivers' start benchmark: each round builds a driver
// with newDriver and n task configs with task (untimed), starts the tasks
// one after the other, as the agent would (timed), and destroys them. It
// reports the mean start latency and what 100 running tasks cost the
// agent's Go memory (the test binary stands in for the agent; the tasks'
// own memory and the kernel's are not the agent's).
func BenchStarts(b *testing.B, n int, newDriver func() drivers.Driver, task func() *drivers.TaskConfig) {
	var total time.Duration
	var held int
	for b.Loop() {
		b.StopTimer()
		d := newDriver()
		cfgs := make([]*drivers.TaskConfig, n)
		for i := range cfgs {
			cfgs[i] = task()
		}
		before := HeldKiB()
		b.StartTimer()
		start := time.Now()
		for _, c := range cfgs {
			_, err := d.StartTask(c)
			must.NoError(b, err)
		}
		total += time.Since(start)
		b.StopTimer()
		held += HeldKiB() - before
		for _, c := range cfgs {
			must.NoError(b, d.DestroyTask(c.ID, true))
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N*n)/1000, "ms/start")
	b.ReportMetric(float64(held)/float64(b.N)*100/float64(n), "agent-KiB/100tasks")
}
