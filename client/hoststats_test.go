package client

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
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

// The stats endpoint's reading: memory used is total less available,
// CPUs in numeric order (cpu2 before cpu10) with their use since the
// previous reading, ticks consumed in MHz of the node's CPU, and the
// allocation directory's disk with its mount.
func TestHostStatsReader_Read(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		must.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	stat := write("stat", "cpu 0 0 0 0\ncpu10 10 0 0 90\ncpu2 50 0 0 50\n")
	r := &hostStatsReader{
		src: statsSources{
			hostSources: hostSources{memInfo: write("meminfo", "MemTotal: 1000 kB\nMemFree: 200 kB\nMemAvailable: 600 kB\n"), mounts: write("mounts", "/dev/sda1 / ext4 rw 0 0\n")},
			procStat:    stat,
			uptime:      write("uptime", "42.9 1.0\n"),
		},
		allocDir: dir,
	}
	st := r.read(time.Unix(10, 0), 2000)
	must.Eq(t, &structs.HostMemoryStats{Total: 1000 * 1024, Available: 600 * 1024, Used: 400 * 1024, Free: 200 * 1024}, st.Memory)
	must.Len(t, 2, st.CPU)
	must.Eq(t, "cpu2", st.CPU[0].CPU)
	must.Eq(t, 50.0, st.CPU[0].User)
	must.Eq(t, 90.0, st.CPU[1].Idle)
	must.Eq(t, 600.0, st.CPUTicksConsumed, must.Sprint("(50% + 10%) / 2 of 2000 MHz"))
	must.Eq(t, uint64(42), st.Uptime)
	must.Eq(t, int64(10_000_000_000), st.Timestamp)
	must.NotNil(t, st.AllocDirStats)
	must.Eq(t, "/dev/sda1", st.AllocDirStats.Device)
	must.Eq(t, "/", st.AllocDirStats.Mountpoint)

	// The next reading is the change since this one.
	write("stat", "cpu10 10 0 0 190\ncpu2 150 0 0 50\n")
	st = r.read(time.Unix(20, 0), 2000)
	must.Eq(t, 0.0, st.CPU[1].User)
	must.Eq(t, 100.0, st.CPU[0].User)

	// A reading within the same jiffy still lists every CPU, at the use
	// last measured (`node status` then `node status -stats` at once
	// printed "CPU Stats" with no CPU under it).
	st = r.read(time.Unix(20, 1), 2000)
	must.Len(t, 2, st.CPU)
	must.Eq(t, 100.0, st.CPU[0].User)
	must.Eq(t, 0.0, st.CPU[1].User)
	// ... and the next measures from the last reading that measured.
	write("stat", "cpu10 60 0 0 240\ncpu2 150 0 0 150\n")
	st = r.read(time.Unix(30, 0), 2000)
	must.Eq(t, 0.0, st.CPU[0].User)
	must.Eq(t, 50.0, st.CPU[1].User)

	// Counters that went back (a CPU offline and back) measure afresh.
	write("stat", "cpu10 1 0 0 1\ncpu2 160 0 0 160\n")
	st = r.read(time.Unix(40, 0), 2000)
	must.Len(t, 1, st.CPU)
	must.Eq(t, "cpu2", st.CPU[0].CPU)
}
