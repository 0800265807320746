package nomad

import (
	"fmt"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// This file holds the operator's node RPCs: drain, eligibility and purge
// (see docs/concepts/disconnected-clients.md, "Operator actions"). The
// drainer (drainer.go) does the work a drain asks for.

// UpdateDrain starts, updates or ends a node's drain. A drain of a
// disconnected node is accepted: its unknown allocations are migrated.
func (n *Node) UpdateDrain(args *structs.NodeUpdateDrainRequest, reply *structs.NodeDrainUpdateResponse) error {
	if done, err := n.srv.forward("Node.UpdateDrain", args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, permNodeWrite); err != nil {
		return err
	}
	// A credential has no business in the replicated log.
	args.AuthToken = ""
	node, err := n.operatorNode(args.NodeID)
	if err != nil {
		return err
	}
	now := n.srv.clock.Now()
	args.UpdatedAt = now
	args.Complete = false
	args.AuthToken = ""
	msg := structs.NodeDrainEventDrainDisabled
	if d := args.DrainStrategy; d != nil {
		d.StartedAt = now
		if node.DrainStrategy != nil {
			d.StartedAt = node.DrainStrategy.StartedAt
		}
		switch {
		case d.Deadline > 0:
			d.ForceDeadline = now.Add(d.Deadline)
		case d.Deadline < 0:
			d.ForceDeadline = now
		default:
			d.ForceDeadline = time.Time{}
		}
		msg = structs.NodeDrainEventDrainSet
		if node.DrainStrategy != nil {
			msg = structs.NodeDrainEventDrainUpdated
		}
	}
	args.NodeEvent = structs.NewNodeEvent(structs.NodeEventSubsystemDrain, msg, now)
	_, index, err := n.srv.raftApply(structs.NodeUpdateDrainRequestType, args)
	if err != nil {
		return err
	}
	reply.NodeModifyIndex, reply.Index = index, index
	if args.DrainStrategy == nil && args.MarkEligible {
		reply.EvalIDs, reply.EvalCreateIndex, err = n.srv.eligibleNodeEvals(args.NodeID)
	}
	return err
}

// UpdateEligibility marks a node eligible or ineligible for new
// placements; its allocations stay where they are.
func (n *Node) UpdateEligibility(args *structs.NodeUpdateEligibilityRequest, reply *structs.NodeEligibilityUpdateResponse) error {
	if done, err := n.srv.forward("Node.UpdateEligibility", args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, permNodeWrite); err != nil {
		return err
	}
	// A credential has no business in the replicated log.
	args.AuthToken = ""
	node, err := n.operatorNode(args.NodeID)
	if err != nil {
		return err
	}
	msg := structs.NodeEligibilityEventIneligible
	switch args.Eligibility {
	case structs.NodeSchedulingEligible:
		if node.DrainStrategy != nil {
			return fmt.Errorf("%w: node %s is draining: disable the drain to make it eligible", structs.ErrInvalidRequest, node.ID)
		}
		msg = structs.NodeEligibilityEventEligible
	case structs.NodeSchedulingIneligible:
	default:
		return fmt.Errorf("%w: Eligibility %q: must be %q or %q", structs.ErrInvalidRequest,
			args.Eligibility, structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible)
	}
	now := n.srv.clock.Now()
	args.UpdatedAt = now
	args.AuthToken = ""
	args.NodeEvent = structs.NewNodeEvent(structs.NodeEventSubsystemCluster, msg, now)
	_, index, err := n.srv.raftApply(structs.NodeUpdateEligibilityRequestType, args)
	if err != nil {
		return err
	}
	reply.NodeModifyIndex, reply.Index = index, index
	if args.Eligibility == structs.NodeSchedulingEligible && node.SchedulingEligibility != args.Eligibility {
		reply.EvalIDs, reply.EvalCreateIndex, err = n.srv.eligibleNodeEvals(args.NodeID)
	}
	return err
}

// Purge removes a node from the servers' state, whatever its status, and
// re-evaluates the jobs that had allocations on it. A client still running
// registers again on its next heartbeat.
func (n *Node) Purge(args *structs.NodePurgeRequest, reply *structs.NodePurgeResponse) error {
	if done, err := n.srv.forward("Node.Purge", args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, permNodeWrite); err != nil {
		return err
	}
	// A credential has no business in the replicated log.
	args.AuthToken = ""
	if _, err := n.operatorNode(args.NodeID); err != nil {
		return err
	}
	evals, err := n.srv.nodeEvals(args.NodeID)
	if err != nil {
		return err
	}
	args.Evals = evals
	args.AuthToken = ""
	_, index, err := n.srv.raftApply(structs.NodePurgeRequestType, args)
	if err != nil {
		return err
	}
	n.srv.heartbeats.clear(args.NodeID)
	reply.NodeModifyIndex, reply.Index = index, index
	if len(evals) > 0 {
		reply.EvalIDs, reply.EvalCreateIndex = evalIDs(evals), index
	}
	return nil
}

// Evaluate re-evaluates the node's jobs: a node-update evaluation for
// every job with an allocation on it and every system job, as when it
// becomes eligible, in one raft entry (upstream's Node.Evaluate).
func (n *Node) Evaluate(args *structs.NodeEvaluateRequest, reply *structs.NodeEvaluateResponse) error {
	if done, err := n.srv.forward("Node.Evaluate", args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, permNodeWrite); err != nil {
		return err
	}
	args.AuthToken = ""
	node, err := n.operatorNode(args.NodeID)
	if err != nil {
		return err
	}
	reply.EvalIDs, reply.EvalCreateIndex, err = n.srv.eligibleNodeEvals(args.NodeID)
	reply.NodeModifyIndex, reply.Index = node.ModifyIndex, reply.EvalCreateIndex
	return err
}

// operatorNode returns the node an operator RPC names.
func (n *Node) operatorNode(nodeID string) (*structs.Node, error) {
	if nodeID == "" {
		return nil, fmt.Errorf("%w: NodeID", structs.ErrMissingField)
	}
	node, err := n.srv.State().NodeByID(nil, nodeID)
	if err != nil {
		return nil, err
	}
	if node == nil {
		return nil, fmt.Errorf("%w: %s", structs.ErrUnknownNode, nodeID)
	}
	return node, nil
}

// eligibleNodeEvals re-evaluates the jobs of a node that became eligible,
// so work that waited for room can use it.
func (s *Server) eligibleNodeEvals(nodeID string) ([]string, uint64, error) {
	evals, err := s.nodeEvals(nodeID)
	if err != nil {
		return nil, 0, err
	}
	// A node made eligible again takes the system jobs it has no
	// allocation of yet.
	if evals, err = s.systemJobEvals(nodeID, evals); err != nil || len(evals) == 0 {
		return nil, 0, err
	}
	_, index, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
	if err != nil {
		return nil, 0, err
	}
	return evalIDs(evals), index, nil
}
