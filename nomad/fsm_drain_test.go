package nomad

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The drain, eligibility and purge entries apply the same on every server
// (times come from the entry), and a drain in progress survives a snapshot:
// a follower that becomes leader resumes it.
func TestFSM_DrainEligibilityPurge(t *testing.T) {
	f := testFSM(t)
	node := mock.Node()
	applyEntry(t, f, 10, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	t0 := time.Unix(1_700_000_000, 0).UTC()
	d := &structs.DrainStrategy{DrainSpec: structs.DrainSpec{Deadline: time.Hour}, ForceDeadline: t0.Add(time.Hour), StartedAt: t0}
	applyEntry(t, f, 11, structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{
		NodeID: node.ID, DrainStrategy: d, Meta: map[string]string{"why": "kernel"}, UpdatedAt: t0,
		NodeEvent: structs.NewNodeEvent(structs.NodeEventSubsystemDrain, structs.NodeDrainEventDrainSet, t0),
	})

	snap, err := f.Snapshot()
	must.NoError(t, err)
	sink := &bufferSink{}
	must.NoError(t, snap.Persist(sink))
	follower := testFSM(t)
	must.NoError(t, follower.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	got, err := follower.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, d, got.DrainStrategy)
	must.Eq(t, structs.NodeSchedulingIneligible, got.SchedulingEligibility)
	must.Eq(t, structs.NodeDrainEventDrainSet, got.Events[len(got.Events)-1].Message)
	must.Eq(t, t0, got.Events[len(got.Events)-1].Timestamp)

	applyEntry(t, f, 12, structs.NodeUpdateDrainRequestType, &structs.NodeUpdateDrainRequest{NodeID: node.ID, MarkEligible: true, UpdatedAt: t0})
	applyEntry(t, f, 13, structs.NodeUpdateEligibilityRequestType, &structs.NodeUpdateEligibilityRequest{
		NodeID: node.ID, Eligibility: structs.NodeSchedulingIneligible, UpdatedAt: t0,
	})
	got, err = f.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Nil(t, got.DrainStrategy)
	must.Eq(t, structs.NodeSchedulingIneligible, got.SchedulingEligibility)
	must.Eq(t, structs.DrainStatusCanceled, got.LastDrain.Status)

	ev := mock.Job().NewEval(structs.EvalTriggerNodeUpdate, t0)
	applyEntry(t, f, 14, structs.NodePurgeRequestType, &structs.NodePurgeRequest{NodeID: node.ID, Evals: []*structs.Evaluation{ev}})
	got, err = f.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Nil(t, got)
	stored, err := f.State().EvalByID(nil, ev.ID)
	must.NoError(t, err)
	must.Eq(t, uint64(14), stored.NodeModifyIndex)
}
