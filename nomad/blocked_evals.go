package nomad

import (
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// BlockedEvals holds evaluations that could not place every allocation for
// lack of capacity or of a feasible node, until the cluster changes in a way
// that may let them succeed. Re-running them on every change would waste the
// workers; never re-running them would leave allocations queued forever.
//
// An evaluation is keyed by its job, or by its job and node when it names a
// node (a system job blocked on one node). Only one evaluation per key is
// kept, the newest: the older one is returned by GetDuplicates for the
// leader to cancel, because the newest already covers what it asked for.
//
// Only the leader's BlockedEvals is enabled. The FSM calls Block for
// blocked evaluations it applies and UnblockNode (or Unblock, when it knows
// the node's computed class) when capacity appears; unblocked evaluations go
// to the EvalBroker.
//
// All state is guarded by l, which is taken before the broker's lock.
type BlockedEvals struct {
	broker *EvalBroker
	clock  Clock
	logger hclog.Logger

	l       sync.Mutex
	enabled bool

	// blocked holds every blocked evaluation by ID.
	blocked map[string]blockedEval

	// jobs maps a job to its blocked evaluation IDs by node ID ("" for
	// the one that is not node-specific).
	jobs map[structs.NamespacedID]map[string]string

	// classIndex and nodeIndex hold the raft index of the last unblock of
	// each computed class and node, and anyIndex that of the last unblock
	// of a node whose class is unknown. An evaluation whose scheduler
	// snapshot is older than an unblock that concerns it missed that
	// unblock, and is released as soon as it is blocked.
	classIndex map[string]uint64
	nodeIndex  map[string]uint64
	anyIndex   uint64

	// duplicates holds superseded evaluations for the leader to cancel.
	duplicates []*structs.Evaluation
	dupSignal  waitSignal
}

// blockedEval is a blocked evaluation with the broker token under which it
// may still be outstanding (set by Reblock).
type blockedEval struct {
	eval  *structs.Evaluation
	token string
}

// BlockedStats counts the blocked evaluations.
type BlockedStats struct {
	TotalBlocked int
	// TotalEscaped counts evaluations whose constraints escaped computed
	// classes, so every unblock releases them.
	TotalEscaped int
	// TotalNodeBlocked counts node-specific evaluations.
	TotalNodeBlocked int
	TotalDuplicates  int
}

// NewBlockedEvals returns a disabled BlockedEvals that releases evaluations
// into broker and shares its clock. A nil logger discards logs.
func NewBlockedEvals(broker *EvalBroker, logger hclog.Logger) *BlockedEvals {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	b := &BlockedEvals{broker: broker, clock: broker.cfg.Clock, logger: logger.Named("blocked_evals")}
	b.resetLocked()
	return b
}

// resetLocked empties every structure.
func (b *BlockedEvals) resetLocked() {
	b.blocked = map[string]blockedEval{}
	b.jobs = map[structs.NamespacedID]map[string]string{}
	b.classIndex = map[string]uint64{}
	b.nodeIndex = map[string]uint64{}
	b.anyIndex = 0
	b.duplicates = nil
}

// Enabled reports whether blocking is active.
func (b *BlockedEvals) Enabled() bool {
	b.l.Lock()
	defer b.l.Unlock()
	return b.enabled
}

// SetEnabled turns tracking on with leadership and off without it.
// Disabling forgets everything, since the next leader rebuilds the set from
// the state store, and wakes GetDuplicates.
func (b *BlockedEvals) SetEnabled(enabled bool) {
	b.l.Lock()
	defer b.l.Unlock()
	if b.enabled == enabled {
		return
	}
	b.enabled = enabled
	if !enabled {
		b.resetLocked()
		b.dupSignal.notifyLocked()
	}
}

// Block tracks a blocked evaluation the FSM has just applied.
func (b *BlockedEvals) Block(eval *structs.Evaluation) {
	b.l.Lock()
	defer b.l.Unlock()
	b.blockLocked(eval, "")
}

// Reblock tracks an evaluation that a worker re-ran after an unblock and
// that is still blocked. The worker has not acked it yet, so token is its
// outstanding delivery: if it is unblocked again before the ack, the broker
// holds the new run until then.
func (b *BlockedEvals) Reblock(eval *structs.Evaluation, token string) {
	b.l.Lock()
	defer b.l.Unlock()
	b.blockLocked(eval, token)
}

// blockLocked tracks eval, replacing an older evaluation of the same key.
func (b *BlockedEvals) blockLocked(eval *structs.Evaluation, token string) {
	if !b.enabled {
		return
	}
	if _, ok := b.blocked[eval.ID]; ok {
		b.blocked[eval.ID] = blockedEval{eval: eval, token: token}
		return
	}

	job := structs.NamespacedID{ID: eval.JobID, Namespace: eval.Namespace}
	if existingID, ok := b.jobs[job][eval.NodeID]; ok {
		existing := b.blocked[existingID].eval
		if existing.CreateIndex > eval.CreateIndex {
			b.addDuplicateLocked(eval)
			return
		}
		b.removeLocked(existing)
		b.addDuplicateLocked(existing)
	}

	if b.missedUnblockLocked(eval) {
		b.logger.Debug("evaluation missed an unblock, releasing it now", "eval_id", eval.ID, "job_id", eval.JobID)
		b.broker.EnqueueAll(map[*structs.Evaluation]string{unblockedCopy(eval): token})
		return
	}

	b.blocked[eval.ID] = blockedEval{eval: eval, token: token}
	nodes := b.jobs[job]
	if nodes == nil {
		nodes = map[string]string{}
		b.jobs[job] = nodes
	}
	nodes[eval.NodeID] = eval.ID
}

// missedUnblockLocked reports whether an unblock that could help eval
// happened after the snapshot its scheduler worked from: the capacity it
// waits for may already be there.
func (b *BlockedEvals) missedUnblockLocked(eval *structs.Evaluation) bool {
	if eval.NodeID != "" {
		return eval.SnapshotIndex < b.nodeIndex[eval.NodeID]
	}
	if eval.SnapshotIndex < b.anyIndex {
		return true
	}
	for class, index := range b.classIndex {
		if eval.SnapshotIndex < index && unblockedByClass(eval, class) {
			return true
		}
	}
	return false
}

// unblockedByClass reports whether a change to nodes of class may help eval:
// its constraints escaped computed classes, or the class was eligible, or
// unknown to the scheduler (a class that did not exist yet).
func unblockedByClass(eval *structs.Evaluation, class string) bool {
	if eval.EscapedComputedClass {
		return true
	}
	eligible, known := eval.ClassEligibility[class]
	return !known || eligible
}

// removeLocked stops tracking eval.
func (b *BlockedEvals) removeLocked(eval *structs.Evaluation) {
	delete(b.blocked, eval.ID)
	job := structs.NamespacedID{ID: eval.JobID, Namespace: eval.Namespace}
	if nodes := b.jobs[job]; nodes != nil {
		if nodes[eval.NodeID] == eval.ID {
			delete(nodes, eval.NodeID)
		}
		if len(nodes) == 0 {
			delete(b.jobs, job)
		}
	}
}

// addDuplicateLocked queues a superseded evaluation, marked canceled, for
// GetDuplicates.
func (b *BlockedEvals) addDuplicateLocked(eval *structs.Evaluation) {
	b.logger.Debug("canceling superseded blocked evaluation", "eval_id", eval.ID, "job_id", eval.JobID)
	c := eval.Copy()
	c.Status = structs.EvalStatusCancelled
	c.StatusDescription = fmt.Sprintf("a newer blocked evaluation exists for job %q", eval.JobID)
	b.duplicates = append(b.duplicates, c)
	b.dupSignal.notifyLocked()
}

// Unblock releases every evaluation that a change to nodes of the computed
// class at raft index may help: more capacity (an alloc finished, a node
// became ready) or a new class. Node-specific evaluations wait for
// UnblockNode instead, since capacity elsewhere does not help them.
func (b *BlockedEvals) Unblock(computedClass string, index uint64) {
	b.l.Lock()
	defer b.l.Unlock()
	if !b.enabled {
		return
	}
	b.classIndex[computedClass] = max(b.classIndex[computedClass], index)
	b.releaseLocked(func(e *structs.Evaluation) bool {
		return e.NodeID == "" && unblockedByClass(e, computedClass)
	})
}

// UnblockNode releases what a change to one node at raft index may help
// (it became ready, or an allocation on it finished): the evaluations
// blocked on that node (system jobs), and, because the node's class is not
// known here, every evaluation not pinned to a node. Evaluations pinned to
// other nodes stay blocked.
func (b *BlockedEvals) UnblockNode(nodeID string, index uint64) {
	b.l.Lock()
	defer b.l.Unlock()
	if !b.enabled {
		return
	}
	b.nodeIndex[nodeID] = max(b.nodeIndex[nodeID], index)
	b.anyIndex = max(b.anyIndex, index)
	b.releaseLocked(func(e *structs.Evaluation) bool { return e.NodeID == "" || e.NodeID == nodeID })
}

// releaseLocked moves every blocked evaluation matching release to the
// broker as pending.
func (b *BlockedEvals) releaseLocked(release func(*structs.Evaluation) bool) {
	unblocked := map[*structs.Evaluation]string{}
	for _, be := range b.blocked {
		if !release(be.eval) {
			continue
		}
		b.removeLocked(be.eval)
		unblocked[unblockedCopy(be.eval)] = be.token
	}
	if len(unblocked) > 0 {
		b.logger.Debug("unblocking evaluations", "count", len(unblocked))
		b.broker.EnqueueAll(unblocked)
	}
}

// unblockedCopy returns eval as the broker should hold it. It keeps its
// blocked status so the scheduler knows to reblock it (not create another
// blocked evaluation) if it still cannot place everything.
func unblockedCopy(eval *structs.Evaluation) *structs.Evaluation {
	return eval.Copy()
}

// Untrack forgets every blocked evaluation of a job, when the job is
// deregistered or an evaluation of it placed everything.
func (b *BlockedEvals) Untrack(namespace, jobID string) {
	b.l.Lock()
	defer b.l.Unlock()
	job := structs.NamespacedID{ID: jobID, Namespace: namespace}
	for _, evalID := range b.jobs[job] {
		delete(b.blocked, evalID)
	}
	delete(b.jobs, job)
}

// GetDuplicates returns the superseded evaluations, marked canceled, waiting
// up to timeout (forever when timeout <= 0) for one to appear. It returns
// nil on timeout or when disabled, so the leader's reaper can check whether
// it should stop.
func (b *BlockedEvals) GetDuplicates(timeout time.Duration) []*structs.Evaluation {
	expired, stop := clockExpiry(b.clock, timeout)
	defer stop()
	for {
		b.l.Lock()
		if len(b.duplicates) > 0 {
			out := b.duplicates
			b.duplicates = nil
			b.l.Unlock()
			return out
		}
		if !b.enabled {
			b.l.Unlock()
			return nil
		}
		wake := b.dupSignal.waitLocked()
		b.l.Unlock()

		select {
		case <-wake:
		case <-expired:
			return nil
		}
	}
}

// Stats returns the current counts.
func (b *BlockedEvals) Stats() BlockedStats {
	b.l.Lock()
	defer b.l.Unlock()
	s := BlockedStats{TotalBlocked: len(b.blocked), TotalDuplicates: len(b.duplicates)}
	for _, be := range b.blocked {
		switch {
		case be.eval.NodeID != "":
			s.TotalNodeBlocked++
		case be.eval.EscapedComputedClass:
			s.TotalEscaped++
		}
	}
	return s
}
