package nomad

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// persisted lists what a store's snapshot holds, kind by kind, in the
// order Persist writes it.
func persisted(t *testing.T, st *state.StateStore) map[state.SnapshotKind][]any {
	t.Helper()
	snap, err := st.Snapshot()
	must.NoError(t, err)
	out := map[state.SnapshotKind][]any{}
	must.NoError(t, snap.Persist(func(kind state.SnapshotKind, obj any) error {
		out[kind] = append(out[kind], obj)
		return nil
	}))
	return out
}

// restoredFollower installs the leader's raft snapshot on a new FSM, as a
// follower that fell too far behind does.
func restoredFollower(t *testing.T, leader *nomadFSM) *nomadFSM {
	t.Helper()
	snap, err := leader.Snapshot()
	must.NoError(t, err)
	sink := &bufferSink{}
	must.NoError(t, snap.Persist(sink))
	follower := testFSM(t)
	must.NoError(t, follower.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	return follower
}

// everyKind is every snapshot kind this server knows: the kinds up to the
// first one NewSnapshotObject refuses.
func everyKind(t *testing.T) []state.SnapshotKind {
	t.Helper()
	var kinds []state.SnapshotKind
	for k := state.SnapshotKind(0); ; k++ {
		if _, err := state.NewSnapshotObject(k); err != nil {
			must.ErrorIs(t, err, state.ErrUnknownSnapshotKind)
			return kinds
		}
		kinds = append(kinds, k)
	}
}

// A snapshot holding one object of every kind restores on a follower to
// the same objects, kind by kind. A kind that Persist writes but the
// restore does not know fails the whole install with "unknown snapshot
// kind", as ACL objects once did: a follower could then never catch up.
func TestFSM_SnapshotRestore_EveryKind(t *testing.T) {
	leader := testFSM(t)
	node := mock.Node()
	applyEntry(t, leader, 10, structs.NodeRegisterRequestType, &structs.NodeRegisterRequest{Node: node})
	job := mock.Job()
	ev := job.NewEval(structs.EvalTriggerJobRegister, time.Now())
	applyEntry(t, leader, 11, structs.JobRegisterRequestType, &structs.JobRegisterRequest{Job: job, Eval: ev})
	alloc := mock.AllocForNode(node)
	alloc.Job, alloc.JobID = job, job.ID
	dep := structs.NewDeployment(job, 50, time.Unix(12, 0))
	alloc.DeploymentID = dep.ID
	applyEntry(t, leader, 12, structs.ApplyPlanResultsRequestType, &structs.ApplyPlanResultsRequest{
		Job: job, AllocsUpdated: []*structs.Allocation{alloc}, EvalID: ev.ID, UpdatedAt: 12, Deployment: dep})
	applyEntry(t, leader, 13, structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{
		Policies: []*structs.ACLPolicy{{Name: "ro", Rules: `node { policy = "read" }`}}})
	applyEntry(t, leader, 14, structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{
		Tokens: []*structs.ACLToken{{AccessorID: "a-1", SecretID: "s-1", Name: "ops", Type: structs.ACLManagementToken}}})
	applyEntry(t, leader, 15, structs.NamespaceUpsertRequestType, &structs.NamespaceUpsertRequest{
		Namespaces: []*structs.Namespace{{Name: "fleet"}}})
	count := int64(2)
	applyEntry(t, leader, 16, structs.ScalingEventRegisterRequestType, &structs.ScalingEventRequest{
		Namespace: job.Namespace, JobID: job.ID, TaskGroup: job.TaskGroups[0].Name,
		ScalingEvent: &structs.ScalingEvent{Time: 16, Count: &count, Message: "busy"}})
	applyEntry(t, leader, 17, structs.NodePoolUpsertRequestType, &structs.NodePoolUpsertRequest{
		NodePools: []*structs.NodePool{{Name: "edge"}}})
	applyEntry(t, leader, 18, structs.SiteOutageUpdateRequestType, &structs.SiteOutageUpdateRequest{
		Declare: []*structs.SiteOutage{{ID: "edge/dc1", Pool: "edge", Datacenter: "dc1", DeclaredAt: 18, Disconnected: 3, Nodes: 4, Window: time.Minute}}})
	applyEntry(t, leader, 19, structs.OneTimeTokenUpsertRequestType, &structs.OneTimeTokenUpsertRequest{
		OneTimeToken: &structs.OneTimeToken{OneTimeSecretID: "ott-1", AccessorID: "a-1", ExpiresAt: time.Unix(600, 0).UTC()}})
	applyEntry(t, leader, 20, structs.SchedulerConfigRequestType, &structs.SchedulerSetConfigRequest{
		Config: structs.SchedulerConfiguration{SchedulerAlgorithm: structs.SchedulerAlgorithmBinpack, PauseEvalBroker: true}})
	applyEntry(t, leader, 21, structs.VarApplyStateRequestType, &structs.VarApplyStateRequest{Op: structs.VarOpSet, Now: 21,
		Var: &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: "a/b"},
			VariableData: structs.VariableData{Data: []byte("sealed"), KeyID: "k1"}}})
	applyEntry(t, leader, 22, structs.RootKeyMetaUpsertRequestType, &structs.KeyringUpdateRootKeyMetaRequest{
		RootKeyMeta: &structs.RootKeyMeta{KeyID: "k1", Algorithm: structs.EncryptionAlgorithmAES256GCM, State: structs.RootKeyStateActive}})
	applyEntry(t, leader, 23, structs.ServiceRegistrationUpsertRequestType, &structs.ServiceRegistrationUpsertRequest{
		Services: []*structs.ServiceRegistration{{ID: "_nomad-task-1", ServiceName: "web", Namespace: job.Namespace,
			NodeID: node.ID, JobID: job.ID, AllocID: alloc.ID, Address: "10.0.0.1", Port: 8080}}})
	applyEntry(t, leader, 24, structs.AutopilotConfigRequestType, &structs.AutopilotSetConfigRequest{
		Config: structs.AutopilotConfig{CleanupDeadServers: false, MinQuorum: 3, LastContactThreshold: time.Second}})
	applyEntry(t, leader, 25, structs.ServerIdentitySetRequestType, &structs.ServerIdentitySetRequest{
		Identity: &structs.ServerIdentity{Secret: []byte("servers-only")}})
	applyEntry(t, leader, 26, structs.TLSCAUpsertRequestType, &structs.TLSCAUpsertRequest{
		CAs: []*structs.TLSCA{{ID: "ca1", CertPEM: []byte("pem"), Active: true}}})

	want := persisted(t, leader.State())
	for _, k := range everyKind(t) {
		must.SliceNotEmpty(t, want[k], must.Sprintf("the leader holds no %s: add one above", k))
	}

	got := persisted(t, restoredFollower(t, leader).State())
	for _, k := range everyKind(t) {
		must.Eq(t, want[k], got[k], must.Sprint(k))
	}
}

// A stream with a kind from a newer server fails the install by name, and
// the follower keeps the store it had.
func TestFSM_SnapshotRestore_UnknownKind(t *testing.T) {
	var buf bytes.Buffer
	enc := codec.NewEncoder(&buf, structs.MsgpackHandle)
	must.NoError(t, enc.Encode(state.SnapshotKind(200)))
	must.NoError(t, enc.Encode(map[string]string{}))

	f := testFSM(t)
	before := f.State()
	err := f.Restore(io.NopCloser(&buf))
	must.ErrorIs(t, err, state.ErrUnknownSnapshotKind)
	must.True(t, before == f.State(), must.Sprint("a failed install keeps the old store"))
}
