package state

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// populated returns a store holding some of everything, with summaries and
// statuses that went through real transitions.
func populated(t *testing.T) *StateStore {
	t.Helper()
	s := testStateStore(t)
	node := mock.Node()
	must.NoError(t, s.UpsertNode(5, node))
	must.NoError(t, s.UpdateNodeStatus(6, node.ID, structs.NodeStatusDisconnected, 6,
		structs.NewNodeEvent(structs.NodeEventSubsystemCluster, structs.NodeEventHeartbeatMissed, time.Unix(6, 0))))
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 10, job, node.ID, 3)
	eval := evalFor(job, structs.EvalStatusComplete)
	eval.QueuedAllocations = map[string]int{"web": 1}
	must.NoError(t, s.UpsertEvals(12, []*structs.Evaluation{eval}))
	running := clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)
	running.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: time.Unix(13, 0)}}
	must.NoError(t, s.UpdateAllocsFromClient(13, []*structs.Allocation{running}))
	markUnknown(t, s, 14, allocs[0].ID)
	must.NoError(t, s.UpdateAllocsFromClient(15, []*structs.Allocation{clientUpdate(allocs[1].ID, structs.AllocClientStatusFailed)}))
	must.NoError(t, s.BootstrapACLTokens(16, mockManagementToken()))
	must.NoError(t, s.UpsertACLPolicies(17, []*structs.ACLPolicy{{Name: "ro", Rules: `node { policy = "read" }`}}))
	must.NoError(t, s.UpsertNamespaces(18, []*structs.Namespace{{Name: "fleet", Meta: map[string]string{"site": "north"}}}))
	count := int64(4)
	must.NoError(t, s.UpsertScalingEvent(19, &structs.ScalingEventRequest{Namespace: job.Namespace, JobID: job.ID, TaskGroup: "web",
		ScalingEvent: &structs.ScalingEvent{Time: 18, Count: &count, PreviousCount: 10, Message: "busy", Meta: map[string]any{"by": "autoscaler"}}}))
	dep := structs.NewDeployment(job, 50, time.Unix(20, 0))
	dep.TaskGroups["web"] = &structs.DeploymentState{DesiredTotal: 3, ProgressDeadline: time.Minute}
	must.NoError(t, s.UpsertDeployment(20, dep))
	must.NoError(t, s.UpdateSiteOutages(21, &structs.SiteOutageUpdateRequest{Declare: []*structs.SiteOutage{{
		ID: "default/dc1", Pool: "default", Datacenter: "dc1", DeclaredAt: 21, Disconnected: 1, Nodes: 1, Window: time.Minute}}}))
	must.NoError(t, s.UpsertOneTimeToken(22, &structs.OneTimeToken{OneTimeSecretID: "ott-1", AccessorID: "accessor-1", ExpiresAt: time.Unix(600, 0).UTC()}, nil))
	paused := structs.DefaultSchedulerConfiguration()
	paused.PauseEvalBroker = true
	_, err := s.SchedulerSetConfig(23, paused, false)
	must.NoError(t, err)
	must.Eq(t, structs.VarOpResultOk, s.VarApply(24, &structs.VarApplyStateRequest{Op: structs.VarOpSet, Var: encVar("app/db", 0, nil), Now: 24}).Result)
	must.NoError(t, s.UpsertRootKeyMeta(25, &structs.RootKeyMeta{KeyID: "k1", State: structs.RootKeyStateActive}, false))
	must.NoError(t, s.UpsertServiceRegistrations(26, []*structs.ServiceRegistration{regFor(allocs[2], "web", 8080)}))
	ap := structs.DefaultAutopilotConfig()
	ap.MinQuorum = 3
	_, err = s.AutopilotSetConfig(27, ap, false)
	must.NoError(t, err)
	_, err = s.SetServerIdentity(28, &structs.ServerIdentity{Secret: []byte("servers-only")})
	must.NoError(t, err)
	must.NoError(t, s.UpsertTLSCAs(29, &structs.TLSCAUpsertRequest{CAs: []*structs.TLSCA{{ID: "ca1", CertPEM: []byte("pem"), Active: true}}}))
	return s
}

// contents lists everything in a store, table by table, in ID order.
func contents(t *testing.T, s *StateStore) map[string][]any {
	t.Helper()
	out := map[string][]any{}
	for _, tbl := range snapshotTables {
		iter, err := s.db.Txn(false).Get(tbl.table, indexID)
		must.NoError(t, err)
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			out[tbl.table] = append(out[tbl.table], raw)
		}
	}
	return out
}

// persistAndRestore runs a raft snapshot cycle the way the FSM will: each
// object encoded with the wire codec behind its kind, then decoded into a
// fresh store.
func persistAndRestore(t *testing.T, s *StateStore) *StateStore {
	t.Helper()
	snap, err := s.Snapshot()
	must.NoError(t, err)
	var buf bytes.Buffer
	enc := codec.NewEncoder(&buf, structs.MsgpackHandle)
	must.NoError(t, snap.Persist(func(kind SnapshotKind, obj any) error {
		buf.WriteByte(byte(kind))
		return enc.Encode(obj)
	}))

	restored := testStateStore(t)
	r, err := restored.Restore()
	must.NoError(t, err)
	defer r.Abort()
	dec := codec.NewDecoder(&buf, structs.MsgpackHandle)
	for {
		kind, err := buf.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		must.NoError(t, err)
		obj, err := NewSnapshotObject(SnapshotKind(kind))
		must.NoError(t, err)
		must.NoError(t, dec.Decode(obj))
		must.NoError(t, r.RestoreObject(SnapshotKind(kind), obj))
	}
	must.NoError(t, r.Commit())
	return restored
}

// A follower that installs a snapshot must end up with exactly the
// leader's state: objects, summaries, statuses and table indexes.
func TestSnapshot_PersistRestoreRoundTrip(t *testing.T) {
	s := populated(t)
	restored := persistAndRestore(t, s)

	want, got := contents(t, s), contents(t, restored)
	for _, tbl := range snapshotTables {
		must.SliceNotEmpty(t, want[tbl.table], must.Sprint(tbl.table))
		must.Eq(t, want[tbl.table], got[tbl.table], must.Sprint(tbl.table))
	}
	for _, tbl := range snapshotTables[1:] {
		a, _ := s.Index(tbl.table)
		b, _ := restored.Index(tbl.table)
		must.Eq(t, a, b, must.Sprint(tbl.table))
	}

	// The restored store carries on: summaries stay exact after it.
	var unknownID string
	allocs := drain[*structs.Allocation](t, mustIter(restored.Allocs(nil)))
	for _, a := range allocs {
		if a.ClientStatus == structs.AllocClientStatusUnknown {
			unknownID = a.ID
		}
	}
	must.NoError(t, restored.UpdateAllocsFromClient(20, []*structs.Allocation{clientUpdate(unknownID, structs.AllocClientStatusRunning)}))
	sum, err := restored.JobSummaryByID(nil, allocs[0].Namespace, allocs[0].JobID)
	must.NoError(t, err)
	must.Eq(t, structs.TaskGroupSummary{Queued: 1, Running: 1, Starting: 1, Failed: 1}, sum.Summary["web"])
}

// The restore stays invisible until Commit, and Abort throws it away.
func TestSnapshot_RestoreAbort(t *testing.T) {
	s := testStateStore(t)
	r, err := s.Restore()
	must.NoError(t, err)
	node := mock.Node()
	must.NoError(t, r.NodeRestore(node))
	must.NoError(t, r.IndexRestore(&IndexEntry{Key: TableNodes, Value: 9}))
	r.Abort()
	out, err := s.NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Nil(t, out)
	idx, _ := s.LatestIndex()
	must.Eq(t, 0, idx)
}

// Each typed restore method lands its object in the right table.
func TestSnapshot_TypedRestore(t *testing.T) {
	s := testStateStore(t)
	r, err := s.Restore()
	must.NoError(t, err)
	job := mock.Job()
	alloc := mock.Alloc()
	eval := mock.Eval()
	sum := &structs.JobSummary{JobID: job.ID, Namespace: job.Namespace}
	must.NoError(t, r.JobRestore(job))
	must.NoError(t, r.AllocRestore(alloc))
	must.NoError(t, r.EvalRestore(eval))
	must.NoError(t, r.JobSummaryRestore(sum))
	must.NoError(t, r.IndexRestore(&IndexEntry{Key: TableAllocs, Value: 42}))
	must.NoError(t, r.Commit())

	j, _ := s.JobByID(nil, job.Namespace, job.ID)
	must.Eq(t, job, j)
	must.Eq(t, alloc, allocByID(t, s, alloc.ID))
	e, _ := s.EvalByID(nil, eval.ID)
	must.Eq(t, eval, e)
	js, _ := s.JobSummaryByID(nil, job.Namespace, job.ID)
	must.Eq(t, sum, js)
	idx, _ := s.Index(TableAllocs)
	must.Eq(t, 42, idx)
}

// A snapshot from a newer server, or a mislabelled object, is an error and
// not a silent skip.
func TestSnapshot_UnknownKind(t *testing.T) {
	_, err := NewSnapshotObject(SnapshotKind(200))
	must.ErrorIs(t, err, ErrUnknownSnapshotKind)
	s := testStateStore(t)
	r, err := s.Restore()
	must.NoError(t, err)
	defer r.Abort()
	must.ErrorIs(t, r.RestoreObject(SnapshotKind(200), &structs.Node{}), ErrUnknownSnapshotKind)
	must.Error(t, r.RestoreObject(SnapshotNode, &structs.Job{}))
	must.Eq(t, "Alloc", SnapshotAlloc.String())
	must.Eq(t, "SnapshotKind(200)", SnapshotKind(200).String())
}

// Persist stops at the encoder's first error so a failed disk write is
// reported, not half-written silently.
func TestSnapshot_PersistError(t *testing.T) {
	s := populated(t)
	snap, err := s.Snapshot()
	must.NoError(t, err)
	boom := errors.New("disk full")
	calls := 0
	err = snap.Persist(func(SnapshotKind, any) error {
		calls++
		return boom
	})
	must.ErrorIs(t, err, boom)
	must.Eq(t, 1, calls)
}

// Every kind and every table stand once in snapshotTables, and the kinds
// are numbered in order from zero: a kind listed twice would restore the
// second table's objects into the first's, and a gap would make every
// later kind unknown to the FSM's restore.
func TestSnapshot_TablesListedOnce(t *testing.T) {
	tables := map[string]bool{}
	for i, tbl := range snapshotTables {
		must.Eq(t, SnapshotKind(i), tbl.kind, must.Sprint(tbl.name))
		must.False(t, tables[tbl.table], must.Sprint(tbl.table))
		tables[tbl.table] = true
		obj, err := NewSnapshotObject(tbl.kind)
		must.NoError(t, err)
		must.NotNil(t, obj)
	}
}
