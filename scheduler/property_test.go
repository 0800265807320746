package scheduler_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

var nodeStates = []string{"ready", "ready", "ready", "down", "disconnected", "initializing", "draining", "ineligible"}

func applyNodeState(n *structs.Node, state string) {
	n.Drain = false
	n.SchedulingEligibility = structs.NodeSchedulingEligible
	switch state {
	case "draining":
		n.Status, n.Drain = structs.NodeStatusReady, true
	case "ineligible":
		n.Status, n.SchedulingEligibility = structs.NodeStatusReady, structs.NodeSchedulingIneligible
	default:
		n.Status = state
	}
}

// counted is the number of a group's instances: replacement chains with a
// live member (desired run, not finished). A chain stands for one instance
// however many of its members are unknown (see docs/concepts/disconnected-clients.md, "Reconnect").
func counted(allocs []*structs.Allocation) int {
	n, _, _ := standing(allocs)
	return n
}

// standing returns counted; how many instances have an unknown member,
// which are never stopped as excess (see docs/concepts/disconnected-clients.md, "Disconnecting allocations") and so set a floor under a
// scale-down; and the largest number of heard-from live members (not
// unknown) of one chain, which must never exceed one: two copies of an
// instance that the servers both hear from is a double.
func standing(allocs []*structs.Allocation) (n, unknownInstances, maxHeard int) {
	byID := map[string]*structs.Allocation{}
	for _, a := range allocs {
		byID[a.ID] = a
	}
	live, withUnknown, heard := map[string]bool{}, map[string]bool{}, map[string]int{}
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		root := rootOf(a, byID)
		live[root] = true
		if a.ClientStatus == structs.AllocClientStatusUnknown {
			withUnknown[root] = true
		} else {
			heard[root]++
			maxHeard = max(maxHeard, heard[root])
		}
	}
	return len(live), len(withUnknown), maxHeard
}

// Through any sequence of node status changes (down, disconnected,
// draining, back) and rescales, with or without a disconnect window and
// with slow or immediate reschedules: the scheduler never
// places on a node that is not ready, after each evaluation exactly count
// instances stand for the group (more only when more than count instances
// are unknown, which are never stopped as excess), and no instance has two
// copies the servers hear from. The reconnect paths are exercised by
// TestProperty_HealAndSettle. These are the two
// promises an edge operator relies on: no work sent into the void, no lost
// or doubled instances.
func TestProperty_ReadyNodesAndExactCount(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := schedtest.NewHarness(rt)
		numNodes := rapid.IntRange(1, 10).Draw(rt, "nodes")
		nodes := make([]*structs.Node, numNodes)
		for i := range nodes {
			nodes[i] = mock.Node()
		}
		job := mock.Job()
		tg := job.TaskGroups[0]
		tg.Count = rapid.IntRange(0, 30).Draw(rt, "count")
		tg.Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
		if rapid.Bool().Draw(rt, "window") {
			w := time.Hour
			tg.MaxClientDisconnect = &w
		}
		if rapid.Bool().Draw(rt, "immediate-reschedule") {
			tg.ReschedulePolicy = &structs.ReschedulePolicy{DelayFunction: structs.DelayFunctionConstant, Unlimited: true}
		}

		rounds := rapid.IntRange(1, 4).Draw(rt, "rounds")
		for round := range rounds {
			for i, n := range nodes {
				applyNodeState(n, rapid.SampledFrom(nodeStates).Draw(rt, "state"))
				if i == 0 && !n.Ready() {
					applyNodeState(n, "ready") // somewhere to place
				}
			}
			h.UpsertNodes(nodes...)
			h.Now = h.Now.Add(rapid.SampledFrom([]time.Duration{0, time.Minute, 2 * time.Hour}).Draw(rt, "advance"))
			if round == 0 {
				job = h.UpsertJob(job)
			} else if rapid.Bool().Draw(rt, "rescale") {
				job = job.Copy()
				job.TaskGroups[0].Count = rapid.IntRange(0, 30).Draw(rt, "count")
				job = h.UpsertJob(job)
				tg = job.TaskGroups[0]
			}
			eval := schedtest.JobEval(job, structs.EvalTriggerNodeUpdate)
			h.UpsertEval(eval)
			plans := len(h.Plans)

			must.NoError(rt, h.Process(scheduler.NewServiceScheduler, eval))

			for _, plan := range h.Plans[plans:] {
				for _, a := range schedtest.PlacedAllocs(plan) {
					node, err := h.State.NodeByID(nil, a.NodeID)
					must.NoError(rt, err)
					must.True(rt, node.Ready(), must.Sprintf("placed on %s node", node.Status))
				}
			}
			// Unknown instances are never stopped as excess (see docs/concepts/disconnected-clients.md, "Disconnecting allocations"): a group
			// scaled below them keeps them until they reconnect.
			allocs := h.JobAllocs(job)
			n, unknown, heard := standing(allocs)
			must.Eq(rt, max(tg.Count, unknown), n, must.Sprintf("round %d: %d unknown instances", round, unknown))
			must.True(rt, heard <= 1, must.Sprintf("round %d: %d heard-from copies of one instance", round, heard))

			// The clients start what they were given, where they can talk;
			// a reconnected client reports its unknown allocations running.
			var running []*structs.Allocation
			for _, a := range allocs {
				node, _ := h.State.NodeByID(nil, a.NodeID)
				reportable := a.ClientStatus == structs.AllocClientStatusPending ||
					(a.ClientStatus == structs.AllocClientStatusUnknown && a.DesiredStatus == structs.AllocDesiredStatusRun)
				if reportable && node.Status == structs.NodeStatusReady {
					u := a.Copy()
					u.ClientStatus = structs.AllocClientStatusRunning
					running = append(running, u)
				}
			}
			if len(running) > 0 {
				must.NoError(rt, h.State.UpdateAllocsFromClient(h.NextIndex(), running))
			}
		}
	})
}
