package checks

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRunner_1000TCPChecks measures the client's cost of 1,000 tcp
// checks: they run every second for 10 s of real time against a local
// listener (whose accept loop is counted too), and the CPU is scaled to
// the 10 s interval of the target (linear in the check rate);
// the heap is what the 1,000 checks hold. Run with -benchtime=1x.
func BenchmarkRunner_1000TCPChecks(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var list []Check
	for i := range 1000 {
		list = append(list, Check{
			Group: "g", Service: fmt.Sprintf("svc-%d", i), Address: l.Addr().String(),
			Spec: &structs.ServiceCheck{Name: "alive", Type: "tcp", Interval: time.Second, Timeout: time.Second},
		})
	}
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := New(Config{AllocID: "bench"})
		start, cpu0 := time.Now(), cpuTime()
		r.Set(list)
		time.Sleep(10 * time.Second)
		cpu, wall := cpuTime()-cpu0, time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		failing := 0
		for _, res := range r.Results() {
			if res.Status != ResultSuccess {
				failing++
			}
		}
		r.Stop()
		if failing > 0 {
			b.Fatalf("%d checks not passing", failing)
		}
		// At 1 s the checks ran 10× as often as at the 10 s target.
		b.ReportMetric(100*float64(cpu)/float64(wall)/10, "%core-at-10s")
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/(1<<20), "heap-MiB")
	}
}

// TestHelperHTTPServer is not a test: BenchmarkRunner_1000HTTPChecks runs
// the test binary with it as the process that answers the checks, so that
// the benchmark's own CPU time is the client's alone.
func TestHelperHTTPServer(t *testing.T) {
	if os.Getenv("NOMAD_BENCH_HTTP_SERVE") == "" {
		t.Skip("the HTTP server process of BenchmarkRunner_1000HTTPChecks")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(l.Addr().String())
	_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
}

// BenchmarkRunner_1000HTTPChecks is the benchmark as written: one
// client with 1,000 services, each with an http check at a 10 s interval,
// as 1,000 allocations (one Runner and one check each), for
// NOMAD_BENCH_CHECK_SECONDS of real time (default 60: six rounds). The
// checks are answered by another process (TestHelperHTTPServer), so the
// CPU measured, not scaled, is the client's: making the checks'
// connections, requests and timers. The heap is what the 1,000 runners
// hold at the end. Run with -benchtime=1x.
func BenchmarkRunner_1000HTTPChecks(b *testing.B) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHTTPServer$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), "NOMAD_BENCH_HTTP_SERVE=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	addr := strings.TrimSpace(line)
	seconds := 60
	if v, err := strconv.Atoi(os.Getenv("NOMAD_BENCH_CHECK_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		runners := make([]*Runner, 1000)
		start, cpu0 := time.Now(), cpuTime()
		for i := range runners {
			runners[i] = New(Config{AllocID: fmt.Sprintf("alloc-%d", i)})
			runners[i].Set([]Check{{
				Group: "g", Service: fmt.Sprintf("svc-%d", i), Address: addr,
				Spec: &structs.ServiceCheck{Name: "http", Type: "http", Path: "/health", Method: "GET",
					Interval: 10 * time.Second, Timeout: 2 * time.Second},
			}})
		}
		time.Sleep(time.Duration(seconds) * time.Second)
		cpu, wall := cpuTime()-cpu0, time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		failing := 0
		for _, r := range runners {
			for _, res := range r.Results() {
				if res.Status != ResultSuccess {
					failing++
				}
			}
			r.Stop()
		}
		if failing > 0 {
			b.Fatalf("%d checks not passing", failing)
		}
		b.ReportMetric(100*float64(cpu)/float64(wall), "%core")
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/(1<<20), "heap-MiB")
	}
}
