package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// Three in-memory servers with upstream's raft and gossip timings elect a
// leader on fake time, and a client registers; the harness itself must
// work before any test on it can be believed.
func TestMemCluster_ElectsLeaderAndRegistersClient(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		start := time.Now()
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3, Clients: 1})
		must.NotNil(t, c.Leader())
		t.Logf("leader and client after %v of fake time", time.Since(start))
	})
}

// Three servers elect one leader; a job registered through a follower
// lands on all of them; when the leader's host is cut off (raft, RPC and
// gossip), the others elect a new leader within raft's default election
// timeouts and keep the job; the old leader, healed, follows and catches
// up. This is the fault an operator's cluster meets when one server's
// network fails.
func TestMemCluster_LeaderPartitioned_NewLeaderKeepsState(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3})
		leader := c.WaitForLeader()
		follower := (leader + 1) % 3
		job := mock.Job()
		var reg structs.JobRegisterResponse
		must.NoError(t, c.Servers[follower].RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
		hasJob := func(i int, j *structs.Job) func() (bool, string) {
			return func() (bool, string) {
				got, err := c.Servers[i].State().JobByID(nil, j.Namespace, j.ID)
				must.NoError(t, err)
				return got != nil, "job not there yet"
			}
		}
		for i := range c.Servers {
			wait.Eventually(t, 10*time.Second, fmt.Sprintf("server %d has the job", i), hasJob(i, job))
		}

		cut := time.Now()
		c.Net.Isolate(testutil.ServerHost(leader), fault.Reset)
		next := c.WaitForLeaderExcept(leader)
		elected := time.Since(cut)
		must.NotEq(t, leader, next)
		// raft's defaults: a follower notices within 1-2 s and an
		// election takes 1-2 s more.
		must.Less(t, 5*time.Second, elected, must.Sprintf("new leader after %v", elected))
		ok, _ := hasJob(next, job)()
		must.True(t, ok, must.Sprint("the new leader has the job"))

		other := 3 - leader - next
		job2 := mock.Job()
		must.NoError(t, c.Servers[other].RPC("Job.Register", &structs.JobRegisterRequest{Job: job2}, &reg))
		wait.Eventually(t, 10*time.Second, "the new leader has the second job", hasJob(next, job2))

		c.Net.Heal(testutil.ServerHost(leader))
		wait.Eventually(t, time.Minute, "the healed old leader caught up", hasJob(leader, job2))
		wait.Eventually(t, time.Minute, "the old leader follows the new one", func() (bool, string) {
			l := c.Servers[leader].Leader()
			return !c.Servers[leader].IsLeader() && l != "", "leader " + l
		})
	})
}

// Status.Leader (GET /v1/status/leader) is answered by the leader, as
// upstream's is: a follower whose own view still names a leader that was
// just cut off does not name it (the forward fails until a new leader is
// elected, then names that one); with no leader at all the call is held
// for the RPC hold timeout and then fails, and one elected during the hold
// is the answer. Scripts and the official client wait on it, and a stale or
// empty answer with success would send them to a dead server.
func TestMemCluster_StatusLeader_AnsweredByTheLeader(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3})
		ask := func(i int) (string, error) {
			var got string
			err := c.Servers[i].RPC("Status.Leader", &structs.GenericRequest{}, &got)
			return got, err
		}
		leader := c.WaitForLeader()
		follower := (leader + 1) % 3
		got, err := ask(follower)
		must.NoError(t, err)
		must.Eq(t, c.ServerAddr(leader), got)

		c.Net.Isolate(testutil.ServerHost(leader), fault.Reset)
		must.Eq(t, c.ServerAddr(leader), c.Servers[follower].Leader(), must.Sprint("the follower's own view is still the old leader"))
		got, err = ask(follower)
		must.Error(t, err, must.Sprintf("a follower named %q, a leader that was cut off", got))

		next := c.WaitForLeaderExcept(leader)
		got, err = ask(follower)
		must.NoError(t, err)
		must.Eq(t, c.ServerAddr(next), got)

		// No quorum: the last server has no leader. The call is held, then fails.
		other := 3 - leader - next
		c.Net.Isolate(testutil.ServerHost(next), fault.Reset)
		wait.Eventually(t, time.Minute, "the last server knows no leader", func() (bool, string) {
			return c.Servers[other].Leader() == "", c.Servers[other].Leader()
		})
		start := time.Now()
		_, err = ask(other)
		must.ErrorContains(t, err, structs.ErrNoLeader.Error())
		must.GreaterEq(t, 5*time.Second, time.Since(start), must.Sprint("held for the RPC hold timeout"))

		// A leader elected while the call is held is the answer.
		go func() {
			time.Sleep(500 * time.Millisecond)
			c.Net.Heal(testutil.ServerHost(leader))
			c.Net.Heal(testutil.ServerHost(next))
		}()
		start = time.Now()
		got, err = ask(other)
		must.NoError(t, err)
		must.NotEq(t, "", got)
		must.Greater(t, 500*time.Millisecond, time.Since(start), must.Sprint("held until there was a leader"))
	})
}

// The mission, end to end, on three servers with upstream's heartbeat
// timings: a client whose network drops (packets vanish) keeps running
// its task; the servers mark the node disconnected once its TTL and grace
// pass, the allocation unknown (not lost), and place a replacement; when
// the network returns the original is kept (keep_original), its task was
// never restarted, and the replacement is stopped.
func TestMemCluster_DisconnectReconnect_KeepsOriginalWithoutRestart(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3, Clients: 2})
		st := func() *state.StateStore { return c.Leader().State() }
		job := disconnectJob()
		original, cut := runOne(t, c, job)
		startedAt := original.TaskStates["app"].StartedAt

		cutAt := time.Now()
		c.Net.Isolate(testutil.ClientHost(cut), fault.Blackhole)
		var replacement *structs.Allocation
		wait.Eventually(t, 2*time.Minute, "original unknown and a replacement running elsewhere", func() (bool, string) {
			allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			var orig *structs.Allocation
			replacement = nil
			for _, a := range allocs {
				if a.ID == original.ID {
					orig = a
				} else if a.ClientStatus == structs.AllocClientStatusRunning {
					replacement = a
				}
			}
			return orig.ClientStatus == structs.AllocClientStatusUnknown && !orig.TerminalStatus() && replacement != nil, describe(allocs)
		})
		// Not before the 10 s minimum TTL and 10 s grace: a client is
		// not given up on while it may just be late.
		since, ok := mustAlloc(t, st(), original.ID).UnknownSince()
		must.True(t, ok)
		must.GreaterEq(t, 10*time.Second, since.Sub(cutAt), must.Sprintf("unknown %v after the cut", since.Sub(cutAt)))
		must.Eq(t, original.ID, replacement.PreviousAllocation)
		node, err := st().NodeByID(nil, original.NodeID)
		must.NoError(t, err)
		must.Eq(t, structs.NodeStatusDisconnected, node.Status)
		must.Eq(t, structs.AllocClientStatusRunning, clientAlloc(t, c, cut, original.ID).ClientStatus,
			must.Sprint("the task kept running on the cut-off client"))

		c.Net.Heal(testutil.ClientHost(cut))
		wait.Eventually(t, 2*time.Minute, "original kept, replacement stopped, node ready", func() (bool, string) {
			n, err := st().NodeByID(nil, original.NodeID)
			must.NoError(t, err)
			orig, rep := mustAlloc(t, st(), original.ID), mustAlloc(t, st(), replacement.ID)
			ok := n.Status == structs.NodeStatusReady &&
				orig.DesiredStatus == structs.AllocDesiredStatusRun && orig.ClientStatus == structs.AllocClientStatusRunning && !orig.NeedsToReconnect() &&
				rep.DesiredStatus == structs.AllocDesiredStatusStop
			return ok, fmt.Sprintf("node %s; orig %s/%s; rep %s", n.Status, orig.DesiredStatus, orig.ClientStatus, rep.DesiredStatus)
		})
		ts := mustAlloc(t, st(), original.ID).TaskStates["app"]
		must.Eq(t, uint64(0), ts.Restarts, must.Sprint("the task was not restarted"))
		must.Eq(t, startedAt, ts.StartedAt)
		must.True(t, hasEvent(ts, structs.TaskClientReconnected))
		must.Eq(t, structs.AllocReconnected, mustAlloc(t, st(), replacement.ID).DesiredDescription)
		wait.Eventually(t, time.Minute, "one running and none unknown in the summary", func() (bool, string) {
			s, err := st().JobSummaryByID(nil, job.Namespace, job.ID)
			must.NoError(t, err)
			return s.Summary["app"].Running == 1 && s.Summary["app"].Unknown == 0, fmt.Sprintf("%+v", s.Summary["app"])
		})
	})
}

func mustAlloc(t *testing.T, st *state.StateStore, id string) *structs.Allocation {
	t.Helper()
	a, err := st.AllocByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, a, must.Sprintf("allocation %s", id))
	return a
}

// On three servers with upstream's timings (10 s minimum TTL, 10 s grace,
// 5 min failover TTL), a client cut off past its TTL goes disconnected
// when its job has a window, and a leader change during that disconnect
// keeps the window: for longer than the new leader's failover TTL the
// node stays disconnected (not down) and its allocation unknown with the
// same unknown-since time; healed, the allocation runs on, never
// restarted. Without a window the node goes down and the allocation is
// lost, as before the feature.
func TestMemCluster_ClientCutOff_WindowSurvivesLeaderChange(t *testing.T) {
	for _, tc := range []struct {
		name       string
		window     time.Duration
		wantNode   string
		wantClient string
	}{
		{"window", time.Hour, structs.NodeStatusDisconnected, structs.AllocClientStatusUnknown},
		{"no window", 0, structs.NodeStatusDown, structs.AllocClientStatusLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.Bubble(t, func(t *testing.T) {
				c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3, Clients: 1})
				cl := c.Clients[0]
				job := disconnectJob()
				job.TaskGroups[0].Disconnect.LostAfter = tc.window
				job.TaskGroups[0].ReschedulePolicy = nil
				orig, _ := runOne(t, c, job)

				c.Net.Isolate(testutil.ClientHost(0), fault.Blackhole)
				status := func(s *nomad.Server) (*structs.Node, *structs.Allocation) {
					n, err := s.State().NodeByID(nil, cl.NodeID())
					must.NoError(t, err)
					return n, mustAlloc(t, s.State(), orig.ID)
				}
				wait.Eventually(t, 2*time.Minute, "node and allocation after the cut", func() (bool, string) {
					n, a := status(c.Leader())
					return n.Status == tc.wantNode && a.ClientStatus == tc.wantClient, fmt.Sprintf("node %s, alloc %s", n.Status, a.ClientStatus)
				})
				if tc.window == 0 {
					return
				}
				_, before := status(c.Leader())
				since, _ := before.UnknownSince()

				old := c.WaitForLeader()
				c.Net.Isolate(testutil.ServerHost(old), fault.Reset)
				next := c.WaitForLeaderExcept(old)
				// Past the new leader's failover TTL, its grace, and
				// the re-checks after it, checked every fake second.
				failover := nomad.DefaultConfig().FailoverHeartbeatTTL + nomad.DefaultConfig().HeartbeatGrace
				for end := time.Now().Add(failover + time.Minute); time.Now().Before(end); {
					testutil.Settle(time.Second)
					n, a := status(c.Servers[next])
					must.Eq(t, structs.NodeStatusDisconnected, n.Status, must.Sprint("a leader change must not mark a disconnected node down early"))
					must.Eq(t, structs.AllocClientStatusUnknown, a.ClientStatus)
				}
				_, a := status(c.Servers[next])
				gotSince, _ := a.UnknownSince()
				must.Eq(t, since, gotSince, must.Sprint("the window runs from the first unknown, not from the leader change"))

				c.Net.Heal(testutil.ServerHost(old))
				c.Net.Heal(testutil.ClientHost(0))
				wait.Eventually(t, 2*time.Minute, "the original runs again after the heal", func() (bool, string) {
					n, a := status(c.Leader())
					return n.Status == structs.NodeStatusReady && a.ClientStatus == structs.AllocClientStatusRunning && !a.NeedsToReconnect(),
						fmt.Sprintf("node %s, alloc %s", n.Status, a.ClientStatus)
				})
				_, after := status(c.Leader())
				must.Eq(t, uint64(0), after.TaskStates["app"].Restarts, must.Sprint("the task was not restarted"))
			})
		})
	}
}
