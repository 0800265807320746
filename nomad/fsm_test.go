package nomad

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/stream"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// bufferSink is a raft.SnapshotSink over memory.
type bufferSink struct {
	bytes.Buffer
	canceled bool
}

func (s *bufferSink) ID() string    { return "test" }
func (s *bufferSink) Close() error  { return nil }
func (s *bufferSink) Cancel() error { s.canceled = true; return nil }

var _ raft.SnapshotSink = (*bufferSink)(nil)

func testFSM(t *testing.T) *nomadFSM {
	t.Helper()
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	f, err := newFSM(fsmDeps{
		logger:  s.logger,
		events:  stream.NewEventBroker(stream.EventBrokerConfig{}),
		evals:   s.evalBroker,
		blocked: s.blockedEvals,
	})
	must.NoError(t, err)
	return f
}

func applyEntry(t *testing.T, f *nomadFSM, index uint64, typ structs.MessageType, msg any) {
	t.Helper()
	buf, err := structs.Encode(typ, msg)
	must.NoError(t, err)
	if resp, ok := f.Apply(&raft.Log{Index: index, Data: buf}).(error); ok && resp != nil {
		t.Fatalf("apply %s at %d: %v", typ, index, resp)
	}
}

// A follower that installs a snapshot ends up with the leader's state: the
// raft snapshot written by Persist restores into an equal store, and the
// old store's blocking queries are woken by its abandonment.
func TestFSM_SnapshotRestore(t *testing.T) {
	leader := testFSM(t)
	node := mock.Node()
	applyEntry(t, leader, 10, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	job := mock.Job()
	ev := job.NewEval(structs.EvalTriggerJobRegister, time.Now())
	applyEntry(t, leader, 11, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: ev})
	alloc := mock.AllocForNode(node)
	alloc.Job, alloc.JobID = job, job.ID
	applyEntry(t, leader, 12, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: job, AllocsUpdated: []*structs.Allocation{alloc}, EvalID: ev.ID, UpdatedAt: 1})
	applyEntry(t, leader, 13, structs.AllocClientUpdateRequestType, &structs.AllocUpdateRequest{
		Alloc: []*structs.Allocation{{ID: alloc.ID, ClientStatus: structs.AllocClientStatusRunning}}})
	v1 := job.Copy()
	v1.TaskGroups[0].Count++
	applyEntry(t, leader, 14, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: v1})
	token := &structs.ACLToken{AccessorID: "a-1", SecretID: "s-1", Name: "ops", Type: structs.ACLManagementToken}
	must.NoError(t, leader.State().UpsertACLTokens(15, []*structs.ACLToken{token}))

	snap, err := leader.Snapshot()
	must.NoError(t, err)
	sink := &bufferSink{}
	must.NoError(t, snap.Persist(sink))
	must.False(t, sink.canceled)

	follower := testFSM(t)
	old := follower.State()
	must.NoError(t, follower.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	select {
	case <-old.AbandonCh():
	default:
		t.Fatal("the replaced store was not abandoned")
	}

	st := follower.State()
	gotNode, err := st.NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Eq(t, node.SecretID, gotNode.SecretID, must.Sprint("the node's secret survives the snapshot"))
	gotJob, err := st.JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.NotNil(t, gotJob)
	gotEval, err := st.EvalByID(nil, ev.ID)
	must.NoError(t, err)
	must.Eq(t, uint64(11), gotEval.JobModifyIndex)
	gotAlloc, err := st.AllocByID(nil, alloc.ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocClientStatusRunning, gotAlloc.ClientStatus)
	summary, err := st.JobSummaryByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, 1, summary.Summary["web"].Running)
	versions, err := st.JobVersionsByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Len(t, 2, versions, must.Sprint("job history survives the snapshot"))
	gotToken, err := st.ACLTokenBySecretID(nil, token.SecretID)
	must.NoError(t, err)
	must.NotNil(t, gotToken, must.Sprint("ACL tokens survive the snapshot"))
	for _, table := range []string{state.TableNodes, state.TableJobs, state.TableEvals, state.TableAllocs, state.TableJobVersion} {
		want, err := leader.State().Index(table)
		must.NoError(t, err)
		got, err := st.Index(table)
		must.NoError(t, err)
		must.Eq(t, want, got, must.Sprint(table))
	}
}

// An entry of a type this server does not know was written by a newer
// server: applying it must stop this one rather than silently diverge.
func TestFSM_UnknownMessageTypePanics(t *testing.T) {
	f := testFSM(t)
	defer func() {
		must.NotNil(t, recover())
	}()
	f.Apply(&raft.Log{Index: 1, Data: []byte{200, 0x80}})
}
