package client

import (
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// The host gauges read /proc as the kernel writes it: memory in kB turned
// into bytes, per-CPU ticks without the aggregate line, uptime seconds.
func TestHostStats_Parse(t *testing.T) {
	m, ok := parseMemInfo(strings.NewReader("MemTotal:       16000 kB\nMemFree:         4000 kB\nMemAvailable:    8000 kB\nBuffers: 1 kB\n"))
	must.True(t, ok)
	must.Eq(t, hostMemory{Total: 16000 * 1024, Available: 8000 * 1024, Free: 4000 * 1024}, m)
	_, ok = parseMemInfo(strings.NewReader("MemFree: 1 kB\n"))
	must.False(t, ok, must.Sprint("no MemTotal, no memory gauges"))

	cpus := parseProcStat(strings.NewReader("cpu  10 0 10 80 0 0 0\ncpu0 5 1 4 90 10 0 0 0\ncpu1 1 0 1 8 0\nintr 5\n"))
	must.Eq(t, map[string]cpuTicks{
		"cpu0": {User: 6, System: 4, Idle: 100, Total: 110},
		"cpu1": {User: 1, System: 1, Idle: 8, Total: 10},
	}, cpus)

	up, ok := parseUptime(strings.NewReader("3600.52 7000.10\n"))
	must.True(t, ok)
	must.Eq(t, 3600.52, up)
	_, ok = parseUptime(strings.NewReader(""))
	must.False(t, ok)
}

// CPU use is the share of ticks between two readings; a reading that did
// not move forward (no time passed, a CPU that went offline) gives none
// rather than a division by zero or a negative share.
func TestHostStats_CPUUsage(t *testing.T) {
	p, ok := cpuUsage(cpuTicks{User: 10, System: 10, Idle: 80, Total: 100}, cpuTicks{User: 40, System: 20, Idle: 140, Total: 200})
	must.True(t, ok)
	must.Eq(t, cpuPercent{User: 30, System: 10, Idle: 60, Total: 40}, p)

	_, ok = cpuUsage(cpuTicks{Total: 100}, cpuTicks{Total: 100})
	must.False(t, ok)
	_, ok = cpuUsage(cpuTicks{Idle: 50, Total: 100}, cpuTicks{Idle: 10, Total: 120})
	must.False(t, ok)
}
