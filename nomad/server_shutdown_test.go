package nomad

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// A goroutine stuck on a raft write that raft dropped at shutdown does not
// keep the server from stopping: before, a race-detector run hung eleven
// minutes in Server.Shutdown waiting for a worker stuck in raftApply.
func TestServer_ShutdownLeavesAStuckGoroutineBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Server{logger: hclog.NewNullLogger()}
		stuck := make(chan struct{})
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			<-stuck // a future nobody answers
		}()
		start := time.Now()
		must.False(t, s.waitGoroutines(shutdownWait))
		must.Eq(t, shutdownWait, time.Since(start))
		close(stuck)
	})
}

// Goroutines that end are waited for, and no longer than they take.
func TestServer_ShutdownWaitsForGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Server{logger: hclog.NewNullLogger()}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			time.Sleep(time.Second) // fake time: a goroutine finishing its work
		}()
		start := time.Now()
		must.True(t, s.waitGoroutines(shutdownWait))
		must.Eq(t, time.Second, time.Since(start))
	})
}
