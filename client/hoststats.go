package client

import (
	"bufio"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// hostMemory is /proc/meminfo's view of memory, in bytes.
type hostMemory struct {
	Total, Available, Free uint64
}

// parseMemInfo reads MemTotal, MemAvailable and MemFree from
// /proc/meminfo; ok is false when MemTotal is missing.
func parseMemInfo(r io.Reader) (hostMemory, bool) {
	var m hostMemory
	seen := false
	s := bufio.NewScanner(r)
	for s.Scan() {
		key, rest, found := strings.Cut(s.Text(), ":")
		if !found {
			continue
		}
		var dst *uint64
		switch key {
		case "MemTotal":
			dst, seen = &m.Total, true
		case "MemAvailable":
			dst = &m.Available
		case "MemFree":
			dst = &m.Free
		default:
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if kb, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			*dst = kb * 1024
		}
	}
	return m, seen
}

// cpuTicks are one CPU's cumulative jiffies from /proc/stat.
type cpuTicks struct {
	User, System, Idle, Total uint64
}

// parseProcStat reads the per-CPU lines ("cpu0 ...") of /proc/stat, in
// order; the aggregate "cpu" line is left out.
func parseProcStat(r io.Reader) map[string]cpuTicks {
	out := map[string]cpuTicks{}
	s := bufio.NewScanner(r)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		var t cpuTicks
		for i, v := range f[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				break
			}
			t.Total += n
			switch i {
			case 0, 1: // user, nice
				t.User += n
			case 2: // system
				t.System += n
			case 3, 4: // idle, iowait
				t.Idle += n
			}
		}
		out[f[0]] = t
	}
	return out
}

// cpuPercent is one CPU's use between two readings, in percent.
type cpuPercent struct {
	User, System, Idle, Total float64
}

// cpuUsage compares two readings of the same CPU; ok is false when no
// time passed between them (or the counters went back: a CPU went
// offline and came back).
func cpuUsage(prev, cur cpuTicks) (cpuPercent, bool) {
	if cur.Total <= prev.Total || cur.Idle < prev.Idle || cur.User < prev.User || cur.System < prev.System {
		return cpuPercent{}, false
	}
	d := float64(cur.Total - prev.Total)
	p := cpuPercent{
		User:   100 * float64(cur.User-prev.User) / d,
		System: 100 * float64(cur.System-prev.System) / d,
		Idle:   100 * float64(cur.Idle-prev.Idle) / d,
	}
	p.Total = 100 - p.Idle
	return p, true
}

// hostDisk is the file system holding the allocation directory.
type hostDisk struct {
	Size, Used, Available uint64
	UsedPercent           float64
	InodesPercent         float64
}

func statDisk(path string) (hostDisk, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return hostDisk{}, false
	}
	bs := uint64(st.Bsize)
	d := hostDisk{Size: uint64(st.Blocks) * bs, Available: uint64(st.Bavail) * bs}
	d.Used = d.Size - uint64(st.Bfree)*bs
	if d.Size > 0 {
		d.UsedPercent = 100 * float64(d.Used) / float64(d.Size)
	}
	if st.Files > 0 {
		d.InodesPercent = 100 * float64(uint64(st.Files)-uint64(st.Ffree)) / float64(st.Files)
	}
	return d, true
}

// readFile opens path and hands it to parse, reporting whether it could.
func readFile(path string, parse func(io.Reader)) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	parse(f)
	return true
}

// hostStatsReader reads the host's stats from /proc and statfs. CPU use
// is the change since its previous reading; the first reading compares
// against the boot, so it is the average since then. Safe for concurrent
// use.
type hostStatsReader struct {
	src      statsSources
	allocDir string

	mu      sync.Mutex
	prevCPU map[string]cpuTicks   // each CPU's last reading that measured
	lastCPU map[string]cpuPercent // and what it measured
}

// read returns the host's stats now; totalMHz (the node's CPU) turns the
// CPUs' use into CPUTicksConsumed. A probe that fails leaves its part
// out.
func (h *hostStatsReader) read(now time.Time, totalMHz int64) *structs.HostStats {
	st := &structs.HostStats{Timestamp: now.UnixNano(), CPU: []*structs.HostCPUStats{}, DiskStats: []*structs.HostDiskStats{}, DeviceStats: []any{}}
	readFile(h.src.memInfo, func(r io.Reader) {
		if m, ok := parseMemInfo(r); ok {
			st.Memory = &structs.HostMemoryStats{Total: m.Total, Available: m.Available, Used: m.Total - m.Available, Free: m.Free}
		}
	})
	readFile(h.src.procStat, func(r io.Reader) {
		cur := parseProcStat(r)
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.prevCPU == nil {
			h.prevCPU, h.lastCPU = map[string]cpuTicks{}, map[string]cpuPercent{}
		}
		var sum float64
		for _, cpu := range slices.SortedFunc(maps.Keys(cur), compareCPUNames) {
			p, ok := cpuUsage(h.prevCPU[cpu], cur[cpu])
			last, measured := h.lastCPU[cpu]
			switch {
			case ok:
				h.prevCPU[cpu], h.lastCPU[cpu] = cur[cpu], p
			case cur[cpu].Total == h.prevCPU[cpu].Total && measured:
				// No tick since the previous reading (two requests
				// within a jiffy): the CPU is still there, at the use
				// last measured, and the next reading measures from
				// the same point.
				p = last
			default:
				// The counters went back (a CPU came back online):
				// measure from here on.
				h.prevCPU[cpu] = cur[cpu]
				delete(h.lastCPU, cpu)
				continue
			}
			st.CPU = append(st.CPU, &structs.HostCPUStats{CPU: cpu, User: p.User, System: p.System, Idle: p.Idle})
			sum += p.Total
		}
		if n := len(st.CPU); n > 0 {
			st.CPUTicksConsumed = sum / float64(n) / 100 * float64(totalMHz)
		}
	})
	if d, ok := statDisk(h.allocDir); ok {
		dev, mp := h.allocDir, ""
		readFile(h.src.mounts, func(r io.Reader) {
			if m, p := mountOf(r, h.allocDir); m != "" {
				dev, mp = m, p
			}
		})
		ds := &structs.HostDiskStats{Device: dev, Mountpoint: mp, Size: d.Size, Used: d.Used, Available: d.Available,
			UsedPercent: d.UsedPercent, InodesUsedPercent: d.InodesPercent}
		st.AllocDirStats = ds
		cp := *ds
		st.DiskStats = append(st.DiskStats, &cp)
	}
	readFile(h.src.uptime, func(r io.Reader) {
		if up, ok := parseUptime(r); ok {
			st.Uptime = uint64(up)
		}
	})
	return st
}

// compareCPUNames orders cpu2 before cpu10.
func compareCPUNames(a, b string) int {
	na, errA := strconv.Atoi(strings.TrimPrefix(a, "cpu"))
	nb, errB := strconv.Atoi(strings.TrimPrefix(b, "cpu"))
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return na - nb
}
