package nomad

import (
	"fmt"
	"time"

	metrics "github.com/hashicorp/go-metrics"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Plan is the Plan.* RPC endpoint.
type Plan struct {
	srv *Server
	// peer is who calls through this instance; only servers may plan.
	peer rpcPeer
}

// Submit queues a scheduler's plan for the applier and waits for the result.
func (p *Plan) Submit(args *structs.PlanRequest, reply *structs.PlanResponse) error {
	if err := p.srv.requireServer(p.peer, "Plan.Submit"); err != nil {
		return err
	}
	if done, err := p.srv.forward("Plan.Submit", args, reply); done {
		return err
	}
	defer metrics.MeasureSince(keyPlanSubmit, time.Now())
	if args.Plan == nil {
		return fmt.Errorf("%w: missing plan", structs.ErrMissingField)
	}
	// The eval must still be outstanding with this token: a plan from a
	// worker whose eval was redelivered elsewhere must not be applied.
	token, ok := p.srv.evalBroker.Outstanding(args.Plan.EvalID)
	if !ok {
		return fmt.Errorf("%w: evaluation %s is not outstanding", structs.ErrInvalidRequest, args.Plan.EvalID)
	}
	if token != args.Plan.EvalToken {
		return structs.ErrTokenMismatch
	}
	// A long plan queue must not make the broker think the worker died.
	if err := p.srv.evalBroker.PauseNackTimeout(args.Plan.EvalID, token); err != nil {
		return err
	}
	defer func() { _ = p.srv.evalBroker.ResumeNackTimeout(args.Plan.EvalID, token) }()
	future, err := p.srv.planQueue.Enqueue(args.Plan)
	if err != nil {
		return err
	}
	result, err := future.Wait()
	if err != nil {
		return err
	}
	reply.Result = result
	reply.Index = result.AllocIndex
	return nil
}
