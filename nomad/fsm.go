package nomad

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/stream"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// nomadFSM applies raft log entries to the state store. Apply must be
// deterministic: every server applies the same entries to the same state
// and must end up equal, so times come from the entries, never the clock.
//
// Side effects that belong only to the leader (enqueueing evaluations,
// unblocking blocked ones) go through the broker and blocked-eval tracker,
// which are disabled on followers and ignore what they are given.
type nomadFSM struct {
	deps   fsmDeps
	logger hclog.Logger
	events *fsmEvents

	mu    sync.RWMutex
	state *state.StateStore
}

// fsmDeps are what the FSM needs from the server: where applied entries
// are published, and the leader's evaluation queues it hands the written
// evaluations to. It never needs the clock: time comes from the entries.
type fsmDeps struct {
	logger hclog.Logger
	events *stream.EventBroker
	// evals and blocked take the evaluations that need work; both are
	// disabled on followers and ignore what they are given.
	evals   *EvalBroker
	blocked *BlockedEvals
	// schedulerConfig, when set, is told every scheduler configuration
	// applied, after it is stored: the server pauses or resumes its eval
	// broker from it.
	schedulerConfig func(*structs.SchedulerConfiguration)
}

// newFSM returns an FSM over an empty store whose commits feed the event
// broker of deps.
func newFSM(deps fsmDeps) (*nomadFSM, error) {
	f := &nomadFSM{deps: deps, logger: deps.logger.Named("fsm"), events: newFSMEvents(deps.events)}
	st, err := f.newStore()
	if err != nil {
		return nil, err
	}
	f.state = st
	return f, nil
}

func (f *nomadFSM) newStore() (*state.StateStore, error) {
	return state.NewStateStore(&state.StateStoreConfig{Logger: f.logger, OnCommit: f.events.onCommit})
}

// Events returns the broker the FSM publishes the applied entries to.
func (f *nomadFSM) Events() *stream.EventBroker { return f.events.broker }

// State returns the current state store; it changes on restore.
func (f *nomadFSM) State() *state.StateStore {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state
}

// Apply implements raft.FSM.
func (f *nomadFSM) Apply(l *raft.Log) any {
	if len(l.Data) == 0 {
		return nil
	}
	t := structs.MessageType(l.Data[0])
	f.events.begin()
	defer f.events.end(t, l.Index)
	return f.apply(t, l)
}

func (f *nomadFSM) applyNodeRegister(req *structs.NodeRegisterRequest, index uint64) error {
	// The node and its evaluations in one transaction; they name the
	// index of the registration.
	if err := f.State().UpsertNodeWithEvals(index, req.Node, req.Evals); err != nil {
		return err
	}
	if req.Node.Status == structs.NodeStatusReady {
		f.deps.blocked.UnblockNode(req.Node.ID, index)
	}
	f.trackEvals(req.Evals)
	return nil
}

func (f *nomadFSM) applyNodeDeregister(req *structs.NodeSpecificRequest, index uint64) error {
	return f.State().DeleteNode(index, []string{req.NodeID})
}

// applyNodeUpdateStatus applies one node's status change, as a batch of
// one: the change and its evaluations in one state transaction.
func (f *nomadFSM) applyNodeUpdateStatus(req *structs.NodeUpdateStatusRequest, index uint64) error {
	// Unlike a batch, a single change of a node that does not exist is an
	// error; the FSM is the only writer, so this read and the write agree.
	if n, err := f.State().NodeByID(nil, req.NodeID); err != nil || n == nil {
		if err == nil {
			err = fmt.Errorf("update node %q: %w", req.NodeID, structs.ErrUnknownNode)
		}
		return err
	}
	return f.applyNodeStatusBatch(index, &structs.NodeBatchUpdateStatusRequest{
		Updates:   []*structs.NodeStatusUpdate{{NodeID: req.NodeID, Status: req.Status, NodeEvent: req.NodeEvent}},
		UpdatedAt: req.UpdatedAt, Evals: req.Evals,
	})
}

func (f *nomadFSM) applyNodeBatchUpdateStatus(req *structs.NodeBatchUpdateStatusRequest, index uint64) error {
	return f.applyNodeStatusBatch(index, req)
}

// applyNodeStatusBatch writes node status changes, the site outages they
// declare and their evaluations in one state transaction, then hands the
// evaluations to the broker and wakes what was blocked on a node that is
// ready again.
func (f *nomadFSM) applyNodeStatusBatch(index uint64, req *structs.NodeBatchUpdateStatusRequest) error {
	if err := f.State().UpdateNodeStatusBatch(index, req); err != nil {
		return err
	}
	for _, u := range req.Updates {
		if u.Status == structs.NodeStatusReady {
			f.deps.blocked.UnblockNode(u.NodeID, index)
		}
	}
	f.trackEvals(req.Evals)
	return nil
}

func (f *nomadFSM) applyJobRegister(req *structs.JobRegisterRequest, index uint64) error {
	st := f.State()
	// The endpoint checked the namespace too, but a delete of it may have
	// gone through raft in between; the FSM is the one writer, so this
	// check and the write below see the same state.
	if err := st.NamespaceExists(req.Job.Namespace); err != nil {
		return err
	}
	// check-index too: two registrations racing with the same index both
	// pass the endpoint's read, and only here, in log order, can the
	// second be refused (the chaos run's history caught both acknowledged).
	if req.EnforceIndex {
		existing, err := st.JobByID(nil, req.Job.Namespace, req.Job.ID)
		if err != nil {
			return err
		}
		if err := enforceIndex(req, existing); err != nil {
			return err
		}
	}
	if err := st.UpsertJob(index, req.SubmitTime, req.Job); err != nil {
		return err
	}
	if req.Scaling != nil {
		if err := st.UpsertScalingEvent(index, req.Scaling); err != nil {
			return err
		}
	}
	if req.Eval != nil {
		// The eval schedules the job version written in this same entry.
		req.Eval.JobModifyIndex = index
		return f.upsertEvals(index, []*structs.Evaluation{req.Eval})
	}
	return nil
}

// skipShutdownDelays marks the job's allocations that are not finished to
// skip shutdown_delay, before the stop that the entry's evaluation makes:
// the clients read the mark on the stopped allocation. One stopped earlier
// that its client still runs (waiting out its delays) is marked too, so a
// second stop with -no-shutdown-delay cuts the wait short. Decided from
// the state the entry applies to, so every server marks the same set.
func skipShutdownDelays(st *state.StateStore, index uint64, ns, jobID string) error {
	allocs, err := st.AllocsByJob(nil, ns, jobID, true)
	if err != nil {
		return err
	}
	yes := true
	marks := map[string]*structs.DesiredTransition{}
	for _, a := range allocs {
		if !a.ClientTerminalStatus() {
			marks[a.ID] = &structs.DesiredTransition{NoShutdownDelay: &yes}
		}
	}
	if len(marks) == 0 {
		return nil
	}
	return st.UpdateAllocsDesiredTransitions(index, marks, nil)
}

func (f *nomadFSM) applyJobDeregister(req *structs.JobDeregisterRequest, index uint64) error {
	st := f.State()
	ns := req.RequestNamespace()
	if req.NoShutdownDelay {
		if err := skipShutdownDelays(st, index, ns, req.JobID); err != nil {
			return err
		}
	}
	if req.Purge {
		if err := st.DeleteJob(index, ns, req.JobID); err != nil {
			return err
		}
	} else {
		job, err := st.JobByID(nil, ns, req.JobID)
		if err != nil {
			return err
		}
		if job != nil {
			stopped := job.Copy()
			stopped.Stop = true
			if err := st.UpsertJob(index, req.Now, stopped); err != nil {
				return err
			}
		}
	}
	f.deps.blocked.Untrack(ns, req.JobID)
	if req.Eval != nil {
		return f.upsertEvals(index, []*structs.Evaluation{req.Eval})
	}
	return nil
}

func (f *nomadFSM) applyJobBatchDeregister(req *structs.JobBatchDeregisterRequest, index uint64) error {
	deleted, err := f.State().DeleteDeadJobs(index, req.Jobs)
	if err != nil {
		return err
	}
	for _, id := range deleted {
		f.deps.blocked.Untrack(id.Namespace, id.ID)
	}
	return nil
}

func (f *nomadFSM) applyDeploymentDelete(req *structs.DeploymentDeleteRequest, index uint64) error {
	_, err := f.State().DeleteDeployments(index, req.Deployments)
	return err
}

func (f *nomadFSM) applyNodeBatchDeregister(req *structs.NodeBatchDeregisterRequest, index uint64) error {
	_, err := f.State().DeleteDownNodes(index, req.Nodes)
	return err
}

func (f *nomadFSM) applyAllocDesiredTransitions(req *structs.AllocUpdateDesiredTransitionRequest, index uint64) error {
	if err := f.State().UpdateAllocsDesiredTransitions(index, req.Allocs, req.Evals); err != nil {
		return err
	}
	for _, e := range req.Evals {
		if e.ShouldEnqueue() {
			f.deps.evals.Enqueue(e)
		}
	}
	return nil
}

func (f *nomadFSM) applyEvalUpdate(req *structs.EvalUpdateRequest, index uint64) error {
	return f.upsertEvals(index, req.Evals)
}

// upsertEvals writes evaluations and hands the ones that need work to the
// broker or the blocked-eval tracker.
func (f *nomadFSM) upsertEvals(index uint64, evals []*structs.Evaluation) error {
	if err := f.State().UpsertEvals(index, evals); err != nil {
		return err
	}
	f.trackEvals(evals)
	return nil
}

// trackEvals hands stored evaluations that need work to the broker or the
// blocked-eval tracker.
func (f *nomadFSM) trackEvals(evals []*structs.Evaluation) {
	for _, e := range evals {
		switch {
		case e.ShouldEnqueue():
			f.deps.evals.Enqueue(e)
		case e.ShouldBlock():
			// An outstanding blocked eval is being reblocked by its worker;
			// the Eval.Reblock endpoint hands it back once acked.
			if _, outstanding := f.deps.evals.Outstanding(e.ID); !outstanding {
				f.deps.blocked.Block(e)
			}
		case e.Status == structs.EvalStatusComplete && len(e.FailedTGAllocs) == 0:
			// The job placed everything: an older blocked eval for it is moot.
			f.deps.blocked.Untrack(e.Namespace, e.JobID)
		}
	}
}

func (f *nomadFSM) applyEvalDelete(req *structs.EvalDeleteRequest, index uint64) error {
	if req.UserInitiated {
		return f.State().DeleteEvalsByUser(index, req.Evals)
	}
	return f.State().DeleteEval(index, req.Evals, req.Allocs)
}

// applySchedulerConfig stores the scheduler configuration and answers
// whether it was written (a stale CAS is not), or an error.
func applySchedulerConfig(f *nomadFSM, t structs.MessageType, body []byte, index uint64) any {
	var req structs.SchedulerSetConfigRequest
	if err := structs.Decode(body, &req); err != nil {
		return fmt.Errorf("decoding %s: %w", t, err)
	}
	updated, err := f.State().SchedulerSetConfig(index, &req.Config, req.CAS)
	if err != nil {
		return err
	}
	if updated && f.deps.schedulerConfig != nil {
		_, cfg, err := f.State().SchedulerConfig(nil)
		if err != nil {
			return err
		}
		f.deps.schedulerConfig(cfg)
	}
	return updated
}

func (f *nomadFSM) applyAllocClientUpdate(req *structs.AllocUpdateRequest, index uint64) error {
	st := f.State()
	if err := st.UpdateAllocsFromClientWithEvals(index, req); err != nil {
		return err
	}
	f.trackEvals(req.Evals)
	// A finished allocation frees capacity on its node: evaluations
	// blocked for lack of room may now fit.
	for _, a := range req.Alloc {
		if structs.ClientTerminal(a.ClientStatus) {
			if stored, err := st.AllocByID(nil, a.ID); err == nil && stored != nil {
				f.deps.blocked.UnblockNode(stored.NodeID, index)
			}
		}
	}
	return nil
}

func (f *nomadFSM) applyPlanResults(req *structs.ApplyPlanResultsRequest, index uint64) error {
	if err := f.State().UpsertPlanResults(index, req); err != nil {
		return err
	}
	f.trackEvals(req.Evals)
	return nil
}

// Snapshot implements raft.FSM.
func (f *nomadFSM) Snapshot() (raft.FSMSnapshot, error) {
	snap, err := f.State().Snapshot()
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{snap: snap}, nil
}

// Restore implements raft.FSM: it builds a fresh store from the stream and
// swaps it in, abandoning the old one so its blocking queries wake up.
func (f *nomadFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	fresh, err := f.newStore()
	if err != nil {
		return err
	}
	r, err := fresh.Restore()
	if err != nil {
		return err
	}
	if err := eachRecord(rc, r.RestoreObject); err != nil {
		r.Abort()
		return err
	}
	if err := r.Commit(); err != nil {
		return err
	}
	f.mu.Lock()
	old := f.state
	f.state = fresh
	f.mu.Unlock()
	old.Abandon()
	return nil
}

// eachRecord decodes the persist stream read from r and hands fn each of
// its records. Every kind the store persists is known here through
// state.NewSnapshotObject, so a new table cannot be forgotten.
func eachRecord(r io.Reader, fn func(state.SnapshotKind, any) error) error {
	dec := codec.NewDecoder(r, structs.MsgpackHandle)
	for {
		var kind state.SnapshotKind
		if err := dec.Decode(&kind); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading snapshot: %w", err)
		}
		obj, err := state.NewSnapshotObject(kind)
		if err != nil {
			return fmt.Errorf("snapshot record: %w", err)
		}
		if err := dec.Decode(obj); err != nil {
			return fmt.Errorf("decoding snapshot record of kind %s: %w", kind, err)
		}
		if err := fn(kind, obj); err != nil {
			return err
		}
	}
}

type fsmSnapshot struct {
	snap *state.StateSnapshot
}

// Persist writes kind, object pairs as consecutive msgpack values.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	var buf bytes.Buffer
	enc := codec.NewEncoder(&buf, structs.MsgpackHandle)
	err := s.snap.Persist(func(kind state.SnapshotKind, obj any) error {
		if err := encodeRecord(enc, kind, obj); err != nil {
			return err
		}
		if buf.Len() > 64<<10 {
			if _, err := sink.Write(buf.Bytes()); err != nil {
				return err
			}
			buf.Reset()
		}
		return nil
	})
	if err == nil && buf.Len() > 0 {
		_, err = sink.Write(buf.Bytes())
	}
	if err != nil {
		sink.Cancel()
		return fmt.Errorf("persisting snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

var _ raft.FSM = (*nomadFSM)(nil)
