package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Job summaries and job status are derived data: every write that changes an
// allocation or evaluation keeps them right in the same transaction, so a
// reader never sees an allocation and a summary that disagree.

// JobSummaryByID returns the job's summary, or nil when there is none.
func (s *StateStore) JobSummaryByID(ws memdb.WatchSet, namespace, jobID string) (*structs.JobSummary, error) {
	return jobSummaryByIDTxn(s.db.Txn(false), ws, namespace, jobID)
}

// JobSummaries iterates over every job summary.
func (s *StateStore) JobSummaries(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableJobSummary, indexID)
}

func jobSummaryByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, namespace, jobID string) (*structs.JobSummary, error) {
	watchCh, raw, err := txn.FirstWatch(TableJobSummary, indexID, namespace, jobID)
	if err != nil {
		return nil, fmt.Errorf("job summary lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.JobSummary), nil
}

// updateSummaryWithJobTxn creates the job's summary with one zeroed entry
// per group, or makes an existing summary's groups match the job's: new
// groups start at zero and removed groups are dropped with their counts.
func updateSummaryWithJobTxn(txn *writeTxn, index uint64, job *structs.Job) error {
	existing, err := jobSummaryByIDTxn(txn.Txn, nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	if existing == nil {
		summary := &structs.JobSummary{
			JobID:       job.ID,
			Namespace:   job.Namespace,
			Summary:     make(map[string]structs.TaskGroupSummary, len(job.TaskGroups)),
			Children:    &structs.JobChildrenSummary{},
			CreateIndex: index,
			ModifyIndex: index,
		}
		for _, tg := range job.TaskGroups {
			summary.Summary[tg.Name] = structs.TaskGroupSummary{}
		}
		return txn.Insert(TableJobSummary, summary)
	}

	summary := existing.Copy()
	if summary.Summary == nil {
		summary.Summary = map[string]structs.TaskGroupSummary{}
	}
	changed := false
	for _, tg := range job.TaskGroups {
		if _, ok := summary.Summary[tg.Name]; !ok {
			summary.Summary[tg.Name] = structs.TaskGroupSummary{}
			changed = true
		}
	}
	for name := range summary.Summary {
		if job.LookupTaskGroup(name) == nil {
			delete(summary.Summary, name)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	summary.ModifyIndex = index
	return txn.Insert(TableJobSummary, summary)
}

// statusCount returns the counter of a group summary that allocations with
// the given client status are counted in, or nil for a status that is not
// counted. Server-terminal allocations still count by their client status:
// an allocation told to stop is running until its client says otherwise.
func statusCount(s *structs.TaskGroupSummary, clientStatus string) *int {
	switch clientStatus {
	case structs.AllocClientStatusPending:
		return &s.Starting
	case structs.AllocClientStatusRunning:
		return &s.Running
	case structs.AllocClientStatusComplete:
		return &s.Complete
	case structs.AllocClientStatusFailed:
		return &s.Failed
	case structs.AllocClientStatusLost:
		return &s.Lost
	case structs.AllocClientStatusUnknown:
		return &s.Unknown
	}
	return nil
}

func decrement(n *int) {
	if n != nil && *n > 0 {
		*n--
	}
}

func increment(n *int) {
	if n != nil {
		*n++
	}
}

// updateSummaryWithAllocTxn counts a write of alloc (replacing existing, nil
// for a new allocation) in its job's summary. A new allocation is a
// placement: it takes one from the group's Queued count. A status change
// moves one from the old counter to the new one. Allocations of groups the
// summary no longer has (the job dropped the group) and of jobs without a
// summary (purged) are not counted.
func updateSummaryWithAllocTxn(txn *writeTxn, index uint64, alloc, existing *structs.Allocation) error {
	if existing != nil && existing.ClientStatus == alloc.ClientStatus {
		return nil
	}
	return changeGroupSummaryTxn(txn, index, alloc.Namespace, alloc.JobID, alloc.TaskGroup, func(tg *structs.TaskGroupSummary) {
		if existing == nil {
			decrement(&tg.Queued)
		} else {
			decrement(statusCount(tg, existing.ClientStatus))
		}
		increment(statusCount(tg, alloc.ClientStatus))
	})
}

// uncountDeletedAllocTxn takes a deleted allocation out of its summary when
// it was live. Terminal counts are history, as in upstream Nomad: garbage
// collecting a complete allocation does not make the job's Complete count
// drop. Live counts must always match what exists, so an allocation deleted
// while pending, running or unknown is uncounted.
func uncountDeletedAllocTxn(txn *writeTxn, index uint64, alloc *structs.Allocation) error {
	if alloc.ClientTerminalStatus() {
		return nil
	}
	return changeGroupSummaryTxn(txn, index, alloc.Namespace, alloc.JobID, alloc.TaskGroup, func(tg *structs.TaskGroupSummary) {
		decrement(statusCount(tg, alloc.ClientStatus))
	})
}

// setQueuedTxn records an evaluation's count of allocations it could not
// place, per group, as the summary's Queued.
func setQueuedTxn(txn *writeTxn, index uint64, eval *structs.Evaluation) error {
	for group, queued := range eval.QueuedAllocations {
		err := changeGroupSummaryTxn(txn, index, eval.Namespace, eval.JobID, group, func(tg *structs.TaskGroupSummary) {
			tg.Queued = max(queued, 0)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// changeGroupSummaryTxn applies change to one group of a job's summary and
// writes the summary back if the group's counts changed.
func changeGroupSummaryTxn(txn *writeTxn, index uint64, namespace, jobID, group string, change func(*structs.TaskGroupSummary)) error {
	summary, err := jobSummaryByIDTxn(txn.Txn, nil, namespace, jobID)
	if err != nil || summary == nil {
		return err
	}
	tg, ok := summary.Summary[group]
	if !ok {
		return nil
	}
	before := tg
	change(&tg)
	if tg == before {
		return nil
	}
	summary = summary.Copy()
	summary.Summary[group] = tg
	summary.ModifyIndex = index
	return txn.Insert(TableJobSummary, summary)
}

// jobStatusTxn computes a job's status the way upstream Nomad does:
//
//   - running while any allocation is live (not TerminalStatus; unknown
//     allocations are live);
//   - otherwise pending while any evaluation is not terminal (the scheduler
//     has not placed anything yet, or is blocked on capacity);
//   - a system job with nothing live or pending is running until stopped;
//   - otherwise dead when the job is stopped, or has had allocations or
//     evaluations (they have all finished), or evalDelete says the
//     evaluations were just garbage collected;
//   - otherwise pending: a job nothing has happened to yet.
func jobStatusTxn(txn *memdb.Txn, job *structs.Job, evalDelete bool) (string, error) {
	allocs, err := txn.Get(TableAllocs, indexJob, job.Namespace, job.ID)
	if err != nil {
		return "", fmt.Errorf("allocs lookup: %w", err)
	}
	hasAlloc := false
	for raw := allocs.Next(); raw != nil; raw = allocs.Next() {
		hasAlloc = true
		if !raw.(*structs.Allocation).TerminalStatus() {
			return structs.JobStatusRunning, nil
		}
	}
	evals, err := txn.Get(TableEvals, indexJob, job.Namespace, job.ID)
	if err != nil {
		return "", fmt.Errorf("evals lookup: %w", err)
	}
	hasEval := false
	for raw := evals.Next(); raw != nil; raw = evals.Next() {
		hasEval = true
		if !raw.(*structs.Evaluation).TerminalStatus() {
			return structs.JobStatusPending, nil
		}
	}
	// Templates are running until stopped, as upstream: their children
	// carry the work.
	if job.IsParent() {
		if job.Stop {
			return structs.JobStatusDead, nil
		}
		return structs.JobStatusRunning, nil
	}
	if job.Type == structs.JobTypeSystem && !job.Stop {
		return structs.JobStatusRunning, nil
	}
	if job.Stop || evalDelete || hasEval || hasAlloc {
		return structs.JobStatusDead, nil
	}
	return structs.JobStatusPending, nil
}

// setJobStatusesTxn recomputes the status of every job in jobs and writes
// those that changed. A status change is a change of the job object, so it
// sets ModifyIndex (not JobModifyIndex: the spec did not change).
func setJobStatusesTxn(txn *writeTxn, index uint64, jobs namespacedIDs, evalDelete bool) error {
	for id := range jobs {
		job, err := jobByIDTxn(txn.Txn, nil, id.Namespace, id.ID)
		if err != nil {
			return err
		}
		if job == nil {
			continue
		}
		status, err := jobStatusTxn(txn.Txn, job, evalDelete)
		if err != nil {
			return err
		}
		if status == job.Status {
			continue
		}
		updated := job.Copy()
		updated.Status = status
		updated.ModifyIndex = index
		if err := txn.Insert(TableJobs, updated); err != nil {
			return err
		}
	}
	return nil
}
