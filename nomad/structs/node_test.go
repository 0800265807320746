package structs_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Only down is a terminal node status (see
// docs/concepts/disconnected-clients.md, "Vocabulary"): a disconnected node's
// allocations may come back, so nothing may treat it like a down one. Only
// a ready, undrained, eligible node takes placements (see
// docs/concepts/disconnected-clients.md, "Replacement while unknown",
// "Plan applier").
func TestNode_StatusPredicates(t *testing.T) {
	cases := []struct {
		status          string
		drain           bool
		eligibility     string
		ready, terminal bool
	}{
		{structs.NodeStatusReady, false, structs.NodeSchedulingEligible, true, false},
		{structs.NodeStatusReady, false, "", true, false},
		{structs.NodeStatusReady, true, structs.NodeSchedulingEligible, false, false},
		{structs.NodeStatusReady, false, structs.NodeSchedulingIneligible, false, false},
		{structs.NodeStatusInit, false, structs.NodeSchedulingEligible, false, false},
		{structs.NodeStatusDisconnected, false, structs.NodeSchedulingEligible, false, false},
		{structs.NodeStatusDown, false, structs.NodeSchedulingEligible, false, true},
	}
	for _, tc := range cases {
		n := &structs.Node{Status: tc.status, Drain: tc.drain, SchedulingEligibility: tc.eligibility}
		name := fmt.Sprintf("%s drain=%v %q", tc.status, tc.drain, tc.eligibility)
		must.Eq(t, tc.ready, n.Ready(), must.Sprint(name))
		must.Eq(t, tc.terminal, n.TerminalStatus(), must.Sprint(name))
	}
	for _, s := range []string{structs.NodeStatusInit, structs.NodeStatusReady, structs.NodeStatusDown, structs.NodeStatusDisconnected} {
		must.True(t, structs.ValidNodeStatus(s), must.Sprint(s))
	}
	must.False(t, structs.ValidNodeStatus("draining"))
	must.False(t, structs.ValidNodeStatus(""))
}

// The list form shows the address without its port (IPv6 included), the
// client version from its attributes, and never the secret.
func TestNode_Stub(t *testing.T) {
	n := fullNode()
	s := n.Stub()
	must.Eq(t, &structs.NodeListStub{
		Address: "10.1.2.3", ID: n.ID, Attributes: n.Attributes, Datacenter: n.Datacenter, Name: n.Name,
		NodeClass: n.NodeClass, NodePool: n.NodePool, Version: "0.1.0", Drain: n.Drain, LastDrain: n.LastDrain,
		SchedulingEligibility: n.SchedulingEligibility, Status: n.Status, StatusDescription: n.StatusDescription,
		StatusUpdatedAt: n.StatusUpdatedAt,
		Drivers:         n.Drivers, NodeResources: n.NodeResources, ReservedResources: n.ReservedResources,
		CreateIndex: n.CreateIndex, ModifyIndex: n.ModifyIndex,
	}, s)

	for addr, want := range map[string]string{
		"[::1]:4646":     "[::1]",
		"edge-7:4646":    "edge-7",
		"no-port-at-all": "no-port-at-all",
		"":               "",
	} {
		n.HTTPAddr = addr
		must.Eq(t, want, n.Stub().Address, must.Sprintf("HTTPAddr %q", addr))
	}
}

// A node keeps only its most recent events, oldest dropped first, so a
// flapping LTE node cannot grow its record without bound.
func TestNode_AddEventKeepsNewest(t *testing.T) {
	n := &structs.Node{}
	total := structs.MaxRetainedNodeEvents + 3
	for i := range total {
		n.AddEvent(structs.NewNodeEvent(structs.NodeEventSubsystemCluster, fmt.Sprint("event ", i), t0.Add(time.Duration(i)*time.Second)))
	}
	must.Len(t, structs.MaxRetainedNodeEvents, n.Events)
	must.Eq(t, "event 3", n.Events[0].Message)
	must.Eq(t, fmt.Sprint("event ", total-1), n.Events[len(n.Events)-1].Message)
	must.Eq(t, t0.Add(time.Duration(total-1)*time.Second), n.Events[len(n.Events)-1].Timestamp)
}

// A node's schedulable capacity is what it offers minus what it reserves.
func TestNode_Comparable(t *testing.T) {
	must.Eq(t, &structs.ComparableResources{CPUShares: 3900, MemoryMB: 7936, DiskMB: 9216}, fullNode().Comparable())
	must.Eq(t, &structs.ComparableResources{}, (&structs.Node{}).Comparable())
}

// Superset says whether a node can hold a set of allocations and, if not,
// names the first exhausted dimension, which the scheduler reports to the
// user as the reason a placement failed.
func TestComparableResources_Superset(t *testing.T) {
	have := &structs.ComparableResources{CPUShares: 1000, MemoryMB: 1024, DiskMB: 500}
	cases := []struct {
		need *structs.ComparableResources
		ok   bool
		dim  string
	}{
		{&structs.ComparableResources{CPUShares: 1000, MemoryMB: 1024, DiskMB: 500}, true, ""},
		{&structs.ComparableResources{}, true, ""},
		{&structs.ComparableResources{CPUShares: 1001}, false, "cpu"},
		{&structs.ComparableResources{MemoryMB: 1025}, false, "memory"},
		{&structs.ComparableResources{DiskMB: 501}, false, "disk"},
		{&structs.ComparableResources{CPUShares: 2000, MemoryMB: 2048, DiskMB: 1000}, false, "cpu"},
		{&structs.ComparableResources{MemoryMB: 2048, DiskMB: 1000}, false, "memory"},
	}
	for _, tc := range cases {
		ok, dim := have.Superset(tc.need)
		must.Eq(t, tc.ok, ok, must.Sprintf("need %+v", *tc.need))
		must.Eq(t, tc.dim, dim, must.Sprintf("need %+v", *tc.need))
	}
}

// Add accumulates allocations' usage; adding nothing changes nothing.
func TestComparableResources_Add(t *testing.T) {
	c := &structs.ComparableResources{CPUShares: 1, MemoryMB: 2, DiskMB: 3}
	c.Add(&structs.ComparableResources{CPUShares: 10, MemoryMB: 20, DiskMB: 30})
	c.Add(nil)
	must.Eq(t, &structs.ComparableResources{CPUShares: 11, MemoryMB: 22, DiskMB: 33}, c)
}

// A node as read by anyone but the servers has no secret: whoever holds it
// can heartbeat for the node and report its allocations. The stored node
// keeps its secret.
func TestNode_SanitizeDropsOnlyTheSecret(t *testing.T) {
	n := &structs.Node{ID: "node-a", SecretID: "s3cr3t", Name: "edge-1", Status: structs.NodeStatusReady}
	got := n.Sanitize()
	must.Eq(t, "", got.SecretID)
	must.Eq(t, "s3cr3t", n.SecretID)
	got.SecretID = n.SecretID
	must.Eq(t, n, got)
	must.Nil(t, (*structs.Node)(nil).Sanitize())
}
