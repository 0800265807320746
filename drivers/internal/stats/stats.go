package stats

import (
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
)

// CPUTime is CPU time consumed since a task started, in nanoseconds.
type CPUTime = cgroup.CPUTime

// Sampler remembers a task's previous CPU sample. It is safe for
// concurrent use.
type Sampler struct {
	mu   sync.Mutex
	at   time.Time
	last CPUTime
}

// NewSampler returns a sampler whose first interval starts when the task
// did, at zero CPU time.
func NewSampler(startedAt time.Time) *Sampler {
	return &Sampler{at: startedAt}
}

// Percent returns the user, system and total CPU of the interval since the
// previous sample, in percent of one core, and makes cur the previous one.
// Counters that went backwards (a sum over processes, one of which exited)
// count the interval as idle rather than negative.
func (s *Sampler) Percent(now time.Time, cur CPUTime) (user, system, total float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	elapsed := now.Sub(s.at)
	prev := s.last
	s.at, s.last = now, cur
	if elapsed <= 0 {
		return 0, 0, 0
	}
	pct := func(a, b uint64) float64 {
		if a < b {
			return 0
		}
		return 100 * float64(a-b) / float64(elapsed.Nanoseconds())
	}
	return pct(cur.User, prev.User), pct(cur.System, prev.System), pct(cur.Total, prev.Total)
}

// CPUStats fills a CpuStats from a sample.
func (s *Sampler) CPUStats(now time.Time, cur CPUTime, measured []string) *drivers.CpuStats {
	u, sys, total := s.Percent(now, cur)
	return &drivers.CpuStats{UserMode: u, SystemMode: sys, Percent: total, Measured: measured}
}

// FromCgroup is the task's usage as its cgroups count it.
func FromCgroup(cg cgroup.Cgroups, s *Sampler, now time.Time) *drivers.TaskResourceUsage {
	u := cg.Usage()
	cpu := s.CPUStats(now, u.CPU, u.MeasuredCPU)
	cpu.ThrottledPeriods, cpu.ThrottledTime = u.ThrottledPeriods, u.ThrottledTime
	mem := u.Memory
	return &drivers.TaskResourceUsage{
		ResourceUsage: &drivers.ResourceUsage{MemoryStats: &mem, CpuStats: cpu},
		Timestamp:     now.UnixNano(),
		Pids:          Procs(cg.Pids(), now),
	}
}

// FromProcs is the usage of a task without cgroups: the sum over its live
// processes, from /proc. CPU used by children that have exited is not in it.
func FromProcs(pids []int, s *Sampler, now time.Time) *drivers.TaskResourceUsage {
	out := &drivers.TaskResourceUsage{Timestamp: now.UnixNano(), Pids: map[string]*drivers.ResourceUsage{}}
	var cpu CPUTime
	var rss uint64
	for _, pid := range pids {
		p, ok := readProc(pid)
		if !ok {
			continue
		}
		cpu.User, cpu.System, cpu.Total = cpu.User+p.cpu.User, cpu.System+p.cpu.System, cpu.Total+p.cpu.Total
		rss += p.rss
		out.Pids[strconv.Itoa(pid)] = p.usage(now)
	}
	out.ResourceUsage = &drivers.ResourceUsage{
		MemoryStats: &drivers.MemoryStats{RSS: rss, Measured: procMemMeasured},
		CpuStats:    s.CPUStats(now, cpu, procCPUMeasured),
	}
	return out
}

var (
	procMemMeasured = []string{drivers.MeasuredRSS}
	procCPUMeasured = []string{drivers.MeasuredSystemMode, drivers.MeasuredUserMode, drivers.MeasuredPercent}
	pageSize        = uint64(os.Getpagesize())
)

// tick is one USER_HZ clock tick, in nanoseconds.
const tick = uint64(time.Second / 100)

// procSample is what /proc says of one process.
type procSample struct {
	cpu       CPUTime
	rss       uint64
	startedAt time.Time
}

func readProc(pid int) (procSample, bool) {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return procSample{}, false
	}
	p := procSample{
		cpu:       CPUTime{User: st.UserTicks * tick, System: st.SystemTicks * tick},
		rss:       st.RSSPages * pageSize,
		startedAt: proc.StartedAt(st.StartTime),
	}
	p.cpu.Total = p.cpu.User + p.cpu.System
	return p, true
}

// usage is the process's usage over its whole life.
func (p procSample) usage(now time.Time) *drivers.ResourceUsage {
	return &drivers.ResourceUsage{
		MemoryStats: &drivers.MemoryStats{RSS: p.rss, Measured: procMemMeasured},
		CpuStats:    NewSampler(p.startedAt).CPUStats(now, p.cpu, procCPUMeasured),
	}
}

// Procs returns each live process's usage over its whole life, from /proc.
func Procs(pids []int, now time.Time) map[string]*drivers.ResourceUsage {
	out := make(map[string]*drivers.ResourceUsage, len(pids))
	for _, pid := range pids {
		if p, ok := readProc(pid); ok {
			out[strconv.Itoa(pid)] = p.usage(now)
		}
	}
	return out
}
