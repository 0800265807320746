package testutil_test

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
)

// BenchmarkServers_JobRegister measures job registrations through a
// three-server cluster on loopback with raft on disk: each registration is
// a raft entry replicated to both followers and fsynced by a majority
// before it is acknowledged. Registrations come from 32 concurrent callers
// on a follower, so each is also forwarded to the leader over RPC; raft
// batches concurrent entries. No worker runs, so scheduling is not
// counted.
//
//	go test -run '^$' -bench Servers_JobRegister -benchtime 2000x ./testutil/
func BenchmarkServers_JobRegister(b *testing.B) {
	sc := testutil.StartServers(b, testutil.ServersConfig{N: 3, Server: benchServer})
	leader := sc.WaitForLeader()
	follower := sc.Servers[(leader+1)%3]
	jobs := make([]*structs.Job, b.N)
	for i := range jobs {
		jobs[i] = mock.Job()
	}
	var next atomic.Int64
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
				var resp structs.JobRegisterResponse
				if err := follower.RPC("Job.Register", &structs.JobRegisterRequest{Job: jobs[i]}, &resp); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "registrations/s")
}

// BenchmarkServers_Heartbeat measures the leader's cost of client
// heartbeats: 1,000 registered nodes heartbeat (Node.UpdateStatus, the
// node's secret checked, its TTL timer re-armed) through the RPC layer of
// the leader of a three-server cluster. A heartbeat that changes nothing
// writes nothing to raft, so followers do no work. The figure
// cpu-ms/1k-hb is the process CPU time per 1,000 heartbeats, which is also
// the fraction of a core (in thousandths) that 1,000 heartbeats per second
// cost; it includes the callers' msgpack encoding, so it bounds the
// leader's share from above.
//
//	go test -run '^$' -bench Servers_Heartbeat -benchtime 100000x ./testutil/
func BenchmarkServers_Heartbeat(b *testing.B) {
	sc := testutil.StartServers(b, testutil.ServersConfig{N: 3, Server: benchServer})
	leader := sc.Servers[sc.WaitForLeader()]
	nodes := make([]*structs.Node, 1000)
	for i := range nodes {
		nodes[i] = mock.Node()
		var resp structs.NodeUpdateResponse
		if err := leader.RPC("Node.Register", &structs.NodeRegisterRequest{Node: nodes[i]}, &resp); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	cpu0 := processCPU()
	b.ResetTimer()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				n := nodes[i%int64(len(nodes))]
				req := &structs.NodeUpdateStatusRequest{NodeID: n.ID, Status: n.Status,
					WriteRequest: structs.WriteRequest{AuthToken: n.SecretID}}
				var resp structs.NodeUpdateResponse
				if err := leader.RPC("Node.UpdateStatus", req, &resp); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N)*1000, "cpu-ms/1k-hb")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchServer runs no scheduler and keeps raft's production timeouts: a
// loaded benchmark must not look like a failed leader.
func benchServer(_ int, c *nomad.Config) {
	c.NumSchedulers = 0
	c.RaftElectionTimeout = 0
}
