package state

import (
	"errors"
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// SnapshotKind tags each object of a raft snapshot with what it is, so the
// FSM knows what to decode it into. Values are persisted in snapshots on
// disk: append new kinds, never renumber.
type SnapshotKind uint8

// Snapshot kinds.
const (
	SnapshotIndex SnapshotKind = iota
	SnapshotNode
	SnapshotJob
	SnapshotJobSummary
	SnapshotEval
	SnapshotAlloc
	SnapshotACLPolicy
	SnapshotACLToken
	SnapshotNamespace
	SnapshotJobVersion
	SnapshotScalingEvents
	SnapshotNodePool
	SnapshotDeployment
	SnapshotSiteOutage
	SnapshotOneTimeToken
	SnapshotSchedulerConfig
	SnapshotVariable
	SnapshotRootKeyMeta
	SnapshotServiceRegistration
	SnapshotAutopilotConfig
	SnapshotServerIdentity
	SnapshotTLSCA
)

// String names the kind, as error messages show it.
func (k SnapshotKind) String() string {
	if t, ok := tableOf(k); ok {
		return t.name
	}
	return fmt.Sprintf("SnapshotKind(%d)", uint8(k))
}

// ErrUnknownSnapshotKind is returned for a snapshot object of a kind this
// version does not know, typically a snapshot written by a newer server.
var ErrUnknownSnapshotKind = errors.New("unknown snapshot kind")

// snapshotTable ties a kind to the table it is read from and restored
// into. newObj and restore come from snapshotOf, which keeps the two in
// step on one Go type.
type snapshotTable struct {
	table   string
	kind    SnapshotKind
	name    string
	newObj  func() any
	restore func(r *StateRestore, obj any) error
}

// snapshotOf describes a kind whose objects are *T, restored through the
// kind's typed XRestore method where it has one (a node's makes its pool),
// inserted as they are where restore is nil.
func snapshotOf[T any](table string, kind SnapshotKind, name string, restore func(*StateRestore, *T) error) snapshotTable {
	return snapshotTable{
		table: table, kind: kind, name: name,
		newObj: func() any { return new(T) },
		restore: func(r *StateRestore, obj any) error {
			v, ok := obj.(*T)
			if !ok {
				return fmt.Errorf("restore %s: got %T", name, obj)
			}
			if restore == nil {
				return r.insert(table, v)
			}
			return restore(r, v)
		},
	}
}

// snapshotTables lists what Persist writes, in order, and is the only
// place a kind is tied to its table and type: a table missing here is
// neither written nor restored. The index entries go first so a reader of
// the stream learns how fresh it is at once.
var snapshotTables = []snapshotTable{
	snapshotOf(TableIndex, SnapshotIndex, "Index", (*StateRestore).IndexRestore),
	snapshotOf(TableNodes, SnapshotNode, "Node", (*StateRestore).NodeRestore),
	snapshotOf(TableJobs, SnapshotJob, "Job", (*StateRestore).JobRestore),
	snapshotOf(TableJobSummary, SnapshotJobSummary, "JobSummary", (*StateRestore).JobSummaryRestore),
	snapshotOf(TableEvals, SnapshotEval, "Eval", (*StateRestore).EvalRestore),
	snapshotOf(TableAllocs, SnapshotAlloc, "Alloc", (*StateRestore).AllocRestore),
	snapshotOf[structs.ACLPolicy](TableACLPolicies, SnapshotACLPolicy, "ACLPolicy", nil),
	snapshotOf[structs.ACLToken](TableACLTokens, SnapshotACLToken, "ACLToken", nil),
	snapshotOf[structs.Namespace](TableNamespaces, SnapshotNamespace, "Namespace", nil),
	snapshotOf(TableJobVersion, SnapshotJobVersion, "JobVersion", (*StateRestore).JobVersionRestore),
	snapshotOf[structs.JobScalingEvents](TableScalingEvent, SnapshotScalingEvents, "ScalingEvents", nil),
	snapshotOf[structs.NodePool](TableNodePools, SnapshotNodePool, "NodePool", nil),
	snapshotOf(TableDeployment, SnapshotDeployment, "Deployment", (*StateRestore).DeploymentRestore),
	snapshotOf[structs.SiteOutage](TableSiteOutages, SnapshotSiteOutage, "SiteOutage", nil),
	snapshotOf[structs.OneTimeToken](TableOneTimeTokens, SnapshotOneTimeToken, "OneTimeToken", nil),
	snapshotOf[schedulerConfigRow](TableSchedulerConfig, SnapshotSchedulerConfig, "SchedulerConfig", nil),
	snapshotOf[structs.VariableEncrypted](TableVariables, SnapshotVariable, "Variable", nil),
	snapshotOf[structs.RootKeyMeta](TableRootKeys, SnapshotRootKeyMeta, "RootKeyMeta", nil),
	snapshotOf[structs.ServiceRegistration](TableServiceRegistrations, SnapshotServiceRegistration, "ServiceRegistration", nil),
	snapshotOf[autopilotConfigRow](TableAutopilotConfig, SnapshotAutopilotConfig, "AutopilotConfig", nil),
	snapshotOf[structs.ServerIdentity](TableServerIdentity, SnapshotServerIdentity, "ServerIdentity", nil),
	snapshotOf[structs.TLSCA](TableTLSCAs, SnapshotTLSCA, "TLSCA", nil),
}

func tableOf(kind SnapshotKind) (snapshotTable, bool) {
	for _, t := range snapshotTables {
		if t.kind == kind {
			return t, true
		}
	}
	return snapshotTable{}, false
}

// NewSnapshotObject returns a pointer to a zero object of kind, for the FSM
// to decode a snapshot record into before passing it to RestoreObject.
func NewSnapshotObject(kind SnapshotKind) (any, error) {
	t, ok := tableOf(kind)
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrUnknownSnapshotKind, uint8(kind))
	}
	return t.newObj(), nil
}

// Persist streams every object of the snapshot to enc, tagged with its
// kind: the raft FSM's snapshot. The objects are the stored ones; enc must
// only read them. It stops at the first error from enc.
func (s *StateSnapshot) Persist(enc func(kind SnapshotKind, obj any) error) error {
	txn := s.db.Txn(false)
	for _, t := range snapshotTables {
		iter, err := txn.Get(t.table, indexID)
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", t.table, err)
		}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if err := enc(t.kind, raw); err != nil {
				return fmt.Errorf("snapshot %s: %w", t.table, err)
			}
		}
	}
	return nil
}

// StateRestore loads a raft snapshot into a store in one write transaction.
// Objects go in as they are: the snapshot already holds their indexes,
// summaries and statuses, and the index table comes from IndexRestore.
// Nothing is visible until Commit. The FSM restores into a fresh store,
// then swaps it in and abandons the old one.
type StateRestore struct {
	txn *memdb.Txn
}

// Restore starts a restore. It holds the store's write lock until Commit or
// Abort.
func (s *StateStore) Restore() (*StateRestore, error) {
	return &StateRestore{txn: s.db.Txn(true)}, nil
}

func (r *StateRestore) insert(table string, obj any) error {
	if err := r.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("restore %s: %w", table, err)
	}
	return nil
}

// NodeRestore restores a node. A snapshot written before node pools were
// stored has nodes in pools it holds no object for: the pool is made here,
// as registering the node would have made it, and replaced by the
// snapshot's own copy when it has one (pools come after nodes).
func (r *StateRestore) NodeRestore(node *structs.Node) error {
	if name := node.NodePool; name != "" {
		raw, err := r.txn.First(TableNodePools, indexID, name)
		if err != nil {
			return fmt.Errorf("restore node pool lookup: %w", err)
		}
		if raw == nil {
			p := &structs.NodePool{Name: name, Meta: map[string]string{}, CreateIndex: node.CreateIndex, ModifyIndex: node.CreateIndex}
			if err := r.insert(TableNodePools, p); err != nil {
				return err
			}
		}
	}
	return r.insert(TableNodes, node)
}

// JobRestore restores a job.
func (r *StateRestore) JobRestore(job *structs.Job) error { return r.insert(TableJobs, job) }

// JobSummaryRestore restores a job summary.
func (r *StateRestore) JobSummaryRestore(s *structs.JobSummary) error {
	return r.insert(TableJobSummary, s)
}

// EvalRestore restores an evaluation.
func (r *StateRestore) EvalRestore(eval *structs.Evaluation) error { return r.insert(TableEvals, eval) }

// AllocRestore restores an allocation.
func (r *StateRestore) AllocRestore(alloc *structs.Allocation) error {
	return r.insert(TableAllocs, alloc)
}

// IndexRestore restores an index table entry.
func (r *StateRestore) IndexRestore(e *IndexEntry) error { return r.insert(TableIndex, e) }

// RestoreObject restores obj, as made by NewSnapshotObject(kind) and
// decoded, into the kind's table.
func (r *StateRestore) RestoreObject(kind SnapshotKind, obj any) error {
	t, ok := tableOf(kind)
	if !ok {
		return fmt.Errorf("%w: %d", ErrUnknownSnapshotKind, uint8(kind))
	}
	return t.restore(r, obj)
}

// Commit makes the restored objects visible.
func (r *StateRestore) Commit() error {
	r.txn.Commit()
	return nil
}

// Abort drops the restore. Safe after Commit.
func (r *StateRestore) Abort() { r.txn.Abort() }
