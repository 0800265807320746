package nomad

import (
	"crypto/subtle"
	"fmt"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// authorizeNode checks that token is the node's secret: only the node
// itself may heartbeat for it, read its work list or report on its
// allocations. The comparison takes the same time wherever the strings
// differ, so the secret cannot be guessed a byte at a time.
func authorizeNode(node *structs.Node, token string) error {
	if token == "" {
		return fmt.Errorf("%w: node %s", structs.ErrNodeSecretMissing, node.ID)
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(node.SecretID)) != 1 {
		return fmt.Errorf("%w: node %s", structs.ErrNodeSecretMismatch, node.ID)
	}
	return nil
}

// checkClientNodeStatus refuses a node status that only the servers'
// heartbeat timers may set. A node that can call is, by definition, not
// disconnected.
func checkClientNodeStatus(status string) error {
	if !structs.ValidNodeStatus(status) {
		return fmt.Errorf("%w: invalid status %q for node", structs.ErrInvalidRequest, status)
	}
	if status == structs.NodeStatusDisconnected {
		return fmt.Errorf("%w: node status %q", structs.ErrServerOnlyStatus, status)
	}
	return nil
}

// checkClientAllocUpdate refuses an allocation update that the reporting
// node may not make: the allocation must be on that node, its status one
// a client sets (never unknown or lost, spec section 7), and it may not
// carry AllocStates, the servers' own record of what they observed.
// stored is nil for an allocation the servers no longer have; such an
// update is dropped by the state store, but must still be well-formed.
func checkClientAllocUpdate(nodeID string, update, stored *structs.Allocation) error {
	if stored != nil && stored.NodeID != nodeID {
		return fmt.Errorf("%w: allocation %s is on node %s, not on node %s",
			structs.ErrForeignAlloc, update.ID, stored.NodeID, nodeID)
	}
	switch status := update.ClientStatus; {
	case structs.ClientSettable(status):
	case status == structs.AllocClientStatusUnknown || status == structs.AllocClientStatusLost:
		return fmt.Errorf("%w: allocation %s reported client status %q", structs.ErrServerOnlyStatus, update.ID, status)
	default:
		return fmt.Errorf("%w: allocation %s reported client status %q; a client reports %s, %s, %s or %s",
			structs.ErrInvalidRequest, update.ID, status,
			structs.AllocClientStatusPending, structs.AllocClientStatusRunning,
			structs.AllocClientStatusComplete, structs.AllocClientStatusFailed)
	}
	if len(update.AllocStates) > 0 {
		return fmt.Errorf("%w: allocation %s carries AllocStates, which only the servers record",
			structs.ErrInvalidRequest, update.ID)
	}
	return nil
}
