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

// For any sequence of node changes, client reports, clock moves and job
// updates, a system job's plans place only on ready nodes, never run two
// live allocations of the group on one node, and leave every ready node
// with exactly one; no live allocation stays on a down node.
func TestSystemSched_Property(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := schedtest.NewHarness(rt)
		nodes := make([]*structs.Node, rapid.IntRange(1, 5).Draw(rt, "nodes"))
		for i := range nodes {
			nodes[i] = mock.Node()
		}
		h.UpsertNodes(nodes...)
		window := time.Duration(rapid.SampledFrom([]int{0, 1}).Draw(rt, "window")) * time.Hour
		job := h.UpsertJob(systemJob(structs.JobTypeSystem, window))

		for step := range rapid.IntRange(1, 12).Draw(rt, "steps") {
			switch rapid.IntRange(0, 4).Draw(rt, "action") {
			case 0:
				i := rapid.IntRange(0, len(nodes)-1).Draw(rt, "node")
				n := nodes[i].Copy()
				applyNodeState(n, rapid.SampledFrom(nodeStates).Draw(rt, "state"))
				h.UpsertNodes(n)
				nodes[i] = n
			case 1:
				reportRunning(rt, h, job, nodes)
			case 2:
				h.Now = h.Now.Add(time.Duration(rapid.IntRange(1, 90).Draw(rt, "minutes")) * time.Minute)
			case 3:
				next := job.Copy()
				next.TaskGroups[0].Tasks[0].Env = map[string]string{"STEP": string(rune('a' + step))}
				job = h.UpsertJob(next)
			}
			e := schedtest.JobEval(job, structs.EvalTriggerNodeUpdate)
			h.UpsertEval(e)
			plans := len(h.Plans)
			must.NoError(rt, h.Process(scheduler.NewSystemScheduler, e))
			checkSystemInvariants(rt, h, job, h.Plans[plans:])
		}
	})
}

// reportRunning answers for the clients that can: pending and unknown
// allocations on ready or initializing nodes report running.
func reportRunning(t schedtest.TB, h *schedtest.Harness, job *structs.Job, nodes []*structs.Node) {
	talking := map[string]bool{}
	for _, n := range nodes {
		talking[n.ID] = n.Status == structs.NodeStatusReady || n.Status == structs.NodeStatusInit
	}
	var updates []*structs.Allocation
	for _, a := range h.JobAllocs(job) {
		if talking[a.NodeID] && !a.TerminalStatus() && a.ClientStatus != structs.AllocClientStatusRunning {
			u := a.Copy()
			u.ClientStatus = structs.AllocClientStatusRunning
			updates = append(updates, u)
		}
	}
	if len(updates) > 0 {
		must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), updates))
	}
}

func checkSystemInvariants(t schedtest.TB, h *schedtest.Harness, job *structs.Job, plans []*structs.Plan) {
	t.Helper()
	byID := map[string]*structs.Node{}
	iter, err := h.State.Nodes(nil)
	must.NoError(t, err)
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		n := raw.(*structs.Node)
		byID[n.ID] = n
	}
	for _, p := range plans {
		for _, a := range schedtest.PlacedAllocs(p) {
			must.True(t, byID[a.NodeID].Ready(), must.Sprintf("placed on a node that is %s", byID[a.NodeID].Status))
		}
	}
	live := map[string]int{}
	for _, a := range h.JobAllocs(job) {
		if a.DesiredStatus == structs.AllocDesiredStatusRun && !a.ClientTerminalStatus() {
			live[a.NodeID]++
			must.NotEq(t, structs.NodeStatusDown, byID[a.NodeID].Status, must.Sprint("a live allocation on a down node"))
		}
	}
	for id, n := range byID {
		must.LessEq(t, 1, live[id], must.Sprintf("node %s runs the group twice", id))
		if n.Ready() {
			must.Eq(t, 1, live[id], must.Sprintf("ready node %s runs no allocation", id))
		}
	}
}
