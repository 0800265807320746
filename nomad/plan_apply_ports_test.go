package nomad

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Two schedulers may pick the same host port from their own snapshots; the
// plan applier refuses the second so that two tasks never fight over a
// port, and a port freed by a stop in the same plan may be reused.
func TestEvaluatePlan_RefusesPortCollision(t *testing.T) {
	node := mock.Node()
	st := planTestState(t, node)
	existing := allocWithMem(node, 100)
	existing.AllocatedResources.Shared.Ports = structs.AllocatedPorts{{Label: "http", Value: 25000}}
	must.NoError(t, st.UpsertAllocs(200, []*structs.Allocation{existing}))

	clash := allocWithMem(node, 100)
	clash.AllocatedResources.Shared.Ports = structs.AllocatedPorts{{Label: "http", Value: 25000}}
	plan := &structs.Plan{}
	plan.AppendAlloc(clash)
	_, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.Eq(t, "network: port 25000 collision", rejected[node.ID])

	plan = &structs.Plan{}
	plan.AppendStoppedAlloc(existing, "replaced", "", "")
	plan.AppendAlloc(clash)
	result, rejected, err := evaluatePlan(snapshotOf(t, st), plan)
	must.NoError(t, err)
	must.MapEmpty(t, rejected)
	must.Len(t, 1, result.NodeAllocation[node.ID])
}
