package testutil_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// siteCluster: three servers; clients 0 and 1 are site dc1 of pool edge,
// clients 2 and 3 are dc2 of the same pool; edge detects site outages at
// half a datacenter within a minute. A group of two (distinct hosts, a
// one-hour window, a 30 s reschedule delay: upstream's service default)
// runs on the two dc1 nodes; dc2 could take replacements.
func siteCluster(t *testing.T) (*testutil.MemCluster, *structs.Job, []*structs.Allocation) {
	t.Helper()
	c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 3, Clients: 4,
		Client: func(i int, cfg *client.Config) {
			cfg.NodePool, cfg.Datacenter = "edge", []string{"dc1", "dc1", "dc2", "dc2"}[i]
		}})
	leader := c.Leader()
	must.NoError(t, leader.RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{
		NodePools: []*structs.NodePool{{Name: "edge", Disconnect: &structs.NodePoolDisconnect{
			SiteOutage: &structs.SiteOutagePolicy{Threshold: 0.5, Window: time.Minute}}}},
	}, &structs.GenericResponse{}))
	eligible := func(i int, e string) {
		must.NoError(t, c.Leader().RPC("Node.UpdateEligibility", &structs.NodeUpdateEligibilityRequest{
			NodeID: c.Clients[i].NodeID(), Eligibility: e}, &structs.NodeEligibilityUpdateResponse{}))
	}
	eligible(2, structs.NodeSchedulingIneligible)
	eligible(3, structs.NodeSchedulingIneligible)

	job := disconnectJob()
	job.NodePool = "edge"
	job.Datacenters = []string{"dc1", "dc2"}
	tg := job.TaskGroups[0]
	tg.Count = 2
	tg.Constraints = append(tg.Constraints, &structs.Constraint{Operand: structs.ConstraintDistinctHosts, RTarget: "true"})
	tg.ReschedulePolicy = &structs.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: structs.DelayFunctionConstant, Unlimited: true}
	var reg structs.JobRegisterResponse
	must.NoError(t, leader.RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	var running []*structs.Allocation
	wait.Eventually(t, time.Minute, "two allocations running in dc1", func() (bool, string) {
		allocs := jobAllocs(t, c.Leader(), job)
		running = running[:0]
		for _, a := range allocs {
			if a.ClientStatus == structs.AllocClientStatusRunning {
				running = append(running, a)
			}
		}
		return len(running) == 2, describe(allocs)
	})
	eligible(2, structs.NodeSchedulingEligible)
	eligible(3, structs.NodeSchedulingEligible)
	return c, job, running
}

func jobAllocs(t *testing.T, s *nomad.Server, job *structs.Job) []*structs.Allocation {
	t.Helper()
	allocs, err := s.State().AllocsByJob(nil, job.Namespace, job.ID, true)
	must.NoError(t, err)
	return allocs
}

func siteOutages(t *testing.T, s *nomad.Server) []*structs.SiteOutage {
	t.Helper()
	o, err := s.State().SiteOutages(nil)
	must.NoError(t, err)
	return o
}

// A whole site cut off, end to end, on upstream's heartbeat timings: both
// dc1 nodes go disconnected, the leader declares the site outage (node
// event, state), and no replacement is placed in dc2 while it lasts, not
// after the reschedule delay and not across a leader change, which keeps
// the declaration. When the site returns the outage clears, both originals
// run on, never restarted, and nothing was stopped: what upstream's #5876
// got wrong (originals killed on return before their replacements existed)
// cannot happen, because no replacement was ever made.
func TestMemCluster_SiteOutage_HoldsAcrossLeaderChangeAndReturns(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c, job, originals := siteCluster(t)
		c.Net.Isolate(testutil.ClientHost(0), fault.Blackhole)
		c.Net.Isolate(testutil.ClientHost(1), fault.Blackhole)

		wait.Eventually(t, 2*time.Minute, "site outage declared, originals unknown", func() (bool, string) {
			allocs := jobAllocs(t, c.Leader(), job)
			unknown := 0
			for _, a := range allocs {
				if a.ClientStatus == structs.AllocClientStatusUnknown {
					unknown++
				}
			}
			o := siteOutages(t, c.Leader())
			return len(o) == 1 && unknown == 2, fmt.Sprintf("outages %d; %s", len(o), describe(allocs))
		})
		o := siteOutages(t, c.Leader())[0]
		must.Eq(t, "edge/dc1", o.ID)
		must.Eq(t, "Site outage declared for dc1 in node pool edge (2/2 nodes disconnected within 1m)", o.Declared())
		n, err := c.Leader().State().NodeByID(nil, originals[0].NodeID)
		must.NoError(t, err)
		must.True(t, hasNodeEvent(n, o.Declared()), must.Sprint("the site's nodes carry the declaration"))
		// One decision, one raft entry: the outage was declared in the entry
		// that marked the second node disconnected.
		sameEntry := false
		for _, a := range originals {
			n, err := c.Leader().State().NodeByID(nil, a.NodeID)
			must.NoError(t, err)
			for _, e := range n.Events {
				sameEntry = sameEntry || (e.Message == structs.NodeEventHeartbeatMissed && e.CreateIndex == o.CreateIndex)
			}
		}
		must.True(t, sameEntry, must.Sprintf("no node's disconnect is at the declaration's index %d", o.CreateIndex))

		holds := func(s *nomad.Server, what string) {
			for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); {
				testutil.Settle(5 * time.Second)
				allocs := jobAllocs(t, s, job)
				must.Len(t, 2, allocs, must.Sprintf("%s: no replacement: %s", what, describe(allocs)))
				must.Len(t, 1, siteOutages(t, s), must.Sprint(what))
			}
		}
		holds(c.Leader(), "past the reschedule delay")

		old := c.WaitForLeader()
		c.Net.Isolate(testutil.ServerHost(old), fault.Reset)
		next := c.WaitForLeaderExcept(old)
		holds(c.Servers[next], "after a leader change")
		c.Net.Heal(testutil.ServerHost(old))

		c.Net.Heal(testutil.ClientHost(0))
		c.Net.Heal(testutil.ClientHost(1))
		wait.Eventually(t, 2*time.Minute, "outage cleared, originals running", func() (bool, string) {
			allocs := jobAllocs(t, c.Leader(), job)
			ok := len(siteOutages(t, c.Leader())) == 0 && len(allocs) == 2
			for _, a := range allocs {
				ok = ok && a.ClientStatus == structs.AllocClientStatusRunning && !a.NeedsToReconnect()
			}
			return ok, describeLong(allocs)
		})
		for _, a := range originals {
			got := mustAlloc(t, c.Leader().State(), a.ID)
			must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
			must.Eq(t, uint64(0), got.TaskStates["app"].Restarts, must.Sprint("never restarted"))
		}
	})
}

// The same pool with one node of dc1 cut off: one of two is half the
// site but fewer than min_nodes (2), so it is a node's disconnect, not a
// site's, and its allocation is replaced after the reschedule delay.
func TestMemCluster_SiteOutage_SingleNodeIsReplaced(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c, job, originals := siteCluster(t)
		cut := 0
		if c.Clients[1].NodeID() == originals[0].NodeID {
			cut = 1
		}
		c.Net.Isolate(testutil.ClientHost(cut), fault.Blackhole)
		wait.Eventually(t, 3*time.Minute, "a replacement runs in dc2", func() (bool, string) {
			allocs := jobAllocs(t, c.Leader(), job)
			for _, a := range allocs {
				if a.PreviousAllocation == originals[0].ID && a.ClientStatus == structs.AllocClientStatusRunning {
					return true, ""
				}
			}
			return false, describe(allocs)
		})
		must.Len(t, 0, siteOutages(t, c.Leader()))
	})
}

func hasNodeEvent(n *structs.Node, msg string) bool {
	for _, e := range n.Events {
		if strings.Contains(e.Message, msg) {
			return true
		}
	}
	return false
}

func describeLong(allocs []*structs.Allocation) string {
	s := ""
	for _, a := range allocs {
		prev := a.PreviousAllocation
		if len(prev) > 8 {
			prev = prev[:8]
		}
		s += fmt.Sprintf("[%s node=%s desired=%s (%s) client=%s (%s) prev=%s name=%s] ", a.ID[:8], a.NodeID[:8], a.DesiredStatus, a.DesiredDescription, a.ClientStatus, a.ClientDescription, prev, a.Name)
	}
	return s
}
