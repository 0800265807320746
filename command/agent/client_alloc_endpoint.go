package agent

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/drivers"
)

// allocRestartRequest is the body of /v1/client/allocation/{id}/restart,
// as upstream's AllocationRestartRequest.
type allocRestartRequest struct {
	TaskName string
	AllTasks bool
}

// allocSignalRequest is the body of /v1/client/allocation/{id}/signal.
type allocSignalRequest struct {
	Task   string
	Signal string
}

// decodeSmallBody decodes an optional JSON body of a few fields.
func decodeSmallBody(r *http.Request, v any) error {
	err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(v)
	if err != nil && !errors.Is(err, io.EOF) {
		return codedErrorf(http.StatusBadRequest, "Invalid request body: %v", err)
	}
	return nil
}

// taskOpError maps the task runner's refusals to statuses.
func taskOpError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, allocrunner.ErrUnknownTask):
		return codedErrorf(http.StatusNotFound, "%v", err)
	case errors.Is(err, drivers.ErrUnknownSignal):
		return codedErrorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, allocrunner.ErrTaskNotRunning), errors.Is(err, allocrunner.ErrNotSupported):
		return codedErrorf(http.StatusBadRequest, "%v", err)
	}
	return err
}

// allocRestart handles PUT /v1/client/allocation/{alloc}/restart: the
// named task, or all of them, restart in place.
func (s *HTTPServer) allocRestart(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	var req allocRestartRequest
	if err := decodeSmallBody(r, &req); err != nil {
		return err
	}
	if req.TaskName == "" {
		req.TaskName = r.URL.Query().Get("task")
	}
	task := req.TaskName
	if req.AllTasks {
		task = ""
	}
	if err := taskOpError(ar.Restart(task)); err != nil {
		return err
	}
	return writeJSON(w, struct{}{})
}

// allocSignal handles PUT /v1/client/allocation/{alloc}/signal. The
// default signal is SIGKILL, as upstream's.
func (s *HTTPServer) allocSignal(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	var req allocSignalRequest
	if err := decodeSmallBody(r, &req); err != nil {
		return err
	}
	if req.Signal == "" {
		req.Signal = "SIGKILL"
	}
	if err := taskOpError(ar.Signal(req.Task, req.Signal)); err != nil {
		return err
	}
	return writeJSON(w, struct{}{})
}

// Resource usage, with upstream's field names (AllocResourceUsage).
type (
	memoryStats struct {
		RSS, Cache, Swap, Usage, MaxUsage, KernelUsage, KernelMaxUsage uint64
		Measured                                                       []string
	}
	cpuStats struct {
		SystemMode, UserMode, TotalTicks float64
		ThrottledPeriods, ThrottledTime  uint64
		Percent                          float64
		Measured                         []string
	}
	resourceUsage struct {
		MemoryStats *memoryStats
		CpuStats    *cpuStats
	}
	taskResourceUsage struct {
		ResourceUsage *resourceUsage
		Timestamp     int64
		Pids          map[string]*resourceUsage
	}
	allocResourceUsage struct {
		ResourceUsage *resourceUsage
		Tasks         map[string]*taskResourceUsage
		Timestamp     int64
	}
)

// Measured names what the /proc reading fills: no cache, swap or
// throttling, which need the task's cgroup.
var (
	measuredMemory = []string{"RSS"}
	measuredCPU    = []string{"System Mode", "User Mode", "Percent"}
)

// allocStats handles GET /v1/client/allocation/{alloc}/stats: CPU and
// memory of each task's processes, read from /proc (the task's process
// group, when its driver reports a pid). Tasks whose driver reports none
// (mock_driver) have empty usage.
func (s *HTTPServer) allocStats(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	now := time.Now()
	out := allocResourceUsage{
		ResourceUsage: &resourceUsage{MemoryStats: &memoryStats{Measured: measuredMemory}, CpuStats: &cpuStats{Measured: measuredCPU}},
		Tasks:         map[string]*taskResourceUsage{},
		Timestamp:     now.UnixNano(),
	}
	for _, tr := range ar.Tasks() {
		tu := &taskResourceUsage{
			ResourceUsage: &resourceUsage{MemoryStats: &memoryStats{Measured: measuredMemory}, CpuStats: &cpuStats{Measured: measuredCPU}},
			Timestamp:     now.UnixNano(),
			Pids:          map[string]*resourceUsage{},
		}
		if pid := tr.PID(); pid > 0 {
			for _, p := range groupProcs(pid) {
				u := p.usage()
				tu.Pids[strconv.Itoa(p.pid)] = u
				addUsage(tu.ResourceUsage, u)
			}
		}
		addUsage(out.ResourceUsage, tu.ResourceUsage)
		out.Tasks[tr.Name()] = tu
	}
	return writeJSON(w, out)
}

func addUsage(dst, u *resourceUsage) {
	dst.MemoryStats.RSS += u.MemoryStats.RSS
	dst.MemoryStats.Usage += u.MemoryStats.Usage
	dst.CpuStats.UserMode += u.CpuStats.UserMode
	dst.CpuStats.SystemMode += u.CpuStats.SystemMode
	dst.CpuStats.TotalTicks += u.CpuStats.TotalTicks
	dst.CpuStats.Percent += u.CpuStats.Percent
}

// procSample is what /proc says of one process.
type procSample struct {
	pid               int
	utime, stime, age float64 // seconds
	rss               uint64  // bytes
}

func (p procSample) usage() *resourceUsage {
	pct := 0.0
	if p.age > 0 {
		pct = 100 * (p.utime + p.stime) / p.age
	}
	return &resourceUsage{
		MemoryStats: &memoryStats{RSS: p.rss, Usage: p.rss, Measured: measuredMemory},
		CpuStats: &cpuStats{
			UserMode: p.utime, SystemMode: p.stime, TotalTicks: (p.utime + p.stime) * clockTicks,
			Percent: pct, Measured: measuredCPU,
		},
	}
}

// clockTicks is USER_HZ, which is 100 on every Linux the client runs on.
const clockTicks = 100

// groupProcs returns the processes of the process group pgid leads: a
// raw_exec task and everything it forked.
func groupProcs(pgid int) []procSample {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	uptime := readUptime()
	var out []procSample
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command, which may hold spaces, close with ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 22 {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g != pgid {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		start, _ := strconv.ParseFloat(f[19], 64)
		rssPages, _ := strconv.ParseUint(f[21], 10, 64)
		out = append(out, procSample{
			pid: pid, utime: ut / clockTicks, stime: st / clockTicks,
			age: uptime - start/clockTicks, rss: rssPages * uint64(os.Getpagesize()),
		})
	}
	return out
}

func readUptime() float64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
