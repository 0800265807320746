package state

import (
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableJobVersion holds past versions of every job, keyed by namespace,
// job ID and version, so `job history` can show them and `job revert` can
// register one again.
const TableJobVersion = "job_version"

func jobVersionTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableJobVersion,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: "ID"},
				&memdb.UintFieldIndex{Field: "Version"},
			}}},
		},
	}
}

// upsertJobVersionTxn records job as its version, replacing what that
// version held (a resubmission of the same spec updates the indexes), and
// trims the history to structs.JobTrackedVersions.
func upsertJobVersionTxn(txn *writeTxn, job *structs.Job) error {
	if err := txn.Insert(TableJobVersion, job); err != nil {
		return err
	}
	all, err := jobVersionsTxn(txn.Txn, nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	if len(all) <= structs.JobTrackedVersions {
		return nil
	}
	// The newest stable version is what a failed update reverts to, so it
	// survives the trim even when it is the oldest one kept.
	keep := structs.JobTrackedVersions
	drop := all[keep]
	if drop.Stable && !anyStable(all[:keep]) {
		drop = all[keep-1]
	}
	if err := txn.Delete(TableJobVersion, drop); err != nil {
		return err
	}
	for _, old := range all[keep+1:] {
		if err := txn.Delete(TableJobVersion, old); err != nil {
			return err
		}
	}
	return nil
}

func anyStable(jobs []*structs.Job) bool {
	for _, j := range jobs {
		if j.Stable {
			return true
		}
	}
	return false
}

// deleteJobVersionsTxn removes every stored version of a job (a purge).
func deleteJobVersionsTxn(txn *writeTxn, namespace, jobID string) error {
	all, err := jobVersionsTxn(txn.Txn, nil, namespace, jobID)
	if err != nil {
		return err
	}
	for _, j := range all {
		if err := txn.Delete(TableJobVersion, j); err != nil {
			return err
		}
	}
	return nil
}

// JobVersionsByID returns the stored versions of a job, newest first; none
// when the job is unknown.
func (s *StateStore) JobVersionsByID(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Job, error) {
	return jobVersionsTxn(s.db.Txn(false), ws, namespace, jobID)
}

func jobVersionsTxn(txn *memdb.Txn, ws memdb.WatchSet, namespace, jobID string) ([]*structs.Job, error) {
	iter, err := txn.Get(TableJobVersion, indexID+prefixSuffix, namespace, jobID)
	if err != nil {
		return nil, fmt.Errorf("job version lookup: %w", err)
	}
	ws.Add(iter.WatchCh())
	var out []*structs.Job
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		// The prefix scan also finds jobs whose ID merely starts with jobID.
		if j := raw.(*structs.Job); j.ID == jobID {
			out = append(out, j)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Version > out[b].Version })
	return out, nil
}

// JobByIDAndVersion returns one stored version of a job, or nil.
func (s *StateStore) JobByIDAndVersion(ws memdb.WatchSet, namespace, jobID string, version uint64) (*structs.Job, error) {
	watchCh, raw, err := s.db.Txn(false).FirstWatch(TableJobVersion, indexID, namespace, jobID, version)
	if err != nil {
		return nil, fmt.Errorf("job version lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.Job), nil
}

// UpdateJobStability marks one version of a job stable or not, and the job
// itself when that version is the current one. It changes neither the
// version nor JobModifyIndex: stability is a verdict on a spec, not a new
// spec.
func (s *StateStore) UpdateJobStability(index uint64, namespace, jobID string, version uint64, stable bool) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := updateJobStabilityTxn(txn, index, namespace, jobID, version, stable); err != nil {
		return err
	}
	return txn.commit()
}

func updateJobStabilityTxn(txn *writeTxn, index uint64, namespace, jobID string, version uint64, stable bool) error {
	raw, err := txn.First(TableJobVersion, indexID, namespace, jobID, version)
	if err != nil {
		return fmt.Errorf("job version lookup: %w", err)
	}
	if raw == nil {
		return fmt.Errorf("job %s/%s version %d: %w", namespace, jobID, version, structs.ErrUnknownJob)
	}
	v := raw.(*structs.Job).Copy()
	v.Stable = stable
	v.ModifyIndex = index
	if err := txn.Insert(TableJobVersion, v); err != nil {
		return err
	}
	cur, err := jobByIDTxn(txn.Txn, nil, namespace, jobID)
	if err != nil {
		return err
	}
	if cur != nil && cur.Version == version {
		c := cur.Copy()
		c.Stable = stable
		c.ModifyIndex = index
		if err := txn.Insert(TableJobs, c); err != nil {
			return err
		}
	}
	return nil
}

// JobVersionRestore restores a stored job version.
func (r *StateRestore) JobVersionRestore(job *structs.Job) error {
	return r.insert(TableJobVersion, job)
}
