package nomad

import (
	"fmt"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// EmitEvents records events a client reports about its own node (upstream
// clients send them when a driver's health changes): each node named must
// exist and the caller hold its secret. A node's history keeps only the
// newest structs.MaxRetainedNodeEvents, so a call is cut to that many per
// node before it goes through raft.
func (n *Node) EmitEvents(args *structs.EmitNodeEventsRequest, reply *structs.EmitNodeEventsResponse) error {
	if done, err := n.srv.forward("Node.EmitEvents", args, reply); done {
		return err
	}
	if len(args.NodeEvents) == 0 {
		return fmt.Errorf("%w: no node events", structs.ErrMissingField)
	}
	st := n.srv.State()
	for id, events := range args.NodeEvents {
		if nulls := structs.NullElements("NodeEvents["+id+"]", events); len(nulls) > 0 {
			return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, &structs.ValidationError{Problems: nulls})
		}
		node, err := st.NodeByID(nil, id)
		if err != nil {
			return err
		}
		if node == nil {
			return fmt.Errorf("%w: %s", structs.ErrUnknownNode, id)
		}
		if err := authorizeNode(node, args.AuthToken); err != nil {
			return err
		}
		if over := len(events) - structs.MaxRetainedNodeEvents; over > 0 {
			args.NodeEvents[id] = events[over:]
		}
	}
	args.AuthToken = ""
	_, index, err := n.srv.raftApply(structs.NodeEventsEmitRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}
