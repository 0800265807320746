package nomad

import (
	"github.com/nomad-edge/nomad/nomad/structs"
)

// coalescibleTriggers are the evaluations a node status or allocation
// update batch may leave to one of the same job already waiting in the
// broker: they ask only "look at the job again on the newest state", and
// any evaluation of the job taken by a worker after the batch is applied
// does that (the schedulers reconcile every allocation of the job and
// read neither the trigger nor the evaluation's NodeID).
var coalescibleTriggers = map[string]bool{
	structs.EvalTriggerNodeUpdate: true,
	structs.EvalTriggerReconnect:  true,
}

// reliedEval is an evaluation a batch did not write because one of its job
// was waiting in the broker; dequeues is the job's dequeue count then.
type reliedEval struct {
	eval     *structs.Evaluation
	dequeues uint64
}

// coalesceWaiting splits evals into those to write and those whose job
// already has an evaluation of the same trigger waiting for a worker: in
// a storm, where a thousand nodes return within a second and the job's
// evaluation waits behind the one being scheduled, that is all but the
// first batch's. The same trigger, so that what an operator reads in the
// job's evaluations stays true: a reconnect shows as a reconnect.
func (s *Server) coalesceWaiting(evals []*structs.Evaluation) (write []*structs.Evaluation, relied []reliedEval) {
	for _, e := range evals {
		if coalescibleTriggers[e.TriggeredBy] {
			if waiting, n := s.evalBroker.JobWaiting(structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}, e.TriggeredBy); waiting {
				relied = append(relied, reliedEval{eval: e, dequeues: n})
				continue
			}
		}
		write = append(write, e)
	}
	return write, relied
}

// followUpRelied runs once the batch is applied: for every job whose
// evaluation a worker took in between (its dequeue count moved), the
// waiting evaluation the batch relied on may have been snapshotted before
// the batch, so the batch's own evaluation is written now. It returns the
// evaluations written. A failure is logged, not returned: the batch's
// changes are committed, and telling its submitters otherwise would make
// them retry a change that is no longer one.
func (s *Server) followUpRelied(relied []reliedEval) []*structs.Evaluation {
	late, err := s.writeRelied(relied)
	if err != nil {
		s.logger.Error("writing the evaluations of a batch after a scheduler took the job's waiting one", "evals", len(late), "error", err)
		return nil
	}
	return late
}

func (s *Server) writeRelied(relied []reliedEval) ([]*structs.Evaluation, error) {
	var late []*structs.Evaluation
	for _, r := range relied {
		if s.evalBroker.JobDequeues(structs.NamespacedID{Namespace: r.eval.Namespace, ID: r.eval.JobID}) != r.dequeues {
			late = append(late, r.eval)
		}
	}
	if len(late) == 0 {
		return nil, nil
	}
	if _, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: late}); err != nil {
		return late, err
	}
	return late, nil
}
