package scheduler

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// testContext returns a context over a fresh store holding nodes, with an
// empty plan.
func testContext(t *testing.T, nodes ...*structs.Node) (*EvalContext, *state.StateStore) {
	t.Helper()
	st, err := state.NewStateStore(nil)
	must.NoError(t, err)
	for i, n := range nodes {
		must.NoError(t, st.UpsertNode(uint64(100+i), n))
	}
	return NewEvalContext(st, &structs.Plan{}, nil), st
}

func collect(it feasibleIterator) []*structs.Node {
	var out []*structs.Node
	for n := it.Next(); n != nil; n = it.Next() {
		out = append(out, n)
	}
	return out
}

// The static source yields each node once per selection and resumes where
// the last selection stopped, so successive placements start elsewhere.
func TestStaticIterator_RoundRobinAcrossResets(t *testing.T) {
	ctx, _ := testContext(t)
	nodes := []*structs.Node{mock.Node(), mock.Node(), mock.Node()}
	it := newStaticIterator(ctx, nodes)
	must.Eq(t, nodes[0], it.Next())
	it.Reset()
	got := collect(it)
	must.Eq(t, []*structs.Node{nodes[1], nodes[2], nodes[0]}, got)
	must.Eq(t, 4, ctx.Metrics().NodesEvaluated)
}

// The shuffle is a function of the seed: the same evaluation over the same
// state places the same, a different one spreads differently.
func TestRandomIterator_SeededShuffle(t *testing.T) {
	ctx, _ := testContext(t)
	var nodes []*structs.Node
	for range 20 {
		nodes = append(nodes, mock.Node())
	}
	a := collect(newRandomIterator(ctx, nodes, 42))
	b := collect(newRandomIterator(ctx, nodes, 42))
	c := collect(newRandomIterator(ctx, nodes, 43))
	must.Eq(t, a, b)
	must.NotEq(t, a, c)
	must.Len(t, 20, a)
}

// Datacenter patterns glob with "*", so one job file can target a fleet
// of edge sites; non-matching nodes are counted as filtered.
func TestDatacenterChecker(t *testing.T) {
	ctx, _ := testContext(t)
	c := newDatacenterChecker(ctx)
	n := mock.Node()
	n.Datacenter = "edge-eu-1"
	for _, tc := range []struct {
		dcs  []string
		want bool
	}{
		{[]string{"dc1"}, false},
		{[]string{"edge-eu-1"}, true},
		{[]string{"edge-*"}, true},
		{[]string{"*"}, true},
		{[]string{"edge-us-*", "*-1"}, true},
		{[]string{"edge-us-*"}, false},
	} {
		c.SetDatacenters(tc.dcs)
		must.Eq(t, tc.want, c.Feasible(n), must.Sprintf("dcs %v", tc.dcs))
	}
	must.Eq(t, 2, ctx.Metrics().ConstraintFiltered[filterDatacenter])
}

// A job stays in its node pool; "all" opts into every pool.
func TestNodePoolChecker(t *testing.T) {
	ctx, _ := testContext(t)
	c := newNodePoolChecker(ctx)
	n := mock.Node()
	n.NodePool = "gpu"
	c.SetPool("default")
	must.False(t, c.Feasible(n))
	c.SetPool("gpu")
	must.True(t, c.Feasible(n))
	c.SetPool(NodePoolAll)
	must.True(t, c.Feasible(n))
}

// A driver counts when fingerprinted detected and healthy; nodes that
// report only the driver.<name> attribute are understood too.
func TestDriverChecker(t *testing.T) {
	ctx, _ := testContext(t)
	healthy := mock.Node()
	unhealthy := mock.Node()
	unhealthy.Drivers["mock_driver"].Healthy = false
	attrOnly := mock.Node()
	attrOnly.Drivers = nil
	attrOff := mock.Node()
	attrOff.Drivers = nil
	attrOff.Attributes["driver.mock_driver"] = "false"

	c := newDriverChecker(ctx)
	c.SetTaskGroup(mock.Job().TaskGroups[0])
	must.True(t, c.Feasible(healthy))
	must.False(t, c.Feasible(unhealthy))
	must.True(t, c.Feasible(attrOnly))
	must.False(t, c.Feasible(attrOff))
	must.Eq(t, 2, ctx.Metrics().ConstraintFiltered[filterMissingDriver])
}

// Every constraint operator, against interpolated node fields; the failed
// constraint is the recorded reason, which `alloc status` shows.
func TestConstraintChecker_Operators(t *testing.T) {
	ctx, _ := testContext(t)
	n := mock.Node()
	n.Name = "edge-7"
	n.Meta = map[string]string{"rack": "r1", "tags": "a,b,c"}
	n.Attributes["cpu.numcores"] = "8"
	n.Attributes["os.version"] = "22.04"
	n.Attributes["nomad.version"] = "1.7.3"
	cases := []struct {
		c    structs.Constraint
		want bool
	}{
		{structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "="}, true},
		{structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux"}, true},
		{structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "windows", Operand: "=="}, false},
		{structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "windows", Operand: "!="}, true},
		{structs.Constraint{LTarget: "${attr.missing}", RTarget: "x", Operand: "!="}, true},
		{structs.Constraint{LTarget: "${node.datacenter}", RTarget: "dc1", Operand: "="}, true},
		{structs.Constraint{LTarget: "${node.unique.name}", RTarget: "edge-[0-9]+", Operand: "regexp"}, true},
		{structs.Constraint{LTarget: "${meta.rack}", RTarget: "r2", Operand: "="}, false},
		{structs.Constraint{LTarget: "${attr.cpu.numcores}", RTarget: "4", Operand: ">"}, true},
		{structs.Constraint{LTarget: "${attr.cpu.numcores}", RTarget: "10", Operand: ">="}, false},
		{structs.Constraint{LTarget: "${attr.cpu.numcores}", RTarget: "10", Operand: "<"}, true},
		{structs.Constraint{LTarget: "${attr.cpu.numcores}", RTarget: "8", Operand: "<="}, true},
		{structs.Constraint{LTarget: "${attr.os.version}", RTarget: ">= 20.04", Operand: "version"}, true},
		{structs.Constraint{LTarget: "${attr.nomad.version}", RTarget: ">= 1.7.0, < 1.8.0", Operand: "semver"}, true},
		{structs.Constraint{LTarget: "${attr.nomad.version}", RTarget: ">= 1.8.0", Operand: "semver"}, false},
		{structs.Constraint{LTarget: "${meta.tags}", RTarget: "a,c", Operand: "set_contains"}, true},
		{structs.Constraint{LTarget: "${meta.tags}", RTarget: "a,z", Operand: "set_contains"}, false},
		{structs.Constraint{LTarget: "${meta.tags}", RTarget: "y,c", Operand: "set_contains_any"}, true},
		{structs.Constraint{LTarget: "${meta.rack}", Operand: "is_set"}, true},
		{structs.Constraint{LTarget: "${meta.zone}", Operand: "is_set"}, false},
		{structs.Constraint{LTarget: "${meta.zone}", Operand: "is_not_set"}, true},
		{structs.Constraint{LTarget: "${attr.kernel.name}", RTarget: "linux", Operand: "bogus"}, false},
		{structs.Constraint{LTarget: "${meta.tags}", RTarget: "a, b", Operand: "set_contains_all"}, true},
		{structs.Constraint{LTarget: "${meta.tags}", RTarget: "a,z", Operand: "set_contains_all"}, false},
		{structs.Constraint{LTarget: "${meta.tags}", RTarget: "y,z", Operand: "set_contains_any"}, false},
		{structs.Constraint{LTarget: "${node.unique.name}", RTarget: "^web", Operand: "regexp"}, false},
		{structs.Constraint{LTarget: "${meta.rack}", RTarget: "r0", Operand: ">"}, true},
		{structs.Constraint{LTarget: "${attr.missing}", RTarget: "1", Operand: "<"}, false},
		{structs.Constraint{LTarget: "${attr.os.version}", RTarget: "~> 22.0", Operand: "version"}, true},
		{structs.Constraint{LTarget: "${node.pool}", RTarget: "default", Operand: "="}, true},
		// Not node properties: checked by their own checkers.
		{structs.Constraint{Operand: "distinct_hosts"}, true},
		{structs.Constraint{LTarget: "${meta.rack}", RTarget: "2", Operand: "distinct_property"}, true},
	}
	for _, tc := range cases {
		c := tc.c
		ch := newConstraintChecker(ctx, []*structs.Constraint{&c})
		must.Eq(t, tc.want, ch.Feasible(n), must.Sprintf("%s", c.String()))
	}
	must.Eq(t, 1, ctx.Metrics().ConstraintFiltered["${meta.rack} = r2"])
}

// distinct_hosts refuses a node holding, or planned to hold, an
// allocation of the same job (job level) or group (group level).
func TestDistinctHostsChecker(t *testing.T) {
	busy, free := mock.Node(), mock.Node()
	ctx, st := testContext(t, busy, free)
	job := mock.Job()
	job.Constraints = []*structs.Constraint{{Operand: structs.ConstraintDistinctHosts}}
	a := mock.AllocForNode(busy)
	a.JobID, a.Job = job.ID, job
	must.NoError(t, st.UpsertJob(200, 0, job))
	must.NoError(t, st.UpsertAllocs(201, []*structs.Allocation{a}))

	c := newDistinctHostsChecker(ctx)
	c.SetTaskGroup(job, job.TaskGroups[0])
	must.False(t, c.Feasible(busy))
	must.True(t, c.Feasible(free))

	planned := mock.AllocForNode(free)
	planned.JobID = job.ID
	ctx.Plan().AppendAlloc(planned)
	must.False(t, c.Feasible(free), must.Sprint("the plan's own placements count"))
}

// The wrapper passes only nodes every checker accepts, and counts each
// rejection once.
func TestFeasibilityWrapper(t *testing.T) {
	ctx, _ := testContext(t)
	good, noDriver, wrongDC := mock.Node(), mock.Node(), mock.Node()
	noDriver.Drivers = map[string]*structs.DriverInfo{}
	noDriver.Attributes = map[string]string{}
	wrongDC.Datacenter = "dc9"
	dc := newDatacenterChecker(ctx)
	dc.SetDatacenters([]string{"dc1"})
	drv := newDriverChecker(ctx)
	drv.SetTaskGroup(mock.Job().TaskGroups[0])
	w := newFeasibilityWrapper(newStaticIterator(ctx, []*structs.Node{noDriver, good, wrongDC}), dc, drv)
	must.Eq(t, []*structs.Node{good}, collect(w))
	m := ctx.Metrics()
	must.Eq(t, 3, m.NodesEvaluated)
	must.Eq(t, 2, m.NodesFiltered)
}
