package state

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// UpsertJob registers a job or a new version of it.
//
// A new job gets CreateIndex, ModifyIndex and JobModifyIndex = index. An
// update keeps CreateIndex and sets ModifyIndex; only when the spec changed
// (anything but the index, status, version and submit-time fields) does it
// set JobModifyIndex, bump Version and take submitTime. Re-submitting an
// identical job therefore leaves the scheduler nothing to update in place.
// A zero submitTime keeps the job's own SubmitTime.
//
// Status is computed from the job's allocations and evaluations, and the
// job summary is created, or gains and loses groups to match the job.
func (s *StateStore) UpsertJob(index uint64, submitTime int64, job *structs.Job) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := upsertJobTxn(txn, index, submitTime, job); err != nil {
		return err
	}
	return txn.commit()
}

func upsertJobTxn(txn *writeTxn, index uint64, submitTime int64, job *structs.Job) error {
	if job == nil || job.ID == "" || job.Namespace == "" {
		return fmt.Errorf("upsert job: job ID and namespace: %w", structs.ErrMissingField)
	}
	existing, err := jobByIDTxn(txn.Txn, nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	job.SetScalingPolicies(existing, index)
	switch {
	case existing == nil:
		job.Stable = false
		job.CreateIndex = index
		job.JobModifyIndex = index
		if submitTime != 0 {
			job.SubmitTime = submitTime
		}
	case jobSpecChanged(existing, job):
		// A new version has proven nothing yet, even when it is a copy
		// of a stable one (a revert).
		job.Stable = false
		job.CreateIndex = existing.CreateIndex
		job.JobModifyIndex = index
		if job.Version <= existing.Version {
			job.Version = existing.Version + 1
		}
		if submitTime != 0 {
			job.SubmitTime = submitTime
		}
	default:
		job.CreateIndex = existing.CreateIndex
		job.JobModifyIndex = existing.JobModifyIndex
		job.Version = existing.Version
		job.SubmitTime = existing.SubmitTime
		job.Stable = existing.Stable
	}
	job.ModifyIndex = index

	status, err := jobStatusTxn(txn.Txn, job, false)
	if err != nil {
		return err
	}
	job.Status = status
	if err := updateSummaryWithJobTxn(txn, index, job); err != nil {
		return err
	}
	if err := upsertJobVersionTxn(txn, job); err != nil {
		return err
	}
	return txn.Insert(TableJobs, job)
}

// jobSpecChanged reports whether b differs from a in anything the user
// wrote, ignoring the fields the servers maintain.
func jobSpecChanged(a, b *structs.Job) bool {
	ac, bc := *a, *b
	for _, j := range []*structs.Job{&ac, &bc} {
		j.Status, j.StatusDescription = "", ""
		j.Stable = false
		j.Version = 0
		j.SubmitTime = 0
		j.CreateIndex, j.ModifyIndex, j.JobModifyIndex = 0, 0, 0
	}
	return !reflect.DeepEqual(&ac, &bc)
}

// DeleteJob removes a job and its summary (a purge). Its allocations and
// evaluations stay until garbage collection.
func (s *StateStore) DeleteJob(index uint64, namespace, jobID string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := deleteJobTxn(txn, namespace, jobID); err != nil {
		return err
	}
	return txn.commit()
}

func deleteJobTxn(txn *writeTxn, namespace, jobID string) error {
	job, err := jobByIDTxn(txn.Txn, nil, namespace, jobID)
	if err != nil {
		return err
	}
	if job == nil {
		return fmt.Errorf("delete job %s/%s: %w", namespace, jobID, structs.ErrUnknownJob)
	}
	if err := txn.Delete(TableJobs, job); err != nil {
		return err
	}
	if err := deleteJobVersionsTxn(txn, namespace, jobID); err != nil {
		return err
	}
	if err := deleteScalingEventsTxn(txn, namespace, jobID); err != nil {
		return err
	}
	if err := deleteDeploymentsTxn(txn, namespace, jobID); err != nil {
		return err
	}
	summary, err := jobSummaryByIDTxn(txn.Txn, nil, namespace, jobID)
	if err != nil {
		return err
	}
	if summary != nil {
		return txn.Delete(TableJobSummary, summary)
	}
	return nil
}

// DeleteDeadJobs removes jobs the garbage collector found dead, with their
// summaries, in one transaction. A job is removed only while it is still
// dead and none of its evaluations or allocations is left (the collector
// deletes those first): a job registered again since the collector looked
// has a new evaluation and stays. Missing jobs are skipped. It returns the
// jobs removed.
func (s *StateStore) DeleteDeadJobs(index uint64, jobs []structs.NamespacedID) ([]structs.NamespacedID, error) {
	txn := s.writeTxn(index)
	defer txn.Abort()
	var deleted []structs.NamespacedID
	for _, id := range jobs {
		job, err := jobByIDTxn(txn.Txn, nil, id.Namespace, id.ID)
		if err != nil {
			return nil, err
		}
		if job == nil || job.Status != structs.JobStatusDead {
			continue
		}
		left, err := jobHasObjectsTxn(txn.Txn, id)
		if err != nil {
			return nil, err
		}
		if left {
			continue
		}
		if err := deleteJobTxn(txn, id.Namespace, id.ID); err != nil {
			return nil, err
		}
		deleted = append(deleted, id)
	}
	return deleted, txn.commit()
}

// jobHasObjectsTxn reports whether any evaluation or allocation of the job
// (of any incarnation) is stored.
func jobHasObjectsTxn(txn *memdb.Txn, id structs.NamespacedID) (bool, error) {
	for _, table := range []string{TableEvals, TableAllocs} {
		raw, err := txn.First(table, indexJob, id.Namespace, id.ID)
		if err != nil {
			return false, fmt.Errorf("%s lookup: %w", table, err)
		}
		if raw != nil {
			return true, nil
		}
	}
	return false, nil
}

// JobByID returns the job, or nil when there is none.
func (s *StateStore) JobByID(ws memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	return jobByIDTxn(s.db.Txn(false), ws, namespace, id)
}

func jobByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, namespace, id string) (*structs.Job, error) {
	watchCh, raw, err := txn.FirstWatch(TableJobs, indexID, namespace, id)
	if err != nil {
		return nil, fmt.Errorf("job lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.Job), nil
}

// JobsByIDPrefix iterates over the jobs of namespace (or AllNamespaces)
// whose ID starts with prefix.
func (s *StateStore) JobsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error) {
	txn := s.db.Txn(false)
	if namespace != AllNamespaces {
		return getWatch(txn, ws, TableJobs, indexID+prefixSuffix, namespace, prefix)
	}
	iter, err := getWatch(txn, ws, TableJobs, indexID)
	if err != nil {
		return nil, err
	}
	return memdb.NewFilterIterator(iter, func(raw any) bool {
		return !strings.HasPrefix(raw.(*structs.Job).ID, prefix)
	}), nil
}

// Jobs iterates over every job of every namespace.
func (s *StateStore) Jobs(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableJobs, indexID)
}

// PeriodicJobs iterates over the jobs the leader launches on their
// schedule (Job.IsPeriodicActive) of every namespace; ws fires when one
// becomes, stops being or, being one, changes (and, while there is none,
// on any job change: memdb then watches the whole index).
func (s *StateStore) PeriodicJobs(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableJobs, indexPeriodic, true)
}
