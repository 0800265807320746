package nomad

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
)

// worker dequeues evaluations, runs the scheduler on a state snapshot and
// submits the plans. It is the scheduler's Planner. Every exchange with the
// leader goes through RPC, so a worker on a follower works the same way.
type worker struct {
	srv    *Server
	id     int
	logger hclog.Logger

	// per-evaluation fields, owned by the worker goroutine
	evalToken string
	snapIndex uint64
}

func newWorker(s *Server, id int) *worker {
	return &worker{srv: s, id: id, logger: s.logger.Named("worker").With("id", id)}
}

const workerDequeueTimeout = 500 * time.Millisecond

func (w *worker) run() {
	backoff := 50 * time.Millisecond
	for !w.srv.isShutdown() {
		ev, token, waitIndex, err := w.dequeue()
		if err != nil {
			if w.srv.isShutdown() {
				return
			}
			// No leader yet, or the broker is disabled on this server:
			// wait a little so an idle follower does not spin.
			select {
			case <-w.srv.shutdownCh:
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		if ev == nil {
			continue
		}
		w.evalToken = token
		if err := w.process(ev, waitIndex); err != nil {
			w.logger.Error("error processing evaluation", "eval_id", ev.ID, "error", err)
			w.sendAck(ev.ID, token, false)
			continue
		}
		w.sendAck(ev.ID, token, true)
	}
}

func (w *worker) dequeue() (*structs.Evaluation, string, uint64, error) {
	req := &structs.EvalDequeueRequest{Schedulers: w.srv.config.EnabledSchedulers, Timeout: workerDequeueTimeout}
	var resp structs.EvalDequeueResponse
	if err := w.srv.RPC("Eval.Dequeue", req, &resp); err != nil {
		return nil, "", 0, err
	}
	return resp.Eval, resp.Token, resp.WaitIndex, nil
}

func (w *worker) sendAck(evalID, token string, ack bool) {
	method := "Eval.Nack"
	if ack {
		method = "Eval.Ack"
	}
	// An ack or nack lost to a leader change would leave the evaluation
	// outstanding until the broker's nack timeout (a minute): retry while
	// no leader answers, briefly, then give up to the timeout.
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		var resp structs.GenericResponse
		err := w.srv.RPC(method, &structs.EvalAckRequest{EvalID: evalID, Token: token}, &resp)
		if err == nil {
			return
		}
		retry := errors.Is(err, structs.ErrNoLeader) || errors.Is(err, pool.ErrTransport)
		if !retry || attempt == ackAttempts || w.srv.isShutdown() {
			w.logger.Warn("failed to "+method, "eval_id", evalID, "error", err, "attempts", attempt)
			return
		}
		select {
		case <-time.After(delay):
		case <-w.srv.shutdownCh:
			return
		}
		delay = min(delay*2, time.Second)
	}
}

// ackAttempts bounds how often a worker tries to ack or nack one
// evaluation while no leader answers (about 5 s in all).
const ackAttempts = 8

func (w *worker) snapshotMinIndex(index uint64) (*state.StateSnapshot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Shutdown must not wait out a follower catching up.
	go func() {
		select {
		case <-w.srv.shutdownCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	return w.srv.State().SnapshotMinIndex(ctx, index)
}

func (w *worker) process(ev *structs.Evaluation, waitIndex uint64) error {
	snap, err := w.snapshotMinIndex(waitIndex)
	if err != nil {
		return fmt.Errorf("waiting for state index %d: %w", waitIndex, err)
	}
	w.snapIndex, _ = snap.LatestIndex()
	// An evaluation canceled while it waited in the broker (a disconnect
	// timeout whose allocations all came back) has nothing left to do.
	if stored, err := snap.EvalByID(nil, ev.ID); err != nil {
		return err
	} else if stored != nil && stored.TerminalStatus() {
		w.logger.Debug("skipping finished evaluation", "eval_id", ev.ID, "status", stored.Status)
		return nil
	}
	sched, err := scheduler.NewScheduler(ev.Type, scheduler.Config{
		Logger:   w.logger,
		State:    snap,
		Planner:  w,
		Now:      w.srv.clock.Now,
		Recorder: disconnectCounters{},
	})
	if err != nil {
		return err
	}
	return sched.Process(ev)
}

// SubmitPlan implements scheduler.Planner.
func (w *worker) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	plan.EvalToken = w.evalToken
	plan.SnapshotIndex = w.snapIndex
	var resp structs.PlanResponse
	// The plan is handed over, not copied (see rpcHandoff): the scheduler
	// does not touch it until the result is back.
	if err := w.srv.rpcHandoff("Plan.Submit", &structs.PlanRequest{Plan: plan}, &resp); err != nil {
		return nil, nil, err
	}
	result := resp.Result
	if result == nil {
		return nil, nil, errors.New("plan submit returned no result")
	}
	if result.RefreshIndex == 0 {
		return result, nil, nil
	}
	// Part of the plan was rejected: hand the scheduler fresher state.
	snap, err := w.snapshotMinIndex(result.RefreshIndex)
	if err != nil {
		return nil, nil, err
	}
	w.snapIndex, _ = snap.LatestIndex()
	return result, snap, nil
}

// UpdateEval implements scheduler.Planner.
func (w *worker) UpdateEval(ev *structs.Evaluation) error {
	return w.evalRPC("Eval.Update", ev)
}

// CreateEval implements scheduler.Planner.
func (w *worker) CreateEval(ev *structs.Evaluation) error {
	return w.evalRPC("Eval.Create", ev)
}

// ReblockEval implements scheduler.Planner.
func (w *worker) ReblockEval(ev *structs.Evaluation) error {
	return w.evalRPC("Eval.Reblock", ev)
}

func (w *worker) evalRPC(method string, ev *structs.Evaluation) error {
	req := &structs.EvalUpdateRequest{Evals: []*structs.Evaluation{ev}, EvalToken: w.evalToken}
	var resp structs.GenericResponse
	return w.srv.RPC(method, req, &resp)
}

var _ scheduler.Planner = (*worker)(nil)
