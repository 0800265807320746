package nomad

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// preemptingPlan places a 1000 MB allocation on node in place of victim,
// as the scheduler writes it.
func preemptingPlan(node *structs.Node, victim *structs.Allocation) (*structs.Plan, *structs.Allocation) {
	placed := allocWithMem(node, 1000)
	placed.Job = placed.Job.Copy()
	placed.Job.Priority = 90
	placed.PreemptedAllocations = []string{victim.ID}
	plan := &structs.Plan{EvalID: structs.GenerateUUID(), Job: placed.Job, Priority: 90}
	plan.AppendAlloc(placed)
	plan.AppendPreemptedAlloc(victim, placed.ID)
	return plan, placed
}

// readyNodeOn registers a node with s and makes it ready, returning it and
// the index of that write.
func readyNodeOn(t *testing.T, s *Server) (*structs.Node, uint64) {
	t.Helper()
	node := mock.Node()
	var nresp structs.NodeUpdateResponse
	must.NoError(t, s.RPC("Node.Register", &structs.NodeRegisterRequest{Node: node}, &nresp))
	ready := node.Copy()
	ready.Status = structs.NodeStatusReady
	must.NoError(t, s.State().UpsertNode(nresp.Index+1, ready))
	return node, nresp.Index + 1
}

// The applier re-checks evictions against the newest state: an evicted
// allocation frees its room for the placement, and an eviction of an
// allocation that has stopped or gone since the scheduler looked is not
// committed (there is nothing left to evict), while the placement stands.
func TestEvaluatePlan_Preemptions(t *testing.T) {
	cases := []struct {
		name      string
		meanwhile func(victim *structs.Allocation) *structs.Allocation // nil: vanished
		evicted   bool
	}{
		{"still running", func(v *structs.Allocation) *structs.Allocation { return v }, true},
		{"completed meanwhile", func(v *structs.Allocation) *structs.Allocation {
			v.ClientStatus = structs.AllocClientStatusComplete
			return v
		}, false},
		{"stopped meanwhile", func(v *structs.Allocation) *structs.Allocation {
			v.DesiredStatus = structs.AllocDesiredStatusStop
			return v
		}, false},
		{"vanished", func(*structs.Allocation) *structs.Allocation { return nil }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := mock.Node()
			st := planTestState(t, node)
			victim := allocWithMem(node, 7000) // mock nodes offer 7936 MB
			if stored := tc.meanwhile(victim.Copy()); stored != nil {
				must.NoError(t, st.UpsertAllocs(200, []*structs.Allocation{stored}))
			}
			plan, placed := preemptingPlan(node, victim)

			result, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
			must.NoError(t, err)
			must.MapEmpty(t, rejected)
			must.Len(t, 1, result.NodeAllocation[node.ID])
			got := result.NodeAllocation[node.ID][0]
			must.Eq(t, placed.ID, got.ID)
			if tc.evicted {
				must.Len(t, 1, result.NodePreemptions[node.ID])
				must.Eq(t, []string{victim.ID}, got.PreemptedAllocations)
				return
			}
			must.SliceEmpty(t, result.NodePreemptions[node.ID])
			must.SliceEmpty(t, got.PreemptedAllocations, must.Sprint("lists only evictions made for it"))
			must.Eq(t, []string{victim.ID}, placed.PreemptedAllocations, must.Sprint("the plan is not changed"))
		})
	}
}

// Without the eviction the same placement does not fit: the fit check
// counts evictions as freed, nothing else.
func TestEvaluatePlan_PreemptionIsWhatMakesItFit(t *testing.T) {
	node := mock.Node()
	st := planTestState(t, node)
	victim := allocWithMem(node, 7000)
	must.NoError(t, st.UpsertAllocs(200, []*structs.Allocation{victim}))
	plan, _ := preemptingPlan(node, victim)
	plan.NodePreemptions = nil

	_, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.Eq(t, "resources exhausted: memory", rejected[node.ID])
}

// A committed preemption evicts the victim (upstream's desired status and
// description), links both allocations, and gives the victim's job an
// evaluation so that it is placed elsewhere, all in the plan's raft entry.
func TestApplyPlan_PreemptionEvictsAndEvaluatesVictimJob(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	node, index := readyNodeOn(t, s)
	victim := allocWithMem(node, 7000)
	victim.ClientStatus = structs.AllocClientStatusRunning
	must.NoError(t, s.State().UpsertAllocs(index+1, []*structs.Allocation{victim}))

	plan, placed := preemptingPlan(node, victim)
	result, err := s.applyPlan(plan)
	must.NoError(t, err)
	must.Len(t, 1, result.NodePreemptions[node.ID])

	evicted, err := s.State().AllocByID(nil, victim.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocDesiredStatusEvict, evicted.DesiredStatus)
	must.Eq(t, "Preempted by alloc ID "+placed.ID, evicted.DesiredDescription)
	must.Eq(t, placed.ID, evicted.PreemptedByAllocation)
	stored, err := s.State().AllocByID(nil, placed.ID)
	must.NoError(t, err)
	must.Eq(t, []string{victim.ID}, stored.PreemptedAllocations)

	evals, err := s.State().EvalsByJob(nil, victim.Namespace, victim.JobID)
	must.NoError(t, err)
	must.Len(t, 1, evals)
	must.Eq(t, structs.EvalTriggerPreemption, evals[0].TriggeredBy)
	must.Eq(t, victim.Job.Type, evals[0].Type)
	must.Eq(t, evicted.ModifyIndex, evals[0].CreateIndex, must.Sprint("one raft entry holds both"))
}
