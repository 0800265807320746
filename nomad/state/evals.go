package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// UpsertEvals writes evaluations: new ones get CreateIndex, every one gets
// ModifyIndex = index. Times are the caller's (stamped before raft).
//
// An evaluation carrying QueuedAllocations sets its job summary's Queued
// count per group: it is the scheduler's word on what it could not place.
// An evaluation that completes with no placement failures cancels the job's
// blocked evaluations, which waited for capacity the job no longer needs.
// Job statuses are recomputed.
func (s *StateStore) UpsertEvals(index uint64, evals []*structs.Evaluation) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := upsertEvalsTxn(txn, index, evals); err != nil {
		return err
	}
	return txn.commit()
}

func upsertEvalsTxn(txn *writeTxn, index uint64, evals []*structs.Evaluation) error {
	jobs := namespacedIDs{}
	for _, eval := range evals {
		if err := upsertEvalTxn(txn, index, eval); err != nil {
			return err
		}
		jobs.add(structs.NamespacedID{ID: eval.JobID, Namespace: eval.Namespace})
	}
	return setJobStatusesTxn(txn, index, jobs, false)
}

func upsertEvalTxn(txn *writeTxn, index uint64, eval *structs.Evaluation) error {
	if eval == nil || eval.ID == "" {
		return fmt.Errorf("upsert eval: eval ID: %w", structs.ErrMissingField)
	}
	existing, err := evalByIDTxn(txn.Txn, nil, eval.ID)
	if err != nil {
		return err
	}
	if existing != nil {
		eval.CreateIndex = existing.CreateIndex
	} else {
		eval.CreateIndex = index
	}
	eval.ModifyIndex = index
	if err := setQueuedTxn(txn, index, eval); err != nil {
		return err
	}
	if eval.Status == structs.EvalStatusComplete && len(eval.FailedTGAllocs) == 0 {
		if err := cancelBlockedEvalsTxn(txn, index, eval); err != nil {
			return err
		}
	}
	if eval.Status == structs.EvalStatusCancelled && eval.TriggeredBy == structs.EvalTriggerMaxDisconnectTimeout {
		if err := clearFollowupEvalTxn(txn, index, eval.ID); err != nil {
			return err
		}
	}
	return txn.Insert(TableEvals, eval)
}

// clearFollowupEvalTxn unlinks the allocations whose FollowupEvalID is a
// max-disconnect-timeout evaluation being canceled, in the transaction that
// cancels it (as upstream Nomad does since 1.10.2): an allocation must not
// name a follow-up that will never run, or a reader (alloc status, a tool
// waiting on the evaluation) is told to expect a decision that never comes.
// The client has nothing to pull, so AllocModifyIndex stays.
func clearFollowupEvalTxn(txn *writeTxn, index uint64, evalID string) error {
	allocs, err := collectAllocs(txn.Txn, nil, indexFollowupEval, evalID)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		c := a.Copy()
		c.FollowupEvalID = ""
		c.ModifyIndex = index
		if err := txn.Insert(TableAllocs, c); err != nil {
			return err
		}
	}
	return nil
}

// cancelBlockedEvalsTxn cancels the blocked evaluations of done's job. The
// cancellation takes done's ModifyTime: the store never reads the clock.
func cancelBlockedEvalsTxn(txn *writeTxn, index uint64, done *structs.Evaluation) error {
	if done.JobID == "" {
		return nil
	}
	evals, err := evalsByJobTxn(txn.Txn, nil, done.Namespace, done.JobID)
	if err != nil {
		return err
	}
	for _, e := range evals {
		if e.Status != structs.EvalStatusBlocked || e.ID == done.ID {
			continue
		}
		c := e.Copy()
		c.Status = structs.EvalStatusCancelled
		c.StatusDescription = fmt.Sprintf("evaluation %q completed without placement failures", done.ID)
		c.ModifyIndex = index
		c.ModifyTime = done.ModifyTime
		if err := txn.Insert(TableEvals, c); err != nil {
			return err
		}
	}
	return nil
}

// DeleteEval removes evaluations and allocations; the garbage collector
// calls it. IDs that no longer exist are skipped, so a repeated collection
// is harmless. Jobs whose evaluations went away have their status
// recomputed, and become dead rather than pending when nothing is left.
func (s *StateStore) DeleteEval(index uint64, evalIDs, allocIDs []string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := deleteEvalsTxn(txn, index, evalIDs, allocIDs); err != nil {
		return err
	}
	return txn.commit()
}

// DeleteEvalsByUser removes evaluations an operator named (DELETE
// /v1/evaluations), their allocations staying. It refuses with
// structs.ErrEvalBrokerNotPaused unless the stored scheduler configuration
// pauses the eval broker: checked in the transaction, so a resume committed
// before it wins on every server alike.
func (s *StateStore) DeleteEvalsByUser(index uint64, evalIDs []string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	paused, err := evalBrokerPausedTxn(txn.Txn)
	if err != nil {
		return err
	}
	if !paused {
		return structs.ErrEvalBrokerNotPaused
	}
	if err := deleteEvalsTxn(txn, index, evalIDs, nil); err != nil {
		return err
	}
	return txn.commit()
}

func deleteEvalsTxn(txn *writeTxn, index uint64, evalIDs, allocIDs []string) error {
	jobs := namespacedIDs{}
	for _, id := range evalIDs {
		eval, err := evalByIDTxn(txn.Txn, nil, id)
		if err != nil {
			return err
		}
		if eval == nil {
			continue
		}
		if err := txn.Delete(TableEvals, eval); err != nil {
			return err
		}
		jobs.add(structs.NamespacedID{ID: eval.JobID, Namespace: eval.Namespace})
	}
	for _, id := range allocIDs {
		alloc, err := allocByIDTxn(txn.Txn, nil, id)
		if err != nil {
			return err
		}
		if alloc == nil {
			continue
		}
		if err := uncountDeletedAllocTxn(txn, index, alloc); err != nil {
			return err
		}
		if err := deleteServicesByAllocTxn(txn, alloc.ID); err != nil {
			return err
		}
		if err := txn.Delete(TableAllocs, alloc); err != nil {
			return err
		}
		jobs.add(alloc.JobNamespacedID())
	}
	return setJobStatusesTxn(txn, index, jobs, true)
}

// EvalByID returns the evaluation, or nil when there is none.
func (s *StateStore) EvalByID(ws memdb.WatchSet, id string) (*structs.Evaluation, error) {
	return evalByIDTxn(s.db.Txn(false), ws, id)
}

func evalByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.Evaluation, error) {
	watchCh, raw, err := txn.FirstWatch(TableEvals, indexID, id)
	if err != nil {
		return nil, fmt.Errorf("eval lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.Evaluation), nil
}

// EvalsByIDPrefix iterates over the evaluations of namespace (or
// AllNamespaces) whose ID starts with prefix.
func (s *StateStore) EvalsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error) {
	iter, err := getWatch(s.db.Txn(false), ws, TableEvals, indexID+prefixSuffix, prefix)
	if err != nil {
		return nil, err
	}
	return memdb.NewFilterIterator(iter, func(raw any) bool {
		return !namespaceMatches(namespace, raw.(*structs.Evaluation).Namespace)
	}), nil
}

// Evals iterates over every evaluation.
func (s *StateStore) Evals(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableEvals, indexID)
}

// EvalsByJob returns a job's evaluations.
func (s *StateStore) EvalsByJob(ws memdb.WatchSet, namespace, jobID string) ([]*structs.Evaluation, error) {
	return evalsByJobTxn(s.db.Txn(false), ws, namespace, jobID)
}

func evalsByJobTxn(txn *memdb.Txn, ws memdb.WatchSet, namespace, jobID string) ([]*structs.Evaluation, error) {
	iter, err := getWatch(txn, ws, TableEvals, indexJob, namespace, jobID)
	if err != nil {
		return nil, err
	}
	var out []*structs.Evaluation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Evaluation))
	}
	return out, nil
}
