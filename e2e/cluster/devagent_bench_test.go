package cluster

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// upstreamTool is the reference upstream agent in ../shared/tools.
const upstreamTool = "nomad-1.6.5"

// BenchmarkDevAgent_JobRegisterHTTP measures job registrations over HTTP
// on a dev agent (`nomad agent -dev`: one server, in-memory raft, and a
// client), ours and upstream 1.6.5's side by side: NOMAD_BENCH_ROUNDS
// rounds (default 3) of one fresh agent of each, alternating (round=1/ours,
// round=1/upstream, round=2/ours, ...), so a machine whose load moves
// weighs on both alike. (-count would run each sub-benchmark its count
// times in a row, not alternate.) 10 concurrent callers with the
// official Go client send `PUT /v1/jobs`; each job's datacenter has no
// node, so each evaluation is scheduled and ends blocked, the same work on
// both. It also reports the agent's RSS before the load (idle) and after.
// NOMAD_BENCH_PPROF=dir keeps our agent's CPU and allocation profiles of
// the load there.
//
//	go test -run '^$' -bench DevAgent_JobRegisterHTTP -benchtime 2000x ./e2e/cluster/
func BenchmarkDevAgent_JobRegisterHTTP(b *testing.B) {
	for round := range benchRounds() {
		for _, which := range []string{"ours", "upstream"} {
			b.Run(fmt.Sprintf("round=%d/%s", round+1, which), func(b *testing.B) { benchDevAgentRegister(b, which) })
		}
	}
}

// benchRounds is NOMAD_BENCH_ROUNDS, the rounds of a side-by-side
// benchmark (default 3).
func benchRounds() int {
	rounds, err := strconv.Atoi(os.Getenv("NOMAD_BENCH_ROUNDS"))
	if err != nil || rounds < 1 {
		return 3
	}
	return rounds
}

// benchDevAgentRegister is one round of BenchmarkDevAgent_JobRegisterHTTP
// against a fresh dev agent of which ("ours" or "upstream").
func benchDevAgentRegister(b *testing.B, which string) {
	ags := harness.NewAgents(b)
	p := harness.FreePorts(b)
	cfg := harness.AgentConfig{Name: which, Ports: p, Args: []string{"-dev"}}
	cfg.Config = fmt.Sprintf(`data_dir = "@DATA_DIR@"
bind_addr = "127.0.0.1"
log_level = "WARN"
ports {
  http = %d
  rpc  = %d
  serf = %d
}
`, p.HTTP, p.RPC, p.Serf)
	if which == "upstream" {
		cfg.Bin = harness.Tool(b, upstreamTool)
		cfg.Config += harness.UpstreamOnLoopback
	} else {
		cfg.Config += "enable_debug = true\n"
	}
	a := ags.Add(cfg)
	a.Start()
	api := a.API()
	wait.Poll(b, 30*time.Second, "the dev agent's node is ready", func() (bool, string) {
		nodes, _, err := api.Nodes().List(nil)
		if err != nil {
			return false, err.Error()
		}
		return len(nodes) == 1 && nodes[0].Status == "ready", fmt.Sprintf("nodes: %v", nodes)
	})
	idle := rssMiB(a.PID())
	var stopProfile func()
	if dir := os.Getenv("NOMAD_BENCH_PPROF"); dir != "" && which == "ours" {
		stopProfile = profileAgent(b, a, dir, "")
	}
	cpu := startCPU(a.PID())
	rate := registerLoad(b, api, 10, func(i int) *nomadapi.Job {
		job := mockJob(fmt.Sprintf("bench-%d", i))
		job.Datacenters = []string{"nowhere"}
		return job
	})
	cpu.report(b)
	if stopProfile != nil {
		stopProfile()
	}
	b.ReportMetric(rate, "registrations/s")
	b.ReportMetric(idle, "idle-RSS-MiB")
	b.ReportMetric(rssMiB(a.PID()), "loaded-RSS-MiB")
}

// cpuMeter reads the CPU time the agents' processes and the benchmark's
// own (the callers: the official client's encoding and HTTP) spend during
// a load, to tell a load bound by CPU (the two add up to the machine's
// cores) from one that waits.
type cpuMeter struct {
	pids        []int
	agents, own time.Duration
	start       time.Time
}

func startCPU(pids ...int) *cpuMeter {
	m := &cpuMeter{pids: pids, start: time.Now()}
	m.agents, m.own = m.read()
	return m
}

func (m *cpuMeter) read() (agents, own time.Duration) {
	for _, pid := range m.pids {
		agents += procCPU(pid)
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		own = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return agents, own
}

// report adds the agents' CPU per operation (b.N), summed over them,
// the callers' and the agents' cores in use over the load.
func (m *cpuMeter) report(b *testing.B) {
	agents, own := m.read()
	agents, own = agents-m.agents, own-m.own
	elapsed := time.Since(m.start)
	b.ReportMetric(float64(agents.Microseconds())/float64(b.N), "agent-CPU-µs/op")
	b.ReportMetric(float64(own.Microseconds())/float64(b.N), "caller-CPU-µs/op")
	b.ReportMetric(agents.Seconds()/elapsed.Seconds(), "agent-cores")
}

// procCPU is a process's user and system CPU time so far (0 when
// unreadable), from /proc/PID/stat in clock ticks of 1/100 s (Linux's
// USER_HZ on every architecture Go runs on).
func procCPU(pid int) time.Duration {
	buf, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing one. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(buf, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(buf[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// registerLoad registers b.N jobs made by job through api from callers
// concurrent goroutines and returns the registrations per second. It
// fails the benchmark when any registration failed.
func registerLoad(b *testing.B, api *nomadapi.Client, callers int, job func(i int) *nomadapi.Job) float64 {
	b.Helper()
	return callLoad(b, callers, "registrations", func(i int) error {
		_, _, err := api.Jobs().Register(job(i), nil)
		return err
	})
}

// callLoad makes b.N calls (call(0) to call(b.N-1)) from callers
// concurrent goroutines and returns the calls per second. It fails the
// benchmark, naming what (plural) failed, when any call did.
func callLoad(b *testing.B, callers int, what string, call func(i int) error) float64 {
	b.Helper()
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if err := call(int(i)); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d %s failed, the first: %v", n, b.N, what, firstErr.Load())
	}
	return float64(b.N) / elapsed.Seconds()
}

// rssMiB is a process's resident set in MiB (0 when unreadable).
func rssMiB(pid int) float64 {
	kb, err := procStatusKB(pid, "VmRSS")
	if err != nil {
		return 0
	}
	return float64(kb) / 1024
}

// profileAgent starts a CPU profile of the agent's next 5 seconds, over
// its pprof endpoint (enable_debug), and returns what waits for it and
// then saves it and the allocation profile (since the agent started) in
// dir, as prefix+"cpu.pprof" and prefix+"allocs.pprof".
func profileAgent(b *testing.B, a *harness.Agent, dir, prefix string) (stop func()) {
	b.Helper()
	fetch := func(path, file string) {
		resp, err := http.Get(a.HTTPAddr() + "/v1/agent/pprof/" + path)
		if err != nil {
			b.Logf("pprof %s: %v", path, err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			b.Logf("pprof %s: %v", path, err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fetch("profile?seconds=5", prefix+"cpu.pprof")
	}()
	return func() {
		<-done
		fetch("allocs", prefix+"allocs.pprof")
	}
}
