package state

import (
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A new node is stamped with its indexes and a registration event taken from
// its own timestamp, so every server's FSM records the same event.
func TestUpsertNode_New(t *testing.T) {
	s := testStateStore(t)
	node := mock.Node()
	must.NoError(t, s.UpsertNode(10, node))

	out, err := s.NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, node, out)
	must.Eq(t, 10, out.CreateIndex)
	must.Eq(t, 10, out.ModifyIndex)
	must.Len(t, 1, out.Events)
	must.Eq(t, structs.NodeRegisterEventRegistered, out.Events[0].Message)
	must.Eq(t, time.Unix(node.StatusUpdatedAt, 0), out.Events[0].Timestamp)
	must.Eq(t, 10, out.Events[0].CreateIndex)
}

// A client that restarts re-registers; it must not undo an operator's drain
// or wipe the node's history.
func TestUpsertNode_ReregisterKeepsServerOwnedFields(t *testing.T) {
	s := testStateStore(t)
	node := mock.Node()
	must.NoError(t, s.UpsertNode(10, node))
	must.NoError(t, s.UpdateNodeDrain(11, node.ID, NodeDrainUpdate{Drain: true}))

	again := node.Copy()
	again.Events = nil
	again.Drain = false
	again.SchedulingEligibility = structs.NodeSchedulingEligible
	again.Attributes["kernel.name"] = "freebsd"
	must.NoError(t, s.UpsertNode(12, again))

	out, err := s.NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, 10, out.CreateIndex)
	must.Eq(t, 12, out.ModifyIndex)
	must.True(t, out.Drain)
	must.Eq(t, structs.NodeSchedulingIneligible, out.SchedulingEligibility)
	must.Len(t, 1, out.Events)
	must.Eq(t, "freebsd", out.Attributes["kernel.name"])
}

// A node without an ID cannot be keyed; the write fails instead of storing it.
func TestUpsertNode_RejectsMissingID(t *testing.T) {
	s := testStateStore(t)
	must.ErrorIs(t, s.UpsertNode(1, &structs.Node{}), structs.ErrMissingField)
}

// A missing node is a normal answer (nil), not an error.
func TestNodeByID_Missing(t *testing.T) {
	s := testStateStore(t)
	out, err := s.NodeByID(nil, "nope")
	must.NoError(t, err)
	must.Nil(t, out)
}

// DeleteNode is all or nothing, so a bad ID cannot leave half a batch done.
func TestDeleteNode(t *testing.T) {
	s := testStateStore(t)
	n1, n2 := mock.Node(), mock.Node()
	must.NoError(t, s.UpsertNode(10, n1))
	must.NoError(t, s.UpsertNode(11, n2))

	err := s.DeleteNode(12, []string{n1.ID, "missing"})
	must.ErrorIs(t, err, structs.ErrUnknownNode)
	out, _ := s.NodeByID(nil, n1.ID)
	must.NotNil(t, out)

	must.NoError(t, s.DeleteNode(13, []string{n1.ID, n2.ID}))
	nodes := drain[*structs.Node](t, mustIter(s.Nodes(nil)))
	must.SliceEmpty(t, nodes)
	idx, _ := s.Index(TableNodes)
	must.Eq(t, 13, idx)
}

// Heartbeat expiry and reconnect go through UpdateNodeStatus; the time and
// event come from the request so the FSM is deterministic.
func TestUpdateNodeStatus(t *testing.T) {
	s := testStateStore(t)
	node := mock.Node()
	must.NoError(t, s.UpsertNode(10, node))

	event := structs.NewNodeEvent(structs.NodeEventSubsystemCluster, structs.NodeEventHeartbeatMissed, time.Unix(1_700_000_100, 0))
	must.NoError(t, s.UpdateNodeStatus(11, node.ID, structs.NodeStatusDisconnected, 1_700_000_100, event))

	out, err := s.NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, structs.NodeStatusDisconnected, out.Status)
	must.Eq(t, 1_700_000_100, out.StatusUpdatedAt)
	must.Eq(t, 11, out.ModifyIndex)
	must.Eq(t, 10, out.CreateIndex)
	must.Len(t, 2, out.Events)
	must.Eq(t, structs.NodeEventHeartbeatMissed, out.Events[1].Message)
	must.Eq(t, 11, out.Events[1].CreateIndex)
	must.Eq(t, 0, event.CreateIndex, must.Sprint("the caller's event must not be changed"))

	must.NoError(t, s.UpdateNodeStatus(12, node.ID, structs.NodeStatusReady, 1_700_000_200, nil))
	out, _ = s.NodeByID(nil, node.ID)
	must.Eq(t, structs.NodeStatusReady, out.Status)
	must.Len(t, 2, out.Events)

	must.ErrorIs(t, s.UpdateNodeStatus(13, node.ID, "sleepy", 0, nil), structs.ErrInvalidRequest)
	must.ErrorIs(t, s.UpdateNodeStatus(13, "missing", structs.NodeStatusDown, 0, nil), structs.ErrUnknownNode)
}

// A drain makes the node ineligible; ending it may restore eligibility, and
// a draining node cannot be made eligible behind the drain's back.
func TestUpdateNodeDrainAndEligibility(t *testing.T) {
	s := testStateStore(t)
	node := mock.Node()
	must.NoError(t, s.UpsertNode(10, node))

	must.NoError(t, s.UpdateNodeDrain(11, node.ID, NodeDrainUpdate{Drain: true}))
	out, _ := s.NodeByID(nil, node.ID)
	must.True(t, out.Drain)
	must.False(t, out.Ready())
	must.ErrorIs(t, s.UpdateNodeEligibility(12, node.ID, structs.NodeSchedulingEligible, nil), structs.ErrInvalidRequest)

	must.NoError(t, s.UpdateNodeDrain(13, node.ID, NodeDrainUpdate{Drain: false}))
	out, _ = s.NodeByID(nil, node.ID)
	must.False(t, out.Drain)
	must.Eq(t, structs.NodeSchedulingIneligible, out.SchedulingEligibility)

	must.NoError(t, s.UpdateNodeEligibility(14, node.ID, structs.NodeSchedulingEligible, nil))
	out, _ = s.NodeByID(nil, node.ID)
	must.True(t, out.Ready())

	must.NoError(t, s.UpdateNodeDrain(15, node.ID, NodeDrainUpdate{Drain: true}))
	must.NoError(t, s.UpdateNodeDrain(16, node.ID, NodeDrainUpdate{Drain: false, MarkEligible: true}))
	out, _ = s.NodeByID(nil, node.ID)
	must.True(t, out.Ready())
	must.ErrorIs(t, s.UpdateNodeEligibility(17, node.ID, "maybe", nil), structs.ErrInvalidRequest)
}

// LastDrain records each drain: when it started, its metadata, and whether
// it completed or was canceled; a client re-registering keeps the drain.
func TestUpdateNodeDrain_LastDrain(t *testing.T) {
	s := testStateStore(t)
	node := mock.Node()
	must.NoError(t, s.UpsertNode(10, node))
	t0 := time.Unix(1_700_000_000, 0).UTC()
	d := &structs.DrainStrategy{DrainSpec: structs.DrainSpec{Deadline: time.Hour}, ForceDeadline: t0.Add(time.Hour), StartedAt: t0}
	must.NoError(t, s.UpdateNodeDrain(11, node.ID, NodeDrainUpdate{
		Drain: true, Strategy: d, Meta: map[string]string{"why": "kernel"}, UpdatedAt: t0,
	}))
	re := node.Copy()
	re.DrainStrategy, re.Drain = nil, false
	must.NoError(t, s.UpsertNode(13, re))
	out, _ := s.NodeByID(nil, node.ID)
	must.Eq(t, d, out.DrainStrategy)
	must.Eq(t, &structs.DrainMetadata{StartedAt: t0, UpdatedAt: t0, Status: structs.DrainStatusDraining,
		Meta: map[string]string{"why": "kernel"}}, out.LastDrain)

	t1 := t0.Add(time.Minute)
	must.NoError(t, s.UpdateNodeDrain(14, node.ID, NodeDrainUpdate{Complete: true, UpdatedAt: t1}))
	out, _ = s.NodeByID(nil, node.ID)
	must.Nil(t, out.DrainStrategy)
	must.Eq(t, structs.NodeSchedulingIneligible, out.SchedulingEligibility)
	must.Eq(t, structs.DrainStatusComplete, out.LastDrain.Status)
	must.Eq(t, t1, out.LastDrain.UpdatedAt)

	must.NoError(t, s.UpdateNodeDrain(15, node.ID, NodeDrainUpdate{Drain: true, Strategy: d, UpdatedAt: t1}))
	must.NoError(t, s.UpdateNodeDrain(16, node.ID, NodeDrainUpdate{MarkEligible: true, UpdatedAt: t1}))
	out, _ = s.NodeByID(nil, node.ID)
	must.Eq(t, structs.DrainStatusCanceled, out.LastDrain.Status)
	must.True(t, out.Ready())
}

// The CLI resolves short node IDs by prefix.
func TestNodesByIDPrefix(t *testing.T) {
	s := testStateStore(t)
	a, b, c := mock.Node(), mock.Node(), mock.Node()
	a.ID = "aaaa1111-0000-0000-0000-000000000000"
	b.ID = "aaaa2222-0000-0000-0000-000000000000"
	c.ID = "bbbb1111-0000-0000-0000-000000000000"
	for i, n := range []*structs.Node{a, b, c} {
		must.NoError(t, s.UpsertNode(uint64(10+i), n))
	}
	got := ids(drain[*structs.Node](t, mustIter(s.NodesByIDPrefix(nil, "aaaa"))))
	must.SliceContainsAll(t, []string{a.ID, b.ID}, got)
	got = ids(drain[*structs.Node](t, mustIter(s.NodesByIDPrefix(nil, "aaaa2"))))
	must.Eq(t, []string{b.ID}, got)
	must.Len(t, 3, drain[*structs.Node](t, mustIter(s.Nodes(nil))))
}

// A blocking query on one node must wake for that node and sleep through
// writes to others.
func TestNodeByID_Watch(t *testing.T) {
	s := testStateStore(t)
	n1, n2 := mock.Node(), mock.Node()
	must.NoError(t, s.UpsertNode(10, n1))
	must.NoError(t, s.UpsertNode(11, n2))

	ws := memdb.NewWatchSet()
	_, err := s.NodeByID(ws, n1.ID)
	must.NoError(t, err)

	must.NoError(t, s.UpdateNodeStatus(12, n2.ID, structs.NodeStatusDown, 0, nil))
	watchNotFired(t, ws)
	must.NoError(t, s.UpdateNodeStatus(13, n1.ID, structs.NodeStatusDown, 0, nil))
	watchFired(t, ws)

	// A list watch fires for any node.
	ws = memdb.NewWatchSet()
	_, err = s.Nodes(ws)
	must.NoError(t, err)
	must.NoError(t, s.UpsertNode(14, mock.Node()))
	watchFired(t, ws)
}

func mustIter(iter memdb.ResultIterator, err error) memdb.ResultIterator {
	if err != nil {
		panic(err)
	}
	return iter
}
