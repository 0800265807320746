package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func systemEdgeJob(window time.Duration) *structs.Job {
	job := &structs.Job{
		ID: "edge-agent", Type: structs.JobTypeSystem, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name:       "agent",
			Count:      1,
			Disconnect: &structs.DisconnectStrategy{LostAfter: window},
			Tasks: []*structs.Task{{
				Name: "agent", Driver: "mock_driver",
				Config:    map[string]any{"run_for": "10h"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// systemRunning registers job and waits until each of the cluster's
// clients runs one allocation of it; it returns them by node.
func systemRunning(t *testing.T, c *testutil.MemCluster, job *structs.Job) map[string]*structs.Allocation {
	t.Helper()
	var reg structs.JobRegisterResponse
	must.NoError(t, c.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	byNode := map[string]*structs.Allocation{}
	wait.Eventually(t, time.Minute, "one running allocation per node", func() (bool, string) {
		allocs, err := c.Leader().State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		clear(byNode)
		for _, a := range allocs {
			if a.ClientStatus == structs.AllocClientStatusRunning {
				byNode[a.NodeID] = a
			}
		}
		return len(allocs) == len(c.Clients) && len(byNode) == len(c.Clients), describe(allocs)
	})
	return byNode
}

// A system job with a lost window, end to end: the client whose network
// drops keeps its task; the servers mark its allocation unknown and place
// nothing anywhere else; when the network returns the allocation runs
// again with its task never restarted, one per node as before.
func TestMemCluster_SystemJob_DisconnectResumes(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 2})
		st := func() *state.StateStore { return c.Leader().State() }
		job := systemEdgeJob(time.Hour)
		original := systemRunning(t, c, job)[c.Clients[0].NodeID()]
		must.NotNil(t, original)
		startedAt := original.TaskStates["agent"].StartedAt

		c.Net.Isolate(testutil.ClientHost(0), fault.Blackhole)
		wait.Eventually(t, 2*time.Minute, "unknown on the disconnected node", func() (bool, string) {
			n, err := st().NodeByID(nil, original.NodeID)
			must.NoError(t, err)
			orig := mustAlloc(t, st(), original.ID)
			return n.Status == structs.NodeStatusDisconnected && orig.ClientStatus == structs.AllocClientStatusUnknown &&
				!orig.TerminalStatus(), fmt.Sprintf("node %s, alloc %s", n.Status, orig.ClientStatus)
		})
		testutil.Settle(10 * time.Minute)
		allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		must.Len(t, 2, allocs, must.Sprintf("nothing placed elsewhere: %s", describe(allocs)))
		must.Eq(t, structs.AllocClientStatusRunning, clientAlloc(t, c, 0, original.ID).ClientStatus,
			must.Sprint("the task kept running on the cut-off client"))

		c.Net.Heal(testutil.ClientHost(0))
		wait.Eventually(t, 2*time.Minute, "running again, node ready", func() (bool, string) {
			n, err := st().NodeByID(nil, original.NodeID)
			must.NoError(t, err)
			orig := mustAlloc(t, st(), original.ID)
			return n.Status == structs.NodeStatusReady && orig.DesiredStatus == structs.AllocDesiredStatusRun &&
					orig.ClientStatus == structs.AllocClientStatusRunning && !orig.NeedsToReconnect(),
				fmt.Sprintf("node %s, alloc %s/%s", n.Status, orig.DesiredStatus, orig.ClientStatus)
		})
		ts := mustAlloc(t, st(), original.ID).TaskStates["agent"]
		must.Eq(t, uint64(0), ts.Restarts, must.Sprint("the task was not restarted"))
		must.Eq(t, startedAt, ts.StartedAt)
		allocs, err = st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		must.Len(t, 2, allocs, must.Sprint(describe(allocs)))
	})
}

// Past its window a system allocation is lost, still with nothing placed
// elsewhere; when its node returns, the node gets a new one and the lost
// one stays terminal.
func TestMemCluster_SystemJob_WindowExpiresThenPlacedOnReturn(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 2})
		st := func() *state.StateStore { return c.Leader().State() }
		job := systemEdgeJob(2 * time.Minute)
		original := systemRunning(t, c, job)[c.Clients[0].NodeID()]

		c.Net.Isolate(testutil.ClientHost(0), fault.Blackhole)
		wait.Eventually(t, 5*time.Minute, "lost after the window", func() (bool, string) {
			orig := mustAlloc(t, st(), original.ID)
			return orig.ClientStatus == structs.AllocClientStatusLost, orig.ClientStatus
		})
		allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		must.Len(t, 2, allocs, must.Sprintf("nothing placed elsewhere: %s", describe(allocs)))

		c.Net.Heal(testutil.ClientHost(0))
		wait.Eventually(t, 2*time.Minute, "a new allocation runs on the returned node", func() (bool, string) {
			allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			for _, a := range allocs {
				if a.NodeID == original.NodeID && a.ID != original.ID && a.ClientStatus == structs.AllocClientStatusRunning {
					return true, ""
				}
			}
			return false, describe(allocs)
		})
		// The returned client stops it: lost, or its final report complete,
		// never running again.
		must.True(t, mustAlloc(t, st(), original.ID).TerminalStatus(), must.Sprint(mustAlloc(t, st(), original.ID).ClientStatus))
	})
}

// A node that becomes ready after the job was registered gets its
// allocation then.
func TestMemCluster_SystemJob_LateNodeGetsOne(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 2})
		st := func() *state.StateStore { return c.Leader().State() }
		late := c.Clients[1].NodeID()
		c.Net.Isolate(testutil.ClientHost(1), fault.Blackhole)
		wait.Eventually(t, 2*time.Minute, "node down", func() (bool, string) {
			n, err := st().NodeByID(nil, late)
			must.NoError(t, err)
			return n.Status == structs.NodeStatusDown, n.Status
		})

		job := systemEdgeJob(time.Hour)
		var reg structs.JobRegisterResponse
		must.NoError(t, c.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
		wait.Eventually(t, time.Minute, "one allocation, on the ready node", func() (bool, string) {
			allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			return len(allocs) == 1 && allocs[0].NodeID == c.Clients[0].NodeID(), describe(allocs)
		})

		c.Net.Heal(testutil.ClientHost(1))
		wait.Eventually(t, 2*time.Minute, "the returning node runs one too", func() (bool, string) {
			allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			on := 0
			for _, a := range allocs {
				if a.NodeID == late && a.ClientStatus == structs.AllocClientStatusRunning {
					on++
				}
			}
			return len(allocs) == 2 && on == 1, describe(allocs)
		})
	})
}
