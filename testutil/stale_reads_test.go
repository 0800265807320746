package testutil_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
)

// TestStaleReads_FollowerCutOffWakesItsWaiters checks that a follower cut
// off from the other servers answers the stale blocking queries it holds
// once it has been without a leader for leaderLossGrace (10 s), with
// KnownLeader false, instead
// of holding them for their whole wait while the cluster moves on. The
// clients' allocation watches are such queries, and a client that gets
// this answer asks the leader next.
func TestStaleReads_FollowerCutOffWakesItsWaiters(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3})
		leader := c.WaitForLeader()
		f := (leader + 1) % 3
		follower := c.Servers[f]

		done := staleJobList(follower)
		testutil.Settle(time.Second)
		select {
		case a := <-done:
			t.Fatalf("the stale query returned before any fault: %+v", a)
		default:
		}

		c.Net.Isolate(testutil.ServerHost(f), fault.Blackhole)
		defer c.Net.Heal(testutil.ServerHost(f))
		a := <-done
		must.NoError(t, a.err)
		must.False(t, a.resp.KnownLeader)
		t.Logf("answered %v after the query began", a.took)
		must.Less(t, time.Minute, a.took, must.Sprint("the query was held past the loss of the leader"))
	})
}

// TestStaleReads_ElectionWakesNoWaiters checks the other side: an
// election among servers that reach each other (the leader stopped) does
// not wake a follower's stale waits, which would send a fleet's watches
// to the new leader all at once.
func TestStaleReads_ElectionWakesNoWaiters(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3})
		leader := c.WaitForLeader()
		waits := map[int]<-chan staleAnswer{}
		for i := range c.Servers {
			if i != leader {
				waits[i] = staleJobList(c.Servers[i])
			}
		}
		testutil.Settle(time.Second)

		must.NoError(t, c.Servers[leader].Shutdown())
		next := c.WaitForLeaderExcept(leader)
		t.Logf("server %d leads after server %d stopped", next, leader)
		testutil.Settle(time.Minute)
		// The one that still follows is the server in question (the new
		// leader's wait is its own now).
		for i, done := range waits {
			if i == next {
				continue
			}
			select {
			case a := <-done:
				t.Fatalf("the election woke server %d's stale query after %v: %+v", i, a.took, a)
			default:
			}
		}
	})
}

type staleAnswer struct {
	resp structs.JobListResponse
	err  error
	took time.Duration
}

// staleJobList starts a stale Job.List on s that blocks until its
// 5-minute wait runs out (its index is never reached) and returns where
// its answer will come.
func staleJobList(s *nomad.Server) <-chan staleAnswer {
	done := make(chan staleAnswer, 1)
	go func() {
		start := time.Now()
		var a staleAnswer
		a.err = s.RPC("Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{
			Region: "global", Namespace: "default", AllowStale: true,
			MinQueryIndex: 1 << 40, MaxQueryTime: structs.DefaultBlockingQueryTime,
		}}, &a.resp)
		a.took = time.Since(start)
		done <- a
	}()
	return done
}
