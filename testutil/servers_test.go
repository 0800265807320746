package testutil_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/shoenig/test/must"
)

// registerJob registers a job through server i, which forwards it to the
// leader when it is a follower.
func registerJob(t *testing.T, s *nomad.Server) *structs.Job {
	t.Helper()
	job := mock.Job()
	var resp structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &resp))
	return job
}

// hasJob polls until server s has applied the job.
func waitForJob(t *testing.T, s *nomad.Server, job *structs.Job, what string) {
	t.Helper()
	poll(t, 10*time.Second, what, func() (bool, string) {
		got, err := s.State().JobByID(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		return got != nil, "job not there yet"
	})
}

// Three servers elect one leader; a job registered through a follower
// lands on all of them; when the leader is cut off from the others, they
// elect a new leader within a few election timeouts and keep the job, and
// the old leader, healed, follows and catches up. This is the fault an
// operator's cluster meets when one server's network fails.
func TestServers_LeaderPartitioned_NewLeaderKeepsState(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3})
	leader := sc.WaitForLeader()
	follower := (leader + 1) % 3

	job := registerJob(t, sc.Servers[follower])
	for i, s := range sc.Servers {
		waitForJob(t, s, job, fmt.Sprintf("server %d has the job", i))
	}

	cut := time.Now()
	sc.Net.Isolate(sc.Addr(leader))
	next := sc.WaitForLeaderExcept(leader)
	elected := time.Since(cut)
	must.NotEq(t, leader, next)
	// Election timeout is 200ms in the harness: a new leader within a few
	// of them, not after minutes.
	must.Less(t, 5*time.Second, elected, must.Sprintf("new leader after %v", elected))
	got, err := sc.Servers[next].State().JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.NotNil(t, got)

	// A write through the remaining follower lands while the old leader
	// is away.
	other := 3 - leader - next
	job2 := registerJob(t, sc.Servers[other])
	waitForJob(t, sc.Servers[next], job2, "the new leader has the second job")

	sc.Net.Heal(sc.Addr(leader))
	waitForJob(t, sc.Servers[leader], job2, "the healed old leader caught up")
	poll(t, 10*time.Second, "the old leader follows the new one", func() (bool, string) {
		l := sc.Servers[leader].Leader()
		return !sc.Servers[leader].IsLeader() && l != "", "leader " + l
	})
}

// All three servers stopped and started again on their data dirs come back
// with every job, node and evaluation, without bootstrapping again: the
// cluster's state lives on disk, not in memory.
func TestServers_FullRestart_StateSurvives(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3})
	leader := sc.WaitForLeader()
	job := registerJob(t, sc.Servers[leader])
	node := mock.Node()
	var nresp structs.NodeUpdateResponse
	must.NoError(t, sc.Servers[leader].RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &nresp))
	for i, s := range sc.Servers {
		waitForJob(t, s, job, fmt.Sprintf("server %d has the job", i))
	}
	evals, err := sc.Servers[leader].State().EvalsByJob(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.SliceNotEmpty(t, evals)

	for i := range 3 {
		sc.Stop(i)
	}
	for i := range 3 {
		sc.Restart(i)
	}
	leader = sc.WaitForLeader()
	for i, s := range sc.Servers {
		waitForJob(t, s, job, fmt.Sprintf("server %d has the job after the restart", i))
	}
	st := sc.Servers[leader].State()
	gotNode, err := st.NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.NotNil(t, gotNode, must.Sprint("the node is back with its ID"))
	for _, ev := range evals {
		got, err := st.EvalByID(nil, ev.ID)
		must.NoError(t, err)
		must.NotNil(t, got, must.Sprintf("evaluation %s is back", ev.ID))
	}
}

// A client configured with one server learns the region's other servers
// from its first heartbeat, and when that server dies it heartbeats
// through another, so its node stays ready: operators list one or two
// servers in client.servers, and a fleet must outlive the loss of them.
func TestServers_ClientLearnsServersAndFailsOver(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3, Server: func(_ int, c *nomad.Config) {
		c.MinHeartbeatTTL = time.Second
	}})
	rpc, err := client.NewServerRPC([]string{sc.Addr(0)}, nil)
	must.NoError(t, err)
	t.Cleanup(rpc.Shutdown)
	dir := t.TempDir()
	cl, err := client.NewClient(&client.Config{
		RPCHandler: rpc, StateDir: dir, AllocDir: filepath.Join(dir, "alloc"), NodeName: "edge-1",
	})
	must.NoError(t, err)
	t.Cleanup(func() { _ = cl.Destroy() })
	select {
	case <-cl.Ready():
	case <-time.After(15 * time.Second):
		t.Fatal("client not ready within 15s")
	}
	poll(t, 10*time.Second, "the client knows all three servers", func() (bool, string) {
		got := rpc.Servers()
		return len(got) == 3, fmt.Sprint(got)
	})

	sc.Stop(0)
	stopped := time.Now()
	leader := sc.WaitForLeaderExcept(0)
	poll(t, 15*time.Second, "heartbeats through another server", func() (bool, string) {
		return cl.LastHeartbeat().After(stopped), fmt.Sprintf("last heartbeat %v before the stop", stopped.Sub(cl.LastHeartbeat()))
	})
	node, err := sc.Servers[leader].State().NodeByID(nil, cl.NodeID())
	must.NoError(t, err)
	must.Eq(t, structs.NodeStatusReady, node.Status)
}
