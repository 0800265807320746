package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCluster_JobRegisterHTTP measures job registrations as an
// operator's tools make them: HTTP requests, through the official Go
// client, to a follower of three real server processes on loopback with
// raft on disk. Each is decoded, forwarded to the leader over RPC, written
// to raft, replicated and fsynced by a majority, then scheduled (no client
// runs, so each evaluation ends blocked). 32 concurrent callers.
//
//	go test -run '^$' -bench Cluster_JobRegisterHTTP -benchtime 3000x ./e2e/cluster/
func BenchmarkCluster_JobRegisterHTTP(b *testing.B) {
	c := newCluster(b, clusterOpts{servers: 3})
	c.startServers()
	follower := c.follower()
	api := follower.API()
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if _, _, err := api.Jobs().Register(mockJob(fmt.Sprintf("bench-%d", i)), nil); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d registrations failed", n, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "registrations/s")
}
