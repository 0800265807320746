package testutil_test

import (
	"testing"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/shoenig/test/must"
)

func systemEdgeJob() *structs.Job {
	job := &structs.Job{
		ID: "edge-agent", Type: structs.JobTypeSystem, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name:       "agent",
			Count:      1,
			Disconnect: &structs.DisconnectStrategy{LostAfter: time.Hour},
			Tasks: []*structs.Task{{
				Name: "agent", Driver: "mock_driver",
				Config:    map[string]any{"run_for": "1h"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// A system job with a lost window, end to end: one allocation per client;
// a client whose link drops keeps its task, the servers mark the
// allocation unknown and place nothing elsewhere; on heal it is running
// again with the task never restarted, and still one per node.
func TestCluster_SystemJob_DisconnectResumes(t *testing.T) {
	c := twoClients(t)
	st := c.Server.State
	job := systemEdgeJob()
	var reg structs.JobRegisterResponse
	must.NoError(t, c.Server.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))

	byNode := map[string]*structs.Allocation{}
	poll(t, 10*time.Second, "one running allocation per node", func() (bool, string) {
		allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		clear(byNode)
		for _, a := range allocs {
			if a.ClientStatus == structs.AllocClientStatusRunning {
				byNode[a.NodeID] = a
			}
		}
		return len(allocs) == 2 && len(byNode) == 2, describe(allocs)
	})
	cut := 0
	original := byNode[c.Clients[cut].NodeID()]
	must.NotNil(t, original)
	startedAt := original.TaskStates["agent"].StartedAt

	c.Links[cut].Cut(testutil.Blackhole)
	poll(t, 15*time.Second, "allocation unknown on the disconnected node, nothing placed elsewhere", func() (bool, string) {
		allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		n, err := st().NodeByID(nil, original.NodeID)
		must.NoError(t, err)
		var orig *structs.Allocation
		for _, a := range allocs {
			if a.ID == original.ID {
				orig = a
			}
		}
		return len(allocs) == 2 && n.Status == structs.NodeStatusDisconnected && orig != nil &&
			orig.ClientStatus == structs.AllocClientStatusUnknown && !orig.TerminalStatus(), describe(allocs)
	})
	must.Eq(t, structs.AllocClientStatusRunning, clientAlloc(t, c, cut, original.ID).ClientStatus)

	c.Links[cut].Heal()
	poll(t, 15*time.Second, "allocation running again, node ready", func() (bool, string) {
		allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		n, err := st().NodeByID(nil, original.NodeID)
		must.NoError(t, err)
		var orig *structs.Allocation
		for _, a := range allocs {
			if a.ID == original.ID {
				orig = a
			}
		}
		return len(allocs) == 2 && n.Status == structs.NodeStatusReady && orig != nil &&
			orig.ClientStatus == structs.AllocClientStatusRunning && orig.DesiredStatus == structs.AllocDesiredStatusRun &&
			!orig.NeedsToReconnect(), describe(allocs)
	})
	back := clientAlloc(t, c, cut, original.ID)
	must.Eq(t, startedAt, back.TaskStates["agent"].StartedAt, must.Sprint("the task was never restarted"))
}

// A node that becomes ready after the job was registered gets its
// allocation then.
func TestCluster_SystemJob_LateNodeGetsOne(t *testing.T) {
	c := twoClients(t)
	st := c.Server.State
	late := c.Clients[1].NodeID()
	c.Links[1].Cut(testutil.Blackhole)
	poll(t, 15*time.Second, "node down", func() (bool, string) {
		n, err := st().NodeByID(nil, late)
		must.NoError(t, err)
		return n.Status == structs.NodeStatusDown, n.Status
	})

	job := systemEdgeJob()
	var reg structs.JobRegisterResponse
	must.NoError(t, c.Server.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	poll(t, 10*time.Second, "one allocation, on the ready node", func() (bool, string) {
		allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		return len(allocs) == 1 && allocs[0].NodeID == c.Clients[0].NodeID(), describe(allocs)
	})

	c.Links[1].Heal()
	poll(t, 15*time.Second, "the returning node runs one too", func() (bool, string) {
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
}
