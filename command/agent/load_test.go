package agent_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// Load test bounds: 500 slow HTTP clients and 500 half-open RPC
// connections, spread over loopback addresses so each stays under the
// default per-client limit of 100 (Linux routes all of 127.0.0.0/8 locally).
const (
	loadSlowHTTP     = 500
	loadHalfOpenRPC  = 500
	loadSourceIPs    = 6 // 127.0.0.2 .. 127.0.0.7: 84 connections each
	loadHealthBudget = time.Second
	// loadHeapBudget is the Go heap growth allowed while the connections
	// are open: runs measured 17–19 MiB, the load clients in the same process included
	// (benchmarks.md).
	loadHeapBudget = 64 << 20
	// loadCloseBy bounds when every slow connection must be gone: the
	// HTTP header timeout (10s) plus slack for a loaded machine.
	loadCloseBy = 20 * time.Second
)

// slowConn is one load connection and when the agent closed it.
type slowConn struct {
	conn     net.Conn
	openedAt time.Time
	closedAt time.Time
	// sent counts the trickled header bytes that reached the socket.
	sent int
}

// openSlow dials n connections to addr from the loopback source IPs and
// watches each for the agent closing it.
func openSlow(t *testing.T, addr string, n int, wg *sync.WaitGroup) []*slowConn {
	t.Helper()
	out := make([]*slowConn, n)
	for i := range n {
		src := net.IPv4(127, 0, 0, byte(2+i%loadSourceIPs))
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", addr)
		must.NoError(t, err, must.Sprintf("dialing load connection %d from %s", i, src))
		t.Cleanup(func() { c.Close() })
		sc := &slowConn{conn: c, openedAt: time.Now()}
		out[i] = sc
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(io.Discard, c) // returns when the agent closes it
			sc.closedAt = time.Now()
		}()
	}
	return out
}

// heapInuse is the Go heap in use after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestLoad_SlowClients checks the agent keeps answering health checks
// while 500 slow HTTP clients (a request header sent a byte at a time)
// and 500 half-open RPC connections (nothing sent) hold connections, that
// its heap grows less than loadHeapBudget, and that the timeouts close
// every one of them: edge servers face strangers on public networks, and
// a slowloris must neither stall nor exhaust them.
func TestLoad_SlowClients(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: about 10s")
	}
	a := agenttest.NewDevAgent(t, nil)
	httpAddr := a.Agent.HTTPAddr().String()
	rpcAddr := a.Server().RPCAddr().String()
	before, rssBefore := heapInuse(), vmRSS()

	var wg sync.WaitGroup
	start := time.Now()
	rpcConns := openSlow(t, rpcAddr, loadHalfOpenRPC, &wg)
	httpConns := openSlow(t, httpAddr, loadSlowHTTP, &wg)
	opened := time.Since(start)

	// The slow clients trickle an endless request header, one byte per
	// connection every 200ms, until the agent closes them.
	stopTrickle := make(chan struct{})
	go func() {
		hdr := []byte("GET /v1/agent/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		for {
			for _, sc := range httpConns {
				b := byte('a')
				if sc.sent < len(hdr) {
					b = hdr[sc.sent]
				}
				// A write the deadline cut off is sent again next
				// round: on a loaded machine a skipped byte would
				// corrupt the request line, and the agent would
				// rightly answer 400 and close long before its
				// header timeout.
				_ = sc.conn.SetWriteDeadline(time.Now().Add(10 * time.Millisecond))
				if n, _ := sc.conn.Write([]byte{b}); n == 1 {
					sc.sent++
				}
			}
			select {
			case <-stopTrickle:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	defer close(stopTrickle)

	allClosed := make(chan struct{})
	go func() { wg.Wait(); close(allClosed) }()

	// Health checks from 127.0.0.1, a new connection each, until every
	// load connection is gone.
	health := &http.Client{Timeout: loadHealthBudget, Transport: &http.Transport{DisableKeepAlives: true}}
	var latencies []time.Duration
	var peak, peakRSS uint64
	deadline := time.After(loadCloseBy)
	for done := false; !done; {
		t0 := time.Now()
		resp, err := health.Get("http://" + httpAddr + "/v1/agent/health")
		lat := time.Since(t0)
		must.NoError(t, err, must.Sprintf("health check %d, %s into the load", len(latencies), time.Since(start)))
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		must.Eq(t, http.StatusOK, resp.StatusCode)
		must.Less(t, loadHealthBudget, lat)
		latencies = append(latencies, lat)
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = max(peak, m.HeapInuse)
		peakRSS = max(peakRSS, vmRSS())
		select {
		case <-allClosed:
			done = true
		case <-deadline:
			t.Fatalf("load connections still open after %s: %d RPC, %d HTTP", loadCloseBy, countOpen(rpcConns), countOpen(httpConns))
		case <-time.After(100 * time.Millisecond):
		}
	}

	growth := int64(peak) - int64(before)
	must.Less(t, int64(loadHeapBudget), growth, must.Sprintf("heap grew %d MiB", growth>>20))
	// Closed by the timeouts, not by anything else: no RPC connection
	// before the 5s handshake timeout, no HTTP one before the 10s header
	// timeout (less a little for clock granularity).
	rpcFirst, rpcLast := closeSpan(rpcConns)
	httpFirst, httpLast := closeSpan(httpConns)
	must.Greater(t, 4500*time.Millisecond, rpcFirst)
	must.Greater(t, 9500*time.Millisecond, httpFirst)

	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	t.Logf("opened %d RPC + %d HTTP connections in %s", loadHalfOpenRPC, loadSlowHTTP, opened.Round(time.Millisecond))
	t.Logf("health checks: %d, p50 %s, p99 %s, max %s", len(latencies),
		latencies[len(latencies)/2].Round(time.Microsecond), latencies[len(latencies)*99/100].Round(time.Microsecond), latencies[len(latencies)-1].Round(time.Microsecond))
	t.Logf("heap in use: before %s, peak %s, growth %s (budget %s)", mib(before), mib(peak), mib(uint64(max(growth, 0))), mib(loadHeapBudget))
	t.Logf("process RSS (agent and load clients): before %s, peak %s", mib(rssBefore), mib(peakRSS))
	t.Logf("RPC connections closed %s-%s after opening; HTTP %s-%s", rpcFirst.Round(time.Millisecond), rpcLast.Round(time.Millisecond), httpFirst.Round(time.Millisecond), httpLast.Round(time.Millisecond))
}

func countOpen(cs []*slowConn) int {
	n := 0
	for _, c := range cs {
		if c.closedAt.IsZero() {
			n++
		}
	}
	return n
}

// closeSpan is the shortest and longest time a connection lived.
func closeSpan(cs []*slowConn) (lo, hi time.Duration) {
	lo = time.Hour
	for _, c := range cs {
		d := c.closedAt.Sub(c.openedAt)
		lo, hi = min(lo, d), max(hi, d)
	}
	return lo, hi
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// vmRSS is the process's resident set from /proc/self/status, 0 where
// there is none.
func vmRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
