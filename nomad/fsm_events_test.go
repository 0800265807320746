package nomad

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/stream"
	"github.com/nomad-edge/nomad/nomad/structs"
)

type topicType struct {
	Topic stream.Topic
	Type  string
	Key   string
}

func nextBatch(t *testing.T, s *stream.Subscription) (uint64, []topicType) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := s.Next(ctx)
	must.NoError(t, err)
	var out []topicType
	for _, e := range b.Events {
		must.Eq(t, b.Index, e.Index)
		out = append(out, topicType{e.Topic, e.Type, e.Key})
	}
	return b.Index, out
}

// Each applied raft entry becomes one batch at its index, with upstream's
// topics and types: the evaluation a registration writes is an Evaluation
// event typed JobRegistered, a heartbeat miss is a NodeStreamEvent. Event
// stream consumers (dashboards, the UI) rely on these names.
func TestFSM_PublishesEntriesAsEvents(t *testing.T) {
	f := testFSM(t)
	sub := f.Events().Subscribe(stream.SubscribeRequest{Index: 1})
	node := mock.Node()
	applyEntry(t, f, 10, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	job := mock.Job()
	ev := job.NewEval(structs.EvalTriggerJobRegister, time.Now())
	applyEntry(t, f, 11, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: ev})
	alloc := mock.AllocForNode(node)
	alloc.Job, alloc.JobID = job, job.ID
	applyEntry(t, f, 12, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: job, AllocsUpdated: []*structs.Allocation{alloc}, EvalID: ev.ID, UpdatedAt: 1})
	applyEntry(t, f, 13, structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{
		Alloc: []*structs.Allocation{{ID: alloc.ID, ClientStatus: structs.AllocClientStatusRunning}}})
	applyEntry(t, f, 14, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{
		NodeID: node.ID, Status: structs.NodeStatusDisconnected, UpdatedAt: 2})

	want := []struct {
		index  uint64
		events []topicType
	}{
		{10, []topicType{{stream.TopicNode, stream.TypeNodeRegistration, node.ID}}},
		{11, []topicType{{stream.TopicJob, stream.TypeJobRegistered, job.ID}, {stream.TopicEvaluation, stream.TypeJobRegistered, ev.ID}}},
		// The plan also moves the job from pending to running.
		{12, []topicType{{stream.TopicAllocation, stream.TypePlanResult, alloc.ID}, {stream.TopicEvaluation, stream.TypePlanResult, ev.ID},
			{stream.TopicJob, stream.TypePlanResult, job.ID}}},
		{13, []topicType{{stream.TopicAllocation, stream.TypeAllocationUpdated, alloc.ID}}},
		{14, []topicType{{stream.TopicNode, stream.TypeNodeEvent, node.ID}}},
	}
	for _, w := range want {
		index, got := nextBatch(t, sub)
		must.Eq(t, w.index, index)
		must.SliceContainsAll(t, got, w.events, must.Sprintf("index %d: %v", index, got))
		must.SliceLen(t, len(w.events), got, must.Sprint("job summaries and the index table make no events"))
	}
}

// A node's secret lets whoever holds it speak for the node: it never
// appears in an event, and an allocation event does not repeat its job.
func TestFSM_EventPayloadsSanitized(t *testing.T) {
	f := testFSM(t)
	sub := f.Events().Subscribe(stream.SubscribeRequest{Index: 1})
	node := mock.Node()
	applyEntry(t, f, 10, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := sub.Next(ctx)
	must.NoError(t, err)
	buf, err := json.Marshal(b)
	must.NoError(t, err)
	must.StrNotContains(t, string(buf), node.SecretID)
	must.StrContains(t, string(buf), `"Payload":{"Node":{`)

	stored, err := f.State().NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, node.SecretID, stored.SecretID, must.Sprint("sanitizing the event leaves the stored node alone"))
}

// An entry whose write fails commits nothing and so publishes nothing:
// subscribers never hear of a change the state does not hold.
func TestFSM_FailedEntryPublishesNothing(t *testing.T) {
	f := testFSM(t)
	sub := f.Events().Subscribe(stream.SubscribeRequest{Index: 1})
	buf, err := structs.Encode(structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		AllocsUpdated: []*structs.Allocation{{ID: "no-job"}}})
	must.NoError(t, err)
	must.NotNil(t, f.Apply(&raft.Log{Index: 20, Data: buf}))
	node := mock.Node()
	applyEntry(t, f, 21, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	index, _ := nextBatch(t, sub)
	must.Eq(t, 21, index)
}

// A follower that installs a snapshot publishes nothing for it: the
// snapshot is state, not a change, and subscribers already streaming from
// the follower must not see every object again as if it had just changed.
func TestFSM_RestorePublishesNothing(t *testing.T) {
	leader := testFSM(t)
	node := mock.Node()
	applyEntry(t, leader, 10, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	snap, err := leader.Snapshot()
	must.NoError(t, err)
	sink := &bufferSink{}
	must.NoError(t, snap.Persist(sink))

	follower := testFSM(t)
	sub := follower.Events().Subscribe(stream.SubscribeRequest{Index: 1})
	must.NoError(t, follower.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	applyEntry(t, follower, 11, structs.NodeUpdateStatusRequestType, &structs.NodeUpdateStatusRequest{
		NodeID: node.ID, Status: structs.NodeStatusDown, UpdatedAt: 3})
	index, got := nextBatch(t, sub)
	must.Eq(t, 11, index, must.Sprint("the first batch is the first entry applied after the restore"))
	must.Eq(t, []topicType{{stream.TopicNode, stream.TypeNodeEvent, node.ID}}, got)
}
