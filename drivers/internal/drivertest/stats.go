package drivertest

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// BusyLoop is a shell command that keeps one core busy.
const BusyLoop = "while :; do :; done"

// BusyStats polls the stats of a busy task until its CPU percent and its
// memory (Usage, or RSS where the driver measures no Usage) are above zero,
// for at most timeout: CPU time only accrues in real time. It fails the
// test with the last sample otherwise.
func BusyStats(t *testing.T, d drivers.StatsReporter, id string, timeout time.Duration) *drivers.TaskResourceUsage {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		u, err := d.TaskStats(id)
		must.NoError(t, err)
		cpu, mem := u.ResourceUsage.CpuStats, u.ResourceUsage.MemoryStats
		if cpu.Percent > 0 && max(mem.Usage, mem.RSS) > 0 {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s shows no CPU or memory after %s; last sample: cpu %+v, memory %+v", id, timeout, *cpu, *mem)
		}
		time.Sleep(50 * time.Millisecond) // real CPU time must accrue
	}
}
