package nomad

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Two schedulers may each see room under a node's node_max_allocs; the
// plan applier refuses the placement that would pass it, and still takes
// in-place updates of what the node runs when a lowered cap leaves it
// over.
func TestEvaluatePlan_NodeMaxAllocs(t *testing.T) {
	node := mock.Node()
	node.NodeMaxAllocs = 1
	st := planTestState(t, node)
	existing := allocWithMem(node, 100)
	must.NoError(t, st.UpsertAllocs(200, []*structs.Allocation{existing}))

	plan := &structs.Plan{}
	plan.AppendAlloc(allocWithMem(node, 100))
	_, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.Eq(t, structs.DimensionMaxAllocs, rejected[node.ID])

	// An in-place update of the allocation already there is no new one.
	update := existing.Copy()
	update.Job = update.Job.Copy()
	plan = &structs.Plan{}
	plan.AppendAlloc(update)
	_, rejected, err = evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.MapEmpty(t, rejected)
}
