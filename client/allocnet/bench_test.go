package allocnet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocnet/allocnettest"
)

// iptablesRules counts the rules of the nat and filter tables.
func iptablesRules(b *testing.B) int {
	n := 0
	for _, table := range []string{"nat", "filter"} {
		out, err := exec.Command("iptables-save", "-t", table).Output()
		if err != nil {
			b.Fatalf("iptables-save: %v", err)
		}
		n += strings.Count(string(out), "\n-A ")
	}
	return n
}

// memNow is the agent's live heap after a collection and the kernel's
// available memory, in KiB: what the allocations' networks cost the
// agent's process and the host.
func memNow(b *testing.B) (heapKiB, availKiB int64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			availKiB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return int64(ms.HeapAlloc >> 10), availKiB
}

// BenchmarkManager_SetupTeardown measures what bridge mode adds to an
// allocation's start (Setup: namespace, CNI ADD of loopback, bridge,
// host-local, firewall, portmap with one port) and to its stop
// (Teardown: CNI DEL, namespace removal). Bounded by the plugins: each is
// a process exec, and bridge, firewall and portmap each run iptables
// several times under the xtables lock.
func BenchmarkManager_SetupTeardown(b *testing.B) {
	env := allocnettest.New(b)
	m := env.Manager(b)
	ctx := context.Background()
	var setup, teardown time.Duration
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("bench000-0000-4000-8000-%012d", i)
		start := time.Now()
		if _, err := m.Setup(ctx, allocnet.SetupInput{AllocID: id, Ports: []allocnet.PortMapping{{Label: "http", HostPort: 40000 + i%1000, ContainerPort: 8080}}}); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := m.Teardown(ctx, id); err != nil {
			b.Fatal(err)
		}
		setup += mid.Sub(start)
		teardown += time.Since(mid)
	}
	b.ReportMetric(float64(setup.Milliseconds())/float64(b.N), "setup-ms/op")
	b.ReportMetric(float64(teardown.Milliseconds())/float64(b.N), "teardown-ms/op")
}

// BenchmarkManager_100Allocs sets up 100 bridge-mode allocations with one
// port each on one bridge, as a busy edge node holds them, and reports
// the time per setup as the count grows (the iptables chains the plugins
// walk get longer), the iptables rules each allocation adds, and the
// time to tear them all down.
func BenchmarkManager_100Allocs(b *testing.B) {
	env := allocnettest.New(b)
	m := env.Manager(b)
	ctx := context.Background()
	const n = 100
	for b.Loop() {
		rules0 := iptablesRules(b)
		heap0, avail0 := memNow(b)
		start := time.Now()
		var first10, last10 time.Duration
		for i := range n {
			t0 := time.Now()
			id := fmt.Sprintf("bench100-0000-4000-8000-%012d", i)
			if _, err := m.Setup(ctx, allocnet.SetupInput{AllocID: id, Ports: []allocnet.PortMapping{{Label: "http", HostPort: 41000 + i, ContainerPort: 8080}}}); err != nil {
				b.Fatal(err)
			}
			switch d := time.Since(t0); {
			case i < 10:
				first10 += d
			case i >= n-10:
				last10 += d
			}
		}
		setupAll := time.Since(start)
		rules := iptablesRules(b) - rules0
		heap1, avail1 := memNow(b)
		start = time.Now()
		for i := range n {
			if err := m.Teardown(ctx, fmt.Sprintf("bench100-0000-4000-8000-%012d", i)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(setupAll.Seconds(), "setup-100-s")
		b.ReportMetric(float64(first10.Milliseconds())/10, "first10-ms/alloc")
		b.ReportMetric(float64(last10.Milliseconds())/10, "last10-ms/alloc")
		b.ReportMetric(float64(rules)/n, "rules/alloc")
		b.ReportMetric(float64(heap1-heap0)/n, "heap-KiB/alloc")
		b.ReportMetric(float64(avail0-avail1)/n, "host-KiB/alloc")
		b.ReportMetric(time.Since(start).Seconds(), "teardown-100-s")
	}
}
