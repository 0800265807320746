package testutil_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// realNow is the wall clock outside the bubble's fake one: the syscall is
// not faked, so it measures the real time a fan-out takes.
func realNow() time.Duration {
	var tv syscall.Timeval
	_ = syscall.Gettimeofday(&tv)
	return time.Duration(tv.Nano())
}

// cpuNow is the process's CPU time, user and system.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / (1 << 20)
}

// TestMemCluster_TemplateBench1000 is issue 21's whole-client template
// benchmark (benchmarks.md), run only with NOMAD_BENCH_TEMPLATES=1: one
// client runs 1,000 tasks, each with a template on one shared variable,
// against an in-process server over the real RPC path (the in-memory
// network, identities signed, blocking queries); it reports the heap and
// CPU at rest and, when the variable changes, the real time until all
// 1,000 files hold the new content and the CPU that took.
func TestMemCluster_TemplateBench1000(t *testing.T) {
	if os.Getenv("NOMAD_BENCH_TEMPLATES") == "" {
		t.Skip("a benchmark: set NOMAD_BENCH_TEMPLATES=1 to run it")
	}
	const n = 1000
	testutil.Bubble(t, func(t *testing.T) {
		var allocRoot string
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 1,
			Client: func(_ int, cc *client.Config) {
				allocRoot = cc.AllocDir
				cc.Resources.CPUTotalCompute, cc.Resources.MemoryTotalMB = 1_000_000, 1_000_000
			}})
		putVar(t, c, "nomad/jobs/edge-app", map[string]string{"v": "0"})
		job := disconnectJob()
		job.TaskGroups[0].Count = n
		job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 1, MemoryMB: 10}
		job.TaskGroups[0].EphemeralDisk = &structs.EphemeralDisk{SizeMB: 1}
		job.TaskGroups[0].Tasks[0].Templates = []*structs.Template{{
			EmbeddedTmpl: `{{ with nomadVar "nomad/jobs/edge-app" }}{{ .v }}{{ end }}`,
			DestPath:     "local/v", ChangeMode: structs.TemplateChangeModeNoop,
		}}
		job.Canonicalize()
		must.NoError(t, c.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &structs.JobRegisterResponse{}))
		files := func(want string) int {
			got := 0
			for _, a := range c.Clients[0].Allocs() {
				if b, err := os.ReadFile(filepath.Join(allocRoot, a.ID, "app", "local", "v")); err == nil && string(b) == want {
					got++
				}
			}
			return got
		}
		start := realNow()
		wait.Eventually(t, 10*time.Minute, "1,000 tasks rendered", func() (bool, string) {
			got := files("0")
			return got == n, fmt.Sprintf("%d rendered of %d allocations on the client", got, len(c.Clients[0].Allocs()))
		})
		t.Logf("1,000 tasks placed and rendered in %v (real)", (realNow() - start).Round(time.Millisecond))
		testutil.Settle(time.Minute)

		heap := heapMB()
		cpu0 := cpuNow()
		testutil.Settle(10 * time.Minute)
		t.Logf("at rest: heap %.0f MB, goroutines %d, CPU %v over 10 fake minutes (timers and heartbeats; blocking queries held)",
			heap, runtime.NumGoroutine(), (cpuNow() - cpu0).Round(time.Millisecond))

		for round := 1; round <= 3; round++ {
			want := fmt.Sprint(round)
			cpu0, start = cpuNow(), realNow()
			putVar(t, c, "nomad/jobs/edge-app", map[string]string{"v": want})
			wait.Eventually(t, 10*time.Minute, "the change in all 1,000 files", func() (bool, string) {
				got := files(want)
				return got == n, fmt.Sprintf("%d of %d", got, n)
			})
			t.Logf("change %d: all 1,000 files rewritten in %v real, %v CPU; heap after %.0f MB", round,
				(realNow() - start).Round(time.Millisecond), (cpuNow() - cpu0).Round(time.Millisecond), heapMB())
		}
	})
}
