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
)

func (k SnapshotKind) String() string {
	names := [...]string{"Index", "Node", "Job", "JobSummary", "Eval", "Alloc", "ACLPolicy", "ACLToken", "Namespace", "JobVersion", "ScalingEvents", "NodePool", "Deployment", "SiteOutage"}
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("SnapshotKind(%d)", uint8(k))
}

// ErrUnknownSnapshotKind is returned for a snapshot object of a kind this
// version does not know, typically a snapshot written by a newer server.
var ErrUnknownSnapshotKind = errors.New("unknown snapshot kind")

// NewSnapshotObject returns a pointer to a zero object of kind, for the FSM
// to decode a snapshot record into before passing it to RestoreObject.
func NewSnapshotObject(kind SnapshotKind) (any, error) {
	switch kind {
	case SnapshotIndex:
		return new(IndexEntry), nil
	case SnapshotNode:
		return new(structs.Node), nil
	case SnapshotJob:
		return new(structs.Job), nil
	case SnapshotJobSummary:
		return new(structs.JobSummary), nil
	case SnapshotEval:
		return new(structs.Evaluation), nil
	case SnapshotAlloc:
		return new(structs.Allocation), nil
	case SnapshotACLPolicy:
		return new(structs.ACLPolicy), nil
	case SnapshotACLToken:
		return new(structs.ACLToken), nil
	case SnapshotNamespace:
		return new(structs.Namespace), nil
	case SnapshotJobVersion:
		return new(structs.Job), nil
	case SnapshotScalingEvents:
		return new(structs.JobScalingEvents), nil
	case SnapshotNodePool:
		return new(structs.NodePool), nil
	case SnapshotDeployment:
		return new(structs.Deployment), nil
	case SnapshotSiteOutage:
		return new(structs.SiteOutage), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownSnapshotKind, uint8(kind))
}

// snapshotTables lists what Persist writes, in order. The index entries go
// first so a reader of the stream learns how fresh it is at once.
var snapshotTables = []struct {
	table string
	kind  SnapshotKind
}{
	{TableIndex, SnapshotIndex},
	{TableNodes, SnapshotNode},
	{TableJobs, SnapshotJob},
	{TableJobSummary, SnapshotJobSummary},
	{TableEvals, SnapshotEval},
	{TableAllocs, SnapshotAlloc},
	{TableACLPolicies, SnapshotACLPolicy},
	{TableACLTokens, SnapshotACLToken},
	{TableNamespaces, SnapshotNamespace},
	{TableJobVersion, SnapshotJobVersion},
	{TableScalingEvent, SnapshotScalingEvents},
	{TableNodePools, SnapshotNodePool},
	{TableDeployment, SnapshotDeployment},
	{TableSiteOutages, SnapshotSiteOutage},
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
// decoded, through the matching XRestore method.
func (r *StateRestore) RestoreObject(kind SnapshotKind, obj any) error {
	var err error
	ok := true
	switch kind {
	case SnapshotIndex:
		var v *IndexEntry
		if v, ok = obj.(*IndexEntry); ok {
			err = r.IndexRestore(v)
		}
	case SnapshotNode:
		var v *structs.Node
		if v, ok = obj.(*structs.Node); ok {
			err = r.NodeRestore(v)
		}
	case SnapshotJob:
		var v *structs.Job
		if v, ok = obj.(*structs.Job); ok {
			err = r.JobRestore(v)
		}
	case SnapshotJobSummary:
		var v *structs.JobSummary
		if v, ok = obj.(*structs.JobSummary); ok {
			err = r.JobSummaryRestore(v)
		}
	case SnapshotEval:
		var v *structs.Evaluation
		if v, ok = obj.(*structs.Evaluation); ok {
			err = r.EvalRestore(v)
		}
	case SnapshotAlloc:
		var v *structs.Allocation
		if v, ok = obj.(*structs.Allocation); ok {
			err = r.AllocRestore(v)
		}
	case SnapshotACLPolicy:
		var v *structs.ACLPolicy
		if v, ok = obj.(*structs.ACLPolicy); ok {
			err = r.insert(TableACLPolicies, v)
		}
	case SnapshotACLToken:
		var v *structs.ACLToken
		if v, ok = obj.(*structs.ACLToken); ok {
			err = r.insert(TableACLTokens, v)
		}
	case SnapshotNamespace:
		var v *structs.Namespace
		if v, ok = obj.(*structs.Namespace); ok {
			err = r.insert(TableNamespaces, v)
		}
	case SnapshotJobVersion:
		var v *structs.Job
		if v, ok = obj.(*structs.Job); ok {
			err = r.JobVersionRestore(v)
		}
	case SnapshotScalingEvents:
		var v *structs.JobScalingEvents
		if v, ok = obj.(*structs.JobScalingEvents); ok {
			err = r.insert(TableScalingEvent, v)
		}
	case SnapshotNodePool:
		var v *structs.NodePool
		if v, ok = obj.(*structs.NodePool); ok {
			err = r.insert(TableNodePools, v)
		}
	case SnapshotDeployment:
		var v *structs.Deployment
		if v, ok = obj.(*structs.Deployment); ok {
			err = r.DeploymentRestore(v)
		}
	case SnapshotSiteOutage:
		var v *structs.SiteOutage
		if v, ok = obj.(*structs.SiteOutage); ok {
			err = r.insert(TableSiteOutages, v)
		}
	default:
		return fmt.Errorf("%w: %d", ErrUnknownSnapshotKind, uint8(kind))
	}
	if !ok {
		return fmt.Errorf("restore %s: got %T", kind, obj)
	}
	return err
}

// Commit makes the restored objects visible.
func (r *StateRestore) Commit() error {
	r.txn.Commit()
	return nil
}

// Abort drops the restore. Safe after Commit.
func (r *StateRestore) Abort() { r.txn.Abort() }
