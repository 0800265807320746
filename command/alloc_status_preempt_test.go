package command

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

// alloc status -verbose names, as upstream, the allocation an evicted one
// made room for and those a placed one evicted; without -verbose the
// desired description says it already.
func TestAllocStatus_Preemptions(t *testing.T) {
	a := &api.Allocation{
		ID: "a1b2c3d4-0000", Name: "web.web[0]", JobID: "web", TaskGroup: "web",
		DesiredStatus: api.AllocDesiredStatusEvict, DesiredDescription: "Preempted by alloc ID b1b2b3b4-0000",
		PreemptedByAllocation: "b1b2b3b4-0000",
		PreemptedAllocations:  []string{"c1c2c3c4-0000", "d1d2d3d4-0000"},
	}
	verbose := formatKV(allocHeader(a, allocFacts{}, view{now: now, verbose: true}))
	must.StrContains(t, verbose, "Preempted By Allocation = b1b2b3b4-0000")
	must.StrContains(t, verbose, "Preempted Allocations   = c1c2c3c4-0000, d1d2d3d4-0000")

	short := formatKV(allocHeader(a, allocFacts{}, view{now: now}))
	must.StrNotContains(t, short, "Preempted By Allocation")
	must.StrContains(t, short, "Preempted by alloc ID b1b2b3b4-0000")
}
