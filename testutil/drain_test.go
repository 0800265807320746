package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func drainNode(t *testing.T, c *testutil.MemCluster, nodeID string, spec *structs.DrainSpec) {
	t.Helper()
	req := &structs.NodeUpdateDrainRequest{NodeID: nodeID}
	if spec != nil {
		req.DrainStrategy = &structs.DrainStrategy{DrainSpec: *spec}
	}
	var resp structs.NodeDrainUpdateResponse
	must.NoError(t, c.Leader().RPC("Node.UpdateDrain", req, &resp))
}

// waitDrainComplete waits until the drainer ends the node's drain and
// checks what it leaves: an ineligible node with its last drain complete.
func waitDrainComplete(t *testing.T, c *testutil.MemCluster, nodeID string) {
	t.Helper()
	wait.Eventually(t, time.Minute, "drain complete", func() (bool, string) {
		n, err := c.Leader().State().NodeByID(nil, nodeID)
		must.NoError(t, err)
		return n.DrainStrategy == nil, fmt.Sprintf("status %s drain %+v", n.Status, n.DrainStrategy)
	})
	n, err := c.Leader().State().NodeByID(nil, nodeID)
	must.NoError(t, err)
	must.False(t, n.Drain)
	must.Eq(t, structs.NodeSchedulingIneligible, n.SchedulingEligibility)
	must.Eq(t, structs.DrainStatusComplete, n.LastDrain.Status)
	msgs := []string{}
	for _, e := range n.Events {
		msgs = append(msgs, e.Message)
	}
	must.SliceContains(t, msgs, structs.NodeDrainEventComplete)
}

// replacedOn waits until the original is stopped on the servers and a
// replacement runs on another node; it returns the replacement.
func replacedOn(t *testing.T, c *testutil.MemCluster, job *structs.Job, original *structs.Allocation) *structs.Allocation {
	t.Helper()
	var rep *structs.Allocation
	wait.Eventually(t, time.Minute, "original stopped, replacement running elsewhere", func() (bool, string) {
		allocs, err := c.Leader().State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		stopped := false
		rep = nil
		for _, a := range allocs {
			switch {
			case a.ID == original.ID:
				stopped = a.DesiredStatus == structs.AllocDesiredStatusStop
			case a.ClientStatus == structs.AllocClientStatusRunning && a.NodeID != original.NodeID:
				rep = a
			}
		}
		return stopped && rep != nil, describe(allocs)
	})
	return rep
}

// nomad node drain moves a node's allocation to another node, then ends
// the drain and leaves the node ineligible.
func TestCluster_Drain_MigratesAllocations(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		job := disconnectJob()
		original, _ := runOne(t, c, job)
		drainNode(t, c, original.NodeID, &structs.DrainSpec{Deadline: time.Hour})
		rep := replacedOn(t, c, job, original)
		must.Eq(t, original.ID, rep.PreviousAllocation)
		waitDrainComplete(t, c, original.NodeID)
		a, err := c.Leader().State().AllocByID(nil, original.ID)
		must.NoError(t, err)
		must.Eq(t, structs.AllocMigrating, a.DesiredDescription)
	})
}

// At the deadline the drain stops what is left: a batch allocation is left
// to finish until then.
func TestCluster_Drain_DeadlineStopsRemaining(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		job := disconnectJob()
		job.Type = structs.JobTypeBatch
		job.TaskGroups[0].Disconnect = nil
		job.Canonicalize()
		original, _ := runOne(t, c, job)
		drainNode(t, c, original.NodeID, &structs.DrainSpec{Deadline: time.Second})
		a, err := c.Leader().State().AllocByID(nil, original.ID)
		must.NoError(t, err)
		must.Eq(t, structs.AllocDesiredStatusRun, a.DesiredStatus, must.Sprint("not stopped before the deadline"))
		wait.Eventually(t, time.Minute, "stopped at the deadline", func() (bool, string) {
			a, err := c.Leader().State().AllocByID(nil, original.ID)
			must.NoError(t, err)
			return a.DesiredStatus == structs.AllocDesiredStatusStop, a.DesiredStatus
		})
		waitDrainComplete(t, c, original.NodeID)
	})
}

// A service allocation with nowhere to go keeps serving while the drain
// waits, and is stopped at the deadline anyway.
func TestCluster_Drain_DeadlineStopsUnplaceable(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		job := disconnectJob()
		original, i := runOne(t, c, job)
		other := c.Clients[1-i].NodeID()
		var elig structs.NodeEligibilityUpdateResponse
		must.NoError(t, c.Leader().RPC("Node.UpdateEligibility", &structs.NodeUpdateEligibilityRequest{
			NodeID: other, Eligibility: structs.NodeSchedulingIneligible,
		}, &elig))
		drainNode(t, c, original.NodeID, &structs.DrainSpec{Deadline: 2 * time.Second})
		n, err := c.Leader().State().NodeByID(nil, original.NodeID)
		must.NoError(t, err)
		deadline := n.DrainStrategy.ForceDeadline
		wait.Eventually(t, time.Minute, "marked for migration", func() (bool, string) {
			a, err := c.Leader().State().AllocByID(nil, original.ID)
			must.NoError(t, err)
			return a.DesiredTransition.ShouldMigrate(), "not marked"
		})
		wait.Eventually(t, time.Minute, "stopped at the deadline", func() (bool, string) {
			a, err := c.Leader().State().AllocByID(nil, original.ID)
			must.NoError(t, err)
			return a.DesiredStatus == structs.AllocDesiredStatusStop, a.DesiredStatus
		})
		must.False(t, deadline.After(time.Now()), must.Sprint("not stopped before the deadline"))
		waitDrainComplete(t, c, original.NodeID)
	})
}

// A drain of a disconnected node is accepted (see
// docs/concepts/disconnected-clients.md, "Operator actions"): its unknown
// allocation is stopped and replaced at once, and the drain completes when
// the node returns, whose client then stops the original.
func TestCluster_Drain_DisconnectedNode(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		st := c.Leader().State
		job := disconnectJob()
		no := false
		job.TaskGroups[0].Disconnect.Replace = &no // only the drain replaces it
		original, cut := runOne(t, c, job)
		c.Links[cut].Cut(fault.Blackhole)
		wait.Eventually(t, time.Minute, "original unknown", func() (bool, string) {
			a, err := st().AllocByID(nil, original.ID)
			must.NoError(t, err)
			return a.ClientStatus == structs.AllocClientStatusUnknown, a.ClientStatus
		})
		drainNode(t, c, original.NodeID, &structs.DrainSpec{Deadline: time.Hour})
		replacedOn(t, c, job, original)
		n, err := st().NodeByID(nil, original.NodeID)
		must.NoError(t, err)
		must.NotNil(t, n.DrainStrategy, must.Sprint("the drain waits for the disconnected node"))

		c.Links[cut].Heal()
		waitDrainComplete(t, c, original.NodeID)
		wait.Eventually(t, time.Minute, "returned client stops the original", func() (bool, string) {
			a := clientAlloc(t, c, cut, original.ID)
			return a.ClientStatus == structs.AllocClientStatusComplete, a.ClientStatus
		})
	})
}

// Disabling a drain with MarkEligible makes the node schedulable again;
// eligibility toggles on its own; purge removes the node.
func TestCluster_EligibilityAndPurge(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		nodeID := c.Clients[0].NodeID()
		setElig := func(e string) error {
			var resp structs.NodeEligibilityUpdateResponse
			return c.Leader().RPC("Node.UpdateEligibility", &structs.NodeUpdateEligibilityRequest{NodeID: nodeID, Eligibility: e}, &resp)
		}
		node := func() *structs.Node {
			n, err := c.Leader().State().NodeByID(nil, nodeID)
			must.NoError(t, err)
			return n
		}
		must.NoError(t, setElig(structs.NodeSchedulingIneligible))
		must.Eq(t, structs.NodeSchedulingIneligible, node().SchedulingEligibility)
		must.NoError(t, setElig(structs.NodeSchedulingEligible))
		must.Eq(t, structs.NodeSchedulingEligible, node().SchedulingEligibility)
		err := setElig("maybe")
		must.ErrorIs(t, err, structs.ErrInvalidRequest)
		must.StrContains(t, err.Error(), "Eligibility")

		// A job pinned to the node keeps the drain going (its allocation has
		// nowhere to move before the deadline), so the refusal is checked
		// while the node really drains.
		pinned := disconnectJob()
		pinned.ID = "pinned"
		pinned.Constraints = []*structs.Constraint{{LTarget: "${node.unique.name}", RTarget: node().Name, Operand: "="}}
		runOne(t, c, pinned)
		drainNode(t, c, nodeID, &structs.DrainSpec{Deadline: time.Hour})
		must.NotNil(t, node().DrainStrategy, must.Sprint("the drain is still going"))
		must.ErrorIs(t, setElig(structs.NodeSchedulingEligible), structs.ErrInvalidRequest)
		var resp structs.NodeDrainUpdateResponse
		must.NoError(t, c.Leader().RPC("Node.UpdateDrain", &structs.NodeUpdateDrainRequest{NodeID: nodeID, MarkEligible: true}, &resp))
		must.True(t, node().Ready())
		must.Eq(t, structs.DrainStatusCanceled, node().LastDrain.Status)

		var purge structs.NodePurgeResponse
		must.NoError(t, c.Leader().RPC("Node.Purge", &structs.NodePurgeRequest{NodeID: c.Clients[1].NodeID()}, &purge))
		n, err := c.Leader().State().NodeByID(nil, c.Clients[1].NodeID())
		must.NoError(t, err)
		must.Nil(t, n)
		must.ErrorIs(t, c.Leader().RPC("Node.Purge", &structs.NodePurgeRequest{NodeID: "missing"}, &purge), structs.ErrUnknownNode)
	})
}

// A disconnected node's drain also completes when the node goes down
// instead of returning (its disconnect window runs out).
func TestCluster_Drain_DisconnectedNodeGoesDown(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		st := c.Leader().State
		job := disconnectJob()
		no := false
		job.TaskGroups[0].Disconnect.Replace = &no
		job.TaskGroups[0].Disconnect.LostAfter = 3 * time.Second
		original, cut := runOne(t, c, job)
		c.Links[cut].Cut(fault.Blackhole)
		wait.Eventually(t, time.Minute, "original unknown", func() (bool, string) {
			a, err := st().AllocByID(nil, original.ID)
			must.NoError(t, err)
			return a.ClientStatus == structs.AllocClientStatusUnknown, a.ClientStatus
		})
		drainNode(t, c, original.NodeID, &structs.DrainSpec{Deadline: time.Hour})
		replacedOn(t, c, job, original)
		wait.Eventually(t, time.Minute, "node down", func() (bool, string) {
			n, err := st().NodeByID(nil, original.NodeID)
			must.NoError(t, err)
			return n.Status == structs.NodeStatusDown, n.Status
		})
		waitDrainComplete(t, c, original.NodeID)
	})
}
