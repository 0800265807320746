package state

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Who owns an allocation's client status. The client is the authority on
// pending, running, complete and failed; the scheduler writes lost and
// unknown on the client's behalf when it cannot hear from it. A server-side
// write carries the scheduler's possibly stale copy of the allocation, so it
// may only change the client status to lost or unknown, and only from a
// status that is not terminal; anything else it carries is ignored in
// favour of what the client last reported.
//
// A client's report is the truth about its tasks, with one limit: it never
// brings an allocation the servers are done with back to life. An
// allocation marked lost, or unknown and told to stop (alloc stop, job
// stop while its node was away), takes only the client's final word,
// complete or failed, as upstream Nomad records it: the returning client
// reports "running" for the moment it takes to stop the tasks, and that
// moment must not resurrect an allocation whose replacement is already
// placed. The job summary moves with the recorded status, so a lost
// allocation whose client later says complete is counted complete.
// Complete and failed are final but for each other.

// clientStatusMayChange reports whether a client's report of next is
// recorded over the stored allocation existing.
func clientStatusMayChange(existing *structs.Allocation, next string) bool {
	current := existing.ClientStatus
	if current == structs.AllocClientStatusLost ||
		(current == structs.AllocClientStatusUnknown && existing.ServerTerminalStatus()) {
		return next == structs.AllocClientStatusComplete || next == structs.AllocClientStatusFailed
	}
	return !structs.ClientTerminal(current) || structs.ClientTerminal(next)
}

// serverStatusMayChange reports whether a server-side write marking an
// allocation next (lost or unknown) is recorded over current: never over a
// terminal status, which the client (or an earlier verdict) already gave.
func serverStatusMayChange(current, next string) bool {
	return !structs.ClientTerminal(current) || current == next
}

func schedulerOwnedClientStatus(status string) bool {
	return status == structs.AllocClientStatusLost || status == structs.AllocClientStatusUnknown
}

// serverClientStatus returns the client status and description a
// server-side write of incoming leaves on the stored allocation existing.
func serverClientStatus(existing, incoming *structs.Allocation) (string, string) {
	if schedulerOwnedClientStatus(incoming.ClientStatus) && serverStatusMayChange(existing.ClientStatus, incoming.ClientStatus) {
		return incoming.ClientStatus, incoming.ClientDescription
	}
	return existing.ClientStatus, existing.ClientDescription
}

// serverClientStatusTxn is serverClientStatus, except that marking an
// allocation unknown is refused once its node is no longer disconnected:
// the write comes from a plan whose snapshot predates the node's return,
// and the client's report since is the truth. Written, it would undo the
// report; the client, seeing unknown again, would report again and its
// node stay initializing for another round (what a reconnect storm, where
// plans are computed while a thousand nodes report, made routine).
func serverClientStatusTxn(txn *writeTxn, existing, incoming *structs.Allocation) (string, string, error) {
	status, desc := serverClientStatus(existing, incoming)
	if status != structs.AllocClientStatusUnknown || existing.ClientStatus == structs.AllocClientStatusUnknown {
		return status, desc, nil
	}
	node, err := nodeByIDTxn(txn.Txn, nil, existing.NodeID)
	if err != nil {
		return "", "", err
	}
	if node != nil && node.Status != structs.NodeStatusDisconnected {
		return existing.ClientStatus, existing.ClientDescription, nil
	}
	return status, desc, nil
}

// UpsertAllocs writes allocations from the servers: placements and
// in-place updates. It sets CreateIndex on new allocations and ModifyIndex
// and AllocModifyIndex on all (the client pulls what AllocModifyIndex says
// changed). On an existing allocation it keeps CreateIndex, CreateTime, the
// client's TaskStates, the client status (unless the write marks it lost, or
// unknown while its node is disconnected), NextAllocation when the write has none, and the job when the
// write has none. A new allocation with a PreviousAllocation becomes that
// allocation's NextAllocation. Histories are trimmed to their bounds
// (Allocation.TrimHistory). Summaries and job statuses follow.
func (s *StateStore) UpsertAllocs(index uint64, allocs []*structs.Allocation) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	jobs := namespacedIDs{}
	for _, alloc := range allocs {
		if err := upsertAllocTxn(txn, index, alloc, 0, jobs); err != nil {
			return err
		}
	}
	if err := setJobStatusesTxn(txn, index, jobs, false); err != nil {
		return err
	}
	return txn.commit()
}

// upsertAllocTxn writes one server-side allocation. A non-zero updatedAt is
// the server time of the write: CreateTime of a new allocation and
// ModifyTime of every one.
func upsertAllocTxn(txn *writeTxn, index uint64, alloc *structs.Allocation, updatedAt int64, jobs namespacedIDs) error {
	if alloc == nil || alloc.ID == "" {
		return fmt.Errorf("upsert alloc: alloc ID: %w", structs.ErrMissingField)
	}
	existing, err := allocByIDTxn(txn.Txn, nil, alloc.ID)
	if err != nil {
		return err
	}
	if existing == nil {
		if alloc.Job == nil {
			return fmt.Errorf("upsert alloc %q: job: %w", alloc.ID, structs.ErrMissingField)
		}
		alloc.CreateIndex = index
		if updatedAt != 0 {
			alloc.CreateTime = updatedAt
		}
	} else {
		alloc.CreateIndex = existing.CreateIndex
		alloc.CreateTime = existing.CreateTime
		alloc.TaskStates = existing.TaskStates
		status, desc, err := serverClientStatusTxn(txn, existing, alloc)
		if err != nil {
			return err
		}
		alloc.ClientStatus, alloc.ClientDescription = status, desc
		if alloc.Job == nil {
			alloc.Job = existing.Job
		}
		if alloc.NextAllocation == "" {
			alloc.NextAllocation = existing.NextAllocation
		}
		if alloc.FollowupEvalID, err = followupEvalTxn(txn, existing, alloc.FollowupEvalID); err != nil {
			return err
		}
		keepStop(existing, alloc)
		// Desired transitions (alloc stop, a drain's migrate) are written
		// by their own requests, never by a plan: a plan built before one
		// would erase it, and the allocation would neither move nor stop.
		alloc.DesiredTransition = existing.DesiredTransition
		// Health is the client's report: the scheduler's copy may predate
		// it, and an unknown marking must not erase it. Only joining a new
		// deployment (an in-place update) starts the judgement afresh.
		if alloc.DeploymentID == "" {
			alloc.DeploymentID = existing.DeploymentID
		}
		if alloc.DeploymentID == existing.DeploymentID {
			alloc.DeploymentStatus = existing.DeploymentStatus.Copy()
		}
	}
	alloc.ModifyIndex = index
	alloc.AllocModifyIndex = index
	if updatedAt != 0 {
		alloc.ModifyTime = updatedAt
	}
	alloc.TrimHistory()
	if err := storeAllocTxn(txn, index, alloc, existing); err != nil {
		return err
	}
	if existing == nil && alloc.PreviousAllocation != "" {
		if err := linkPreviousAllocTxn(txn, index, alloc); err != nil {
			return err
		}
	}
	if existing == nil || existing.DeploymentID != alloc.DeploymentID {
		if err := countPlacementTxn(txn, index, alloc); err != nil {
			return err
		}
	}
	jobs.add(alloc.JobNamespacedID())
	return nil
}

// followupEvalTxn returns the FollowupEvalID a server write of incoming
// leaves on existing: incoming's, unless it names a max-disconnect-timeout
// evaluation already canceled. A plan built from a snapshot taken before its
// client's report canceled that evaluation (and unlinked it, see
// clearFollowupEvalTxn) carries the old link; written, the allocation would
// name a follow-up that never runs.
func followupEvalTxn(txn *writeTxn, existing *structs.Allocation, incoming string) (string, error) {
	if incoming == "" || incoming == existing.FollowupEvalID {
		return incoming, nil
	}
	ev, err := evalByIDTxn(txn.Txn, nil, incoming)
	if err != nil {
		return "", err
	}
	if ev != nil && ev.Status == structs.EvalStatusCancelled && ev.TriggeredBy == structs.EvalTriggerMaxDisconnectTimeout {
		return existing.FollowupEvalID, nil
	}
	return incoming, nil
}

// keepStop makes a stop final. A plan built from a snapshot taken before
// an operator's `alloc stop` or a job stop (the scheduler marking the
// allocation unknown on a node that just disconnected, or resuming it when
// the node returns) carries the desired status of that snapshot: written
// as it is, it would undo the stop, and the task would run on once its
// node is back. No decision ever takes a stopped allocation back to run:
// a stopped one is replaced, never revived.
func keepStop(existing, update *structs.Allocation) {
	if existing.DesiredStatus != structs.AllocDesiredStatusRun && update.DesiredStatus == structs.AllocDesiredStatusRun {
		update.DesiredStatus = existing.DesiredStatus
		update.DesiredDescription = existing.DesiredDescription
	}
}

// linkPreviousAllocTxn points the allocation that next replaces at next,
// so a replacement chain can be walked forward (the reconnect logic compares
// an original with every live allocation in its chain). The client has
// nothing to do about it, so AllocModifyIndex stays.
func linkPreviousAllocTxn(txn *writeTxn, index uint64, next *structs.Allocation) error {
	prev, err := allocByIDTxn(txn.Txn, nil, next.PreviousAllocation)
	if err != nil || prev == nil || prev.NextAllocation == next.ID {
		return err
	}
	updated := prev.Copy()
	updated.NextAllocation = next.ID
	updated.ModifyIndex = index
	return txn.Insert(TableAllocs, updated)
}

// UpdateAllocsFromClient merges what a client reports about its allocations
// (Node.UpdateAlloc) into the stored ones: ClientStatus and
// ClientDescription (subject to clientStatusMayChange), TaskStates
// when given, AllocStates appended, ModifyTime when given; histories are
// trimmed to their bounds (Allocation.TrimHistory). ModifyIndex is
// set but AllocModifyIndex is not: nothing changed that the client must
// pull. Unknown IDs are skipped: the allocation may have been garbage
// collected while the update was in flight. So are updates older than
// what is stored (staleClientUpdate).
func (s *StateStore) UpdateAllocsFromClient(index uint64, allocs []*structs.Allocation) error {
	return s.UpdateAllocsFromClientWithEvals(index, &structs.AllocUpdateRequest{Alloc: allocs})
}

// UpdateAllocsFromClientWithEvals applies an AllocClientUpdate entry in one
// transaction: the clients' reports (as UpdateAllocsFromClient) and the
// evaluations they call for (reconnect, retries of failed allocations,
// canceled max-disconnect-timeout evaluations), as UpsertEvals. A reader
// woken by a reconnected allocation finds its reconnect evaluation.
func (s *StateStore) UpdateAllocsFromClientWithEvals(index uint64, req *structs.AllocUpdateRequest) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	jobs := namespacedIDs{}
	for _, update := range req.Alloc {
		if err := updateAllocFromClientTxn(txn, index, update, jobs); err != nil {
			return err
		}
	}
	if err := setJobStatusesTxn(txn, index, jobs, false); err != nil {
		return err
	}
	if err := upsertEvalsTxn(txn, index, req.Evals); err != nil {
		return err
	}
	return txn.commit()
}

func updateAllocFromClientTxn(txn *writeTxn, index uint64, update *structs.Allocation, jobs namespacedIDs) error {
	if update == nil {
		return nil
	}
	existing, err := allocByIDTxn(txn.Txn, nil, update.ID)
	if err != nil || existing == nil {
		return err
	}
	if staleClientUpdate(existing, update) {
		return nil
	}
	alloc := existing.Copy()
	if update.ClientStatus != "" && clientStatusMayChange(existing, update.ClientStatus) {
		alloc.ClientStatus = update.ClientStatus
		alloc.ClientDescription = update.ClientDescription
	}
	if update.TaskStates != nil {
		alloc.TaskStates = update.TaskStates
	}
	// The client reports health once; a later report cannot change a
	// verdict the deployment already counted.
	if update.DeploymentStatus.HasHealth() && !existing.DeploymentStatus.HasHealth() && existing.DeploymentID != "" {
		ds := update.DeploymentStatus.Copy()
		ds.Canary = existing.DeploymentStatus.IsCanary()
		ds.ModifyIndex = index
		alloc.DeploymentStatus = ds
		if err := countDeploymentHealthTxn(txn, index, existing, alloc); err != nil {
			return err
		}
	}
	alloc.AllocStates = append(alloc.AllocStates, update.AllocStates...)
	alloc.TrimHistory()
	alloc.ModifyIndex = index
	if update.ModifyTime != 0 {
		alloc.ModifyTime = update.ModifyTime
	}
	if err := storeAllocTxn(txn, index, alloc, existing); err != nil {
		return err
	}
	jobs.add(alloc.JobNamespacedID())
	return nil
}

// staleClientUpdate reports whether a client's update describes an older
// moment of the allocation than the one stored, so that applying it would
// turn the allocation back: a call the client gave up on (a timeout, a
// failover) that reached the leader after its retry, or a forwarded call
// overtaken by a direct one. A task's events only ever grow on its
// client, so an update is older when, for some task, its newest event is
// in the stored history with newer events after it. Event identity (type
// and time), not time order, decides: a client clock set back still
// produces new events that are nowhere in the stored history. An update
// without task events, or whose newest event was trimmed from the stored
// history, is applied as before.
func staleClientUpdate(existing, update *structs.Allocation) bool {
	for name, ts := range update.TaskStates {
		stored := existing.TaskStates[name]
		if ts == nil || stored == nil || len(ts.Events) == 0 || len(stored.Events) < 2 {
			continue
		}
		newest := ts.Events[len(ts.Events)-1]
		if newest == nil {
			continue
		}
		for _, e := range stored.Events[:len(stored.Events)-1] {
			if e != nil && e.Type == newest.Type && e.Time == newest.Time {
				return true
			}
		}
	}
	return false
}

// UpsertPlanResults commits the accepted part of a plan in one transaction:
//
//   - AllocsStopped: partial allocations (no job) naming a stored one; the
//     stored allocation gets their desired status (stop unless evict) and
//     description, their FollowupEvalID, ReconnectDecision and
//     PreemptedByAllocation when set, and their client status when it is
//     lost or unknown. Everything else of
//     the stored allocation stays. Stops of allocations that no longer
//     exist are skipped.
//   - AllocsUpdated: placements and in-place updates, written as by
//     UpsertAllocs, with the job taken from req.Job when nil and EvalID set
//     to req.EvalID.
//   - The plan's evaluation gets ModifyIndex = index; req.Evals are written
//     as by UpsertEvals.
//
// CreateTime of placements and ModifyTime of every written allocation are
// req.UpdatedAt, stamped by the leader before raft.
func (s *StateStore) UpsertPlanResults(index uint64, req *structs.ApplyPlanResultsRequest) error {
	if req == nil {
		return fmt.Errorf("upsert plan results: request: %w", structs.ErrMissingField)
	}
	txn := s.writeTxn(index)
	defer txn.Abort()
	jobs := namespacedIDs{}
	// The deployment goes first so the placements below count in it.
	if err := upsertPlanDeploymentsTxn(txn, index, req); err != nil {
		return err
	}
	for _, stop := range req.AllocsStopped {
		if err := stopAllocTxn(txn, index, stop, req.UpdatedAt, jobs); err != nil {
			return err
		}
	}
	for _, alloc := range req.AllocsUpdated {
		if alloc == nil {
			continue
		}
		if alloc.Job == nil {
			alloc.Job = req.Job
		}
		if req.EvalID != "" {
			alloc.EvalID = req.EvalID
		}
		if err := upsertAllocTxn(txn, index, alloc, req.UpdatedAt, jobs); err != nil {
			return err
		}
	}
	if req.EvalID != "" {
		if err := touchEvalTxn(txn, index, req.EvalID); err != nil {
			return err
		}
	}
	if err := upsertEvalsTxn(txn, index, req.Evals); err != nil {
		return err
	}
	if err := setJobStatusesTxn(txn, index, jobs, false); err != nil {
		return err
	}
	return txn.commit()
}

func stopAllocTxn(txn *writeTxn, index uint64, stop *structs.Allocation, updatedAt int64, jobs namespacedIDs) error {
	if stop == nil {
		return nil
	}
	existing, err := allocByIDTxn(txn.Txn, nil, stop.ID)
	if err != nil || existing == nil {
		return err
	}
	alloc := existing.Copy()
	alloc.DesiredStatus = structs.AllocDesiredStatusStop
	if stop.DesiredStatus == structs.AllocDesiredStatusEvict {
		alloc.DesiredStatus = structs.AllocDesiredStatusEvict
	}
	alloc.DesiredDescription = stop.DesiredDescription
	status, desc, err := serverClientStatusTxn(txn, existing, stop)
	if err != nil {
		return err
	}
	alloc.ClientStatus, alloc.ClientDescription = status, desc
	if stop.FollowupEvalID != "" {
		if alloc.FollowupEvalID, err = followupEvalTxn(txn, existing, stop.FollowupEvalID); err != nil {
			return err
		}
	}
	if stop.ReconnectDecision != nil {
		alloc.ReconnectDecision = stop.ReconnectDecision
	}
	if stop.PreemptedByAllocation != "" {
		alloc.PreemptedByAllocation = stop.PreemptedByAllocation
	}
	alloc.ModifyIndex = index
	alloc.AllocModifyIndex = index
	switch {
	case updatedAt != 0:
		alloc.ModifyTime = updatedAt
	case stop.ModifyTime != 0:
		alloc.ModifyTime = stop.ModifyTime
	}
	if err := storeAllocTxn(txn, index, alloc, existing); err != nil {
		return err
	}
	jobs.add(alloc.JobNamespacedID())
	return nil
}

// storeAllocTxn writes alloc over existing (nil for a new allocation),
// moving its job's summary counts with the change of client status in
// the same transaction.
func storeAllocTxn(txn *writeTxn, index uint64, alloc, existing *structs.Allocation) error {
	if err := updateSummaryWithAllocTxn(txn, index, alloc, existing); err != nil {
		return err
	}
	if err := syncServicesWithAllocTxn(txn, index, alloc, existing); err != nil {
		return err
	}
	return txn.Insert(TableAllocs, alloc)
}

// touchEvalTxn sets the plan's evaluation's ModifyIndex to the plan's
// index, so that whoever waits on the evaluation waits for the plan too.
func touchEvalTxn(txn *writeTxn, index uint64, evalID string) error {
	eval, err := evalByIDTxn(txn.Txn, nil, evalID)
	if err != nil || eval == nil {
		return err
	}
	updated := eval.Copy()
	updated.ModifyIndex = index
	return txn.Insert(TableEvals, updated)
}

// AllocByID returns the allocation, or nil when there is none.
func (s *StateStore) AllocByID(ws memdb.WatchSet, id string) (*structs.Allocation, error) {
	return allocByIDTxn(s.db.Txn(false), ws, id)
}

func allocByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.Allocation, error) {
	watchCh, raw, err := txn.FirstWatch(TableAllocs, indexID, id)
	if err != nil {
		return nil, fmt.Errorf("alloc lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.Allocation), nil
}

// AllocsByIDPrefix iterates over the allocations of namespace (or
// AllNamespaces) whose ID starts with prefix.
func (s *StateStore) AllocsByIDPrefix(ws memdb.WatchSet, namespace, prefix string) (memdb.ResultIterator, error) {
	iter, err := getWatch(s.db.Txn(false), ws, TableAllocs, indexID+prefixSuffix, prefix)
	if err != nil {
		return nil, err
	}
	return memdb.NewFilterIterator(iter, func(raw any) bool {
		return !namespaceMatches(namespace, raw.(*structs.Allocation).Namespace)
	}), nil
}

// AllocsByNode returns every allocation on a node, terminal or not.
func (s *StateStore) AllocsByNode(ws memdb.WatchSet, nodeID string) ([]*structs.Allocation, error) {
	return collectAllocs(s.db.Txn(false), ws, indexNode, nodeID)
}

// AllocsByNodeTerminal returns a node's allocations whose TerminalStatus is
// terminal. Unknown allocations are not terminal: they are among the live
// ones (terminal=false), holding their resources for when the node returns.
func (s *StateStore) AllocsByNodeTerminal(ws memdb.WatchSet, nodeID string, terminal bool) ([]*structs.Allocation, error) {
	return collectAllocs(s.db.Txn(false), ws, indexNodeTerminal, nodeID, terminal)
}

// AllocsByJob returns a job's allocations. Unless anyCreateIndex, only
// those of the current incarnation of the job: a job purged and registered
// again under the same ID is a different job, told apart by CreateIndex.
func (s *StateStore) AllocsByJob(ws memdb.WatchSet, namespace, jobID string, anyCreateIndex bool) ([]*structs.Allocation, error) {
	txn := s.db.Txn(false)
	job, err := jobByIDTxn(txn, ws, namespace, jobID)
	if err != nil {
		return nil, err
	}
	allocs, err := collectAllocs(txn, ws, indexJob, namespace, jobID)
	if err != nil || anyCreateIndex || job == nil {
		return allocs, err
	}
	var out []*structs.Allocation
	for _, a := range allocs {
		if a.Job == nil || a.Job.CreateIndex == job.CreateIndex {
			out = append(out, a)
		}
	}
	return out, nil
}

// AllocsByEval returns the allocations an evaluation placed or updated.
func (s *StateStore) AllocsByEval(ws memdb.WatchSet, evalID string) ([]*structs.Allocation, error) {
	return collectAllocs(s.db.Txn(false), ws, indexEval, evalID)
}

// AllocsByFollowupEval returns the allocations whose FollowupEvalID is
// evalID.
func (s *StateStore) AllocsByFollowupEval(ws memdb.WatchSet, evalID string) ([]*structs.Allocation, error) {
	return collectAllocs(s.db.Txn(false), ws, indexFollowupEval, evalID)
}

// Allocs iterates over every allocation.
func (s *StateStore) Allocs(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableAllocs, indexID)
}

func collectAllocs(txn *memdb.Txn, ws memdb.WatchSet, index string, args ...any) ([]*structs.Allocation, error) {
	iter, err := getWatch(txn, ws, TableAllocs, index, args...)
	if err != nil {
		return nil, err
	}
	var out []*structs.Allocation
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.Allocation))
	}
	return out, nil
}
