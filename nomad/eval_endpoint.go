package nomad

import (
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Eval is the Eval.* RPC endpoint: reads for users and the work protocol
// (dequeue, ack, nack, update) for scheduling workers.
type Eval struct {
	srv *Server
	// peer is who calls through this instance: the work protocol is for
	// servers only (requireServer).
	peer rpcPeer
}

// GetEval returns one evaluation.
func (e *Eval) GetEval(args *structs.EvalSpecificRequest, reply *structs.SingleEvalResponse) error {
	if done, err := e.srv.forwardQuery("Eval.GetEval", &args.QueryOptions, args, reply); done {
		return err
	}
	canRead, err := e.srv.readJobCheck(args.AuthToken)
	if err != nil {
		return err
	}
	return e.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		ev, err := st.EvalByID(ws, args.EvalID)
		if err != nil {
			return 0, err
		}
		if ev != nil {
			if err := canRead(ev.Namespace); err != nil {
				return 0, err
			}
		}
		reply.Eval = ev
		if ev != nil {
			return ev.ModifyIndex, nil
		}
		return st.Index(state.TableEvals)
	})
}

// List returns evaluations, optionally by ID prefix.
func (e *Eval) List(args *structs.EvalListRequest, reply *structs.EvalListResponse) error {
	if done, err := e.srv.forwardQuery("Eval.List", &args.QueryOptions, args, reply); done {
		return err
	}
	allowed, err := e.srv.authorizeList(args.AuthToken, args.RequestNamespace(), acl.NamespaceCapabilityReadJob)
	if err != nil {
		return err
	}
	return e.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		iter, err := st.EvalsByIDPrefix(ws, args.RequestNamespace(), args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Evaluations = []*structs.Evaluation{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			if ev := raw.(*structs.Evaluation); allowed(ev.Namespace) {
				reply.Evaluations = append(reply.Evaluations, ev)
			}
		}
		sort.Slice(reply.Evaluations, func(i, j int) bool {
			return reply.Evaluations[i].CreateIndex > reply.Evaluations[j].CreateIndex
		})
		return st.Index(state.TableEvals)
	})
}

// Allocations lists the allocations an evaluation created or changed.
func (e *Eval) Allocations(args *structs.EvalSpecificRequest, reply *structs.EvalAllocationsResponse) error {
	if done, err := e.srv.forwardQuery("Eval.Allocations", &args.QueryOptions, args, reply); done {
		return err
	}
	canRead, err := e.srv.readJobCheck(args.AuthToken)
	if err != nil {
		return err
	}
	return e.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByEval(ws, args.EvalID)
		if err != nil {
			return 0, err
		}
		reply.Allocations = make([]*structs.AllocListStub, 0, len(allocs))
		for _, a := range allocs {
			if err := canRead(a.Namespace); err != nil {
				return 0, err
			}
			reply.Allocations = append(reply.Allocations, a.Stub())
		}
		return st.Index(state.TableAllocs)
	})
}

// Dequeue hands a worker the next evaluation for its schedulers.
// maxDequeueTimeout bounds how long one Eval.Dequeue waits for work.
const maxDequeueTimeout = 5 * time.Second

func (e *Eval) Dequeue(args *structs.EvalDequeueRequest, reply *structs.EvalDequeueResponse) error {
	if err := e.srv.requireServer(e.peer, "Eval.Dequeue"); err != nil {
		return err
	}
	if done, err := e.srv.forward("Eval.Dequeue", args, reply); done {
		return err
	}
	if len(args.Schedulers) == 0 {
		return fmt.Errorf("%w: dequeue requires at least one scheduler type", structs.ErrMissingField)
	}
	// A dequeue holds a goroutine while it waits: bound it, whatever the
	// caller asked (zero would wait forever).
	timeout := args.Timeout
	if timeout <= 0 || timeout > maxDequeueTimeout {
		timeout = maxDequeueTimeout
	}
	// The caller is most often a worker on another server: if it goes
	// (that server stops or loses its connection) while this waits, an
	// evaluation handed out now would reach nobody and sit outstanding
	// for the nack timeout. Stop waiting with it, and give back one that
	// raced its departure.
	ctx := structs.RequestContext(args)
	ev, token, err := e.srv.evalBroker.DequeueCtx(ctx, args.Schedulers, timeout)
	if err != nil {
		return err
	}
	if ev != nil && ctx.Err() != nil {
		_ = e.srv.evalBroker.GiveBack(ev.ID, token)
		return ctx.Err()
	}
	if ev != nil {
		reply.Eval = ev
		reply.Token = token
		// The scheduler must see at least the state the eval was written
		// in; a later index (the job's newest change) is better still.
		reply.WaitIndex = max(ev.ModifyIndex, ev.JobModifyIndex)
		if idx, err := e.srv.State().LatestIndex(); err == nil {
			reply.WaitIndex = max(reply.WaitIndex, idx)
		}
	}
	return nil
}

// Ack completes an evaluation.
func (e *Eval) Ack(args *structs.EvalAckRequest, reply *structs.GenericResponse) error {
	if err := e.srv.requireServer(e.peer, "Eval.Ack"); err != nil {
		return err
	}
	if done, err := e.srv.forward("Eval.Ack", args, reply); done {
		return err
	}
	return e.srv.evalBroker.Ack(args.EvalID, args.Token)
}

// Nack returns an evaluation to the broker for redelivery.
func (e *Eval) Nack(args *structs.EvalAckRequest, reply *structs.GenericResponse) error {
	if err := e.srv.requireServer(e.peer, "Eval.Nack"); err != nil {
		return err
	}
	if done, err := e.srv.forward("Eval.Nack", args, reply); done {
		return err
	}
	return e.srv.evalBroker.Nack(args.EvalID, args.Token)
}

// Update writes the outcome of an outstanding evaluation.
func (e *Eval) Update(args *structs.EvalUpdateRequest, reply *structs.GenericResponse) error {
	if err := e.srv.requireServer(e.peer, "Eval.Update"); err != nil {
		return err
	}
	if done, err := e.srv.forward("Eval.Update", args, reply); done {
		return err
	}
	if len(args.Evals) != 1 {
		return fmt.Errorf("%w: only a single eval can be updated", structs.ErrInvalidRequest)
	}
	if err := e.checkToken(args.Evals[0].ID, args.EvalToken); err != nil {
		return err
	}
	return e.apply(args, reply)
}

// Create writes follow-up evaluations made by a scheduler.
func (e *Eval) Create(args *structs.EvalUpdateRequest, reply *structs.GenericResponse) error {
	if err := e.srv.requireServer(e.peer, "Eval.Create"); err != nil {
		return err
	}
	if done, err := e.srv.forward("Eval.Create", args, reply); done {
		return err
	}
	if len(args.Evals) != 1 {
		return fmt.Errorf("%w: only a single eval can be created", structs.ErrInvalidRequest)
	}
	ev := args.Evals[0]
	if err := e.checkToken(ev.PreviousEval, args.EvalToken); err != nil {
		return err
	}
	if existing, err := e.srv.State().EvalByID(nil, ev.ID); err != nil {
		return err
	} else if existing != nil {
		return fmt.Errorf("%w: evaluation %s already exists", structs.ErrInvalidRequest, ev.ID)
	}
	return e.apply(args, reply)
}

// Reblock puts a blocked evaluation back in the blocked set after a
// scheduler found it still cannot place.
func (e *Eval) Reblock(args *structs.EvalUpdateRequest, reply *structs.GenericResponse) error {
	if err := e.srv.requireServer(e.peer, "Eval.Reblock"); err != nil {
		return err
	}
	if done, err := e.srv.forward("Eval.Reblock", args, reply); done {
		return err
	}
	if len(args.Evals) != 1 {
		return fmt.Errorf("%w: only a single eval can be reblocked", structs.ErrInvalidRequest)
	}
	ev := args.Evals[0]
	if err := e.checkToken(ev.ID, args.EvalToken); err != nil {
		return err
	}
	if err := e.apply(args, reply); err != nil {
		return err
	}
	e.srv.blockedEvals.Reblock(ev, args.EvalToken)
	return nil
}

func (e *Eval) checkToken(evalID, token string) error {
	cur, ok := e.srv.evalBroker.Outstanding(evalID)
	if !ok {
		return fmt.Errorf("%w: evaluation %s is not outstanding", structs.ErrInvalidRequest, evalID)
	}
	if cur != token {
		return structs.ErrTokenMismatch
	}
	return nil
}

func (e *Eval) apply(args *structs.EvalUpdateRequest, reply *structs.GenericResponse) error {
	now := e.srv.clock.Now().UnixNano()
	args.UpdatedAt = now
	for _, ev := range args.Evals {
		ev.ModifyTime = now
		if ev.CreateTime == 0 {
			ev.CreateTime = now
		}
	}
	_, index, err := e.srv.raftApply(structs.EvalUpdateRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// Delete removes the evaluations an operator names (DELETE
// /v1/evaluations, the HTTP layer resolving a filter to IDs). It needs a
// management token and a paused eval broker: the FSM refuses the entry
// with structs.ErrEvalBrokerNotPaused otherwise. The evaluations'
// allocations stay. reply.Count counts the IDs that existed.
func (e *Eval) Delete(args *structs.EvalDeleteUserRequest, reply *structs.EvalDeleteUserResponse) error {
	if done, err := e.srv.forward("Eval.Delete", args, reply); done {
		return err
	}
	if err := e.srv.authorize(args.AuthToken, permManagement); err != nil {
		return err
	}
	// No IDs (a filter that matched nothing) still goes through raft:
	// it is refused the same way while the broker runs.
	count := 0
	for _, id := range args.EvalIDs {
		if ev, err := e.srv.State().EvalByID(nil, id); err == nil && ev != nil {
			count++
		}
	}
	req := &structs.EvalDeleteRequest{Evals: args.EvalIDs, UserInitiated: true}
	_, index, err := e.srv.raftApply(structs.EvalDeleteRequestType, req)
	if err != nil {
		return err
	}
	reply.Count, reply.Index = count, index
	return nil
}
