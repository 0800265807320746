package nomad

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A follower restoring a snapshot gets the leader's namespaces and ACL
// policies too: a server restarted from a snapshot must not lose who may
// do what, nor the namespaces its jobs live in.
func TestFSM_SnapshotRestore_NamespacesAndACL(t *testing.T) {
	leader := testFSM(t)
	applyEntry(t, leader, 10, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{
		Namespaces: []*structs.Namespace{{Name: "fleet", Description: "edge", Meta: map[string]string{"site": "north"}}}})
	applyEntry(t, leader, 11, structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{
		Policies: []*structs.ACLPolicy{{Name: "ro", Rules: `namespace "fleet" { policy = "read" }`}}})
	job := mock.Job()
	job.Namespace = "fleet"
	applyEntry(t, leader, 12, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job})

	snap, err := leader.Snapshot()
	must.NoError(t, err)
	sink := &bufferSink{}
	must.NoError(t, snap.Persist(sink))
	follower := testFSM(t)
	must.NoError(t, follower.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))

	st := follower.State()
	ns, err := st.NamespaceByName(nil, "fleet")
	must.NoError(t, err)
	must.NotNil(t, ns)
	must.Eq(t, "north", ns.Meta["site"])
	must.NoError(t, st.NamespaceExists(structs.DefaultNamespace))
	p, err := st.ACLPolicyByName(nil, "ro")
	must.NoError(t, err)
	must.NotNil(t, p)
	gotJob, err := st.JobByID(nil, "fleet", job.ID)
	must.NoError(t, err)
	must.NotNil(t, gotJob)
}

// The FSM refuses a job in a namespace that does not exist, writing
// nothing: a namespace deleted while the register went through raft must
// not leave an orphaned job behind.
func TestFSM_JobRegisterInMissingNamespace(t *testing.T) {
	f := testFSM(t)
	job := mock.Job()
	job.Namespace = "gone"
	buf, err := structs.Encode(structs.JobRegisterRequestType, &structs.JobRegisterRequest{
		Job: job, Eval: job.NewEval(structs.EvalTriggerJobRegister, time.Now())})
	must.NoError(t, err)
	resp := f.Apply(&raft.Log{Index: 5, Data: buf})
	respErr, ok := resp.(error)
	must.True(t, ok)
	must.True(t, errors.Is(respErr, structs.ErrInvalidRequest))
	must.ErrorContains(t, respErr, `namespace "gone" does not exist`)
	latest, err := f.State().LatestIndex()
	must.NoError(t, err)
	must.Eq(t, uint64(0), latest)
}
