package testutil_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
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
	wait.Poll(t, 10*time.Second, what, func() (bool, string) {
		got, err := s.State().JobByID(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		return got != nil, "job not there yet"
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

// shortHeartbeats gives every server sub-second heartbeat TTLs and a short
// failover TTL, so a test sees a node missed and a leader change within
// seconds.
func shortHeartbeats(_ int, c *nomad.Config) {
	c.MinHeartbeatTTL = 500 * time.Millisecond
	c.HeartbeatGrace = 500 * time.Millisecond
	c.FailoverHeartbeatTTL = 1500 * time.Millisecond
	c.NumSchedulers = 2
}

// While one server of the region advertises a version older than the
// disconnect feature, windows are not honoured: a cut-off client's node
// goes down and registration warns why. Once that server is upgraded (here:
// restarted advertising the new version), the window is honoured again.
// This is the rolling-upgrade path of an existing cluster.
func TestServers_MixedVersions_GateTheWindow(t *testing.T) {
	oldVersion := "0.0.9"
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3, Server: func(i int, c *nomad.Config) {
		shortHeartbeats(i, c)
		if i == 2 {
			c.Version = oldVersion
		}
	}})
	leader := sc.Leader()
	wait.Poll(t, 10*time.Second, "the old server is seen in serf", func() (bool, string) {
		for _, m := range leader.Members() {
			if m.Tags["build"] == oldVersion {
				return true, ""
			}
		}
		return false, fmt.Sprint(len(leader.Members()), " members")
	})
	cl, link := sc.AddClient("edge-1")
	job := disconnectJob()
	var reg structs.JobRegisterResponse
	must.NoError(t, leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	must.StrContains(t, reg.Warnings, "disconnect window is ignored")
	must.StrContains(t, reg.Warnings, "server-2.global (0.0.9)")
	wait.Poll(t, 10*time.Second, "allocation running", func() (bool, string) {
		allocs, err := sc.Leader().State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		return len(allocs) == 1 && allocs[0].ClientStatus == structs.AllocClientStatusRunning, describe(allocs)
	})
	link.Cut(fault.Blackhole)
	wait.Poll(t, 10*time.Second, "the node goes down, not disconnected", func() (bool, string) {
		n, err := sc.Leader().State().NodeByID(nil, cl.NodeID())
		must.NoError(t, err)
		return n.Status == structs.NodeStatusDown, n.Status
	})
	link.Heal()
	wait.Poll(t, 10*time.Second, "the node is back", func() (bool, string) {
		n, err := sc.Leader().State().NodeByID(nil, cl.NodeID())
		must.NoError(t, err)
		return n.Status == structs.NodeStatusReady, n.Status
	})

	oldVersion = nomad.DefaultConfig().Version
	sc.Stop(2)
	sc.Restart(2)
	sc.WaitCaughtUp(2)
	wait.Poll(t, 10*time.Second, "every server advertises the new version", func() (bool, string) {
		for _, m := range sc.Leader().Members() {
			if (m.Status.String() == "alive" || m.Status.String() == "failed") && m.Tags["build"] != oldVersion {
				return false, m.Name + " " + m.Tags["build"]
			}
		}
		return true, ""
	})
	job2 := disconnectJob()
	job2.ID = "edge-app-2"
	must.NoError(t, sc.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: job2}, &reg))
	must.Eq(t, "", reg.Warnings)
	// The stopped server's workers were long-polling the leader for
	// evaluations when it stopped; one of those polls used to take this
	// evaluation and leave it outstanding, delivered to nobody, for the
	// nack timeout (TestEvalDequeue_CallerGone). The wider deadline is for
	// the race detector beside the rest of the suite.
	wait.Poll(t, 30*time.Second, "second job running", func() (bool, string) {
		st := sc.Leader().State()
		allocs, err := st.AllocsByJob(nil, job2.Namespace, job2.ID, true)
		must.NoError(t, err)
		evals, err := st.EvalsByJob(nil, job2.Namespace, job2.ID)
		must.NoError(t, err)
		seen := describe(allocs)
		for _, e := range evals {
			seen += fmt.Sprintf("eval %s %s %s %q; ", e.ID[:8], e.TriggeredBy, e.Status, e.StatusDescription)
		}
		return len(allocs) == 1 && allocs[0].ClientStatus == structs.AllocClientStatusRunning, seen
	})
	link.Cut(fault.Blackhole)
	wait.Poll(t, 10*time.Second, "now the node goes disconnected", func() (bool, string) {
		n, err := sc.Leader().State().NodeByID(nil, cl.NodeID())
		must.NoError(t, err)
		return n.Status == structs.NodeStatusDisconnected, n.Status
	})
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
	wait.Poll(t, 10*time.Second, "the client knows all three servers", func() (bool, string) {
		got := rpc.Servers()
		return len(got) == 3, fmt.Sprint(got)
	})

	sc.Stop(0)
	stopped := time.Now()
	leader := sc.WaitForLeaderExcept(0)
	wait.Poll(t, 15*time.Second, "heartbeats through another server", func() (bool, string) {
		return cl.LastHeartbeat().After(stopped), fmt.Sprintf("last heartbeat %v before the stop", stopped.Sub(cl.LastHeartbeat()))
	})
	node, err := sc.Servers[leader].State().NodeByID(nil, cl.NodeID())
	must.NoError(t, err)
	must.Eq(t, structs.NodeStatusReady, node.Status)
}

// A blocking query made on a follower is forwarded to the leader; when its
// caller goes away the forwarded call ends too, on both servers, instead
// of holding a stream open for its whole MaxQueryTime.
func TestServers_ForwardedBlockingQueryEndsWithCaller(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3})
	leader := sc.WaitForLeader()
	follower := sc.Servers[(leader+1)%3]
	var first structs.JobListResponse
	must.NoError(t, follower.RPC("Job.List", &structs.JobListRequest{}, &first))

	ctx, cancel := context.WithCancel(context.Background())
	req := &structs.JobListRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: first.Index + 1000, MaxQueryTime: time.Hour}}
	req.SetContext(ctx)
	done := make(chan error, 1)
	go func() {
		var resp structs.JobListResponse
		done <- follower.RPC("Job.List", req, &resp)
	}()
	// Whether the forward has reached the leader yet or not, it must end.
	cancel()
	select {
	case err := <-done:
		must.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the forwarded blocking query outlived its caller")
	}
}

// An evaluation a worker holds when its leader is cut off is handed out
// again by the next leader, and the old worker's plan, carrying the old
// leader's token, is refused there: the work is redone once, never applied
// twice.
func TestServers_LeaderChange_EvalRedeliveredPlanNotAppliedTwice(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3, Server: func(_ int, c *nomad.Config) {
		c.NumSchedulers = 0
	}})
	old := sc.WaitForLeader()
	job := registerJob(t, sc.Servers[old])
	dq := &structs.EvalDequeueRequest{Schedulers: []string{structs.JobTypeService}, Timeout: time.Second}
	var held structs.EvalDequeueResponse
	must.NoError(t, sc.Servers[old].RPC("Eval.Dequeue", dq, &held))
	must.NotNil(t, held.Eval)
	must.Eq(t, job.ID, held.Eval.JobID)

	sc.Net.Isolate(sc.Addr(old), fault.Reset)
	next := sc.WaitForLeaderExcept(old)
	other := 3 - old - next

	plan := &structs.Plan{EvalID: held.Eval.ID, EvalToken: held.Token, Job: job,
		NodeAllocation: map[string][]*structs.Allocation{}}
	var pr structs.PlanResponse
	err := sc.Servers[other].RPC("Plan.Submit", &structs.PlanRequest{Plan: plan}, &pr)
	must.Error(t, err, must.Sprint("a plan with the old leader's token is refused"))

	var again structs.EvalDequeueResponse
	wait.Poll(t, 10*time.Second, "the evaluation is handed out again", func() (bool, string) {
		again = structs.EvalDequeueResponse{}
		if err := sc.Servers[next].RPC("Eval.Dequeue", dq, &again); err != nil {
			return false, err.Error()
		}
		return again.Eval != nil && again.Eval.ID == held.Eval.ID, fmt.Sprintf("%+v", again.Eval)
	})
	must.NotEq(t, held.Token, again.Token)
}
