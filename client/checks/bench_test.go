package checks

import (
	"fmt"
	"net"
	"runtime"
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
