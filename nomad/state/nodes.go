package state

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// UpsertNode registers a node or updates its registration.
//
// On update it keeps CreateIndex and the fields the servers own rather than
// the client: the event history, the drain flag and the scheduling
// eligibility. A client that restarts and re-registers must not undo an
// operator's drain. A new node gets a "Node registered" event stamped with
// its StatusUpdatedAt (never the clock: this runs in the FSM).
func (s *StateStore) UpsertNode(index uint64, node *structs.Node) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := upsertNodeTxn(txn, index, node); err != nil {
		return err
	}
	return txn.commit()
}

// UpsertNodeWithEvals is UpsertNode and the node-update evaluations of the
// registration, stamped with NodeModifyIndex = index, in one transaction.
func (s *StateStore) UpsertNodeWithEvals(index uint64, node *structs.Node, evals []*structs.Evaluation) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := upsertNodeTxn(txn, index, node); err != nil {
		return err
	}
	for _, e := range evals {
		if e != nil {
			e.NodeModifyIndex = index
		}
	}
	if err := upsertEvalsTxn(txn, index, evals); err != nil {
		return err
	}
	return txn.commit()
}

func upsertNodeTxn(txn *writeTxn, index uint64, node *structs.Node) error {
	if node == nil || node.ID == "" {
		return fmt.Errorf("upsert node: node ID: %w", structs.ErrMissingField)
	}
	existing, err := nodeByIDTxn(txn.Txn, nil, node.ID)
	if err != nil {
		return err
	}
	if existing != nil {
		node.CreateIndex = existing.CreateIndex
		node.Events = existing.Events
		node.Drain = existing.Drain
		node.DrainStrategy = existing.DrainStrategy
		node.LastDrain = existing.LastDrain
		node.SchedulingEligibility = existing.SchedulingEligibility
		if existing.Status == structs.NodeStatusDown && node.Status != structs.NodeStatusDown {
			e := structs.NewNodeEvent(structs.NodeEventSubsystemCluster, structs.NodeRegisterEventReregistered,
				time.Unix(node.StatusUpdatedAt, 0))
			e.CreateIndex = index
			node.Events = slices.Clone(node.Events)
			node.AddEvent(e)
		}
	} else {
		node.CreateIndex = index
		if over := len(node.Events) - structs.MaxRetainedNodeEvents; over > 0 {
			node.Events = slices.Clone(node.Events[over:])
		}
		if len(node.Events) == 0 {
			e := structs.NewNodeEvent(structs.NodeEventSubsystemCluster, structs.NodeRegisterEventRegistered,
				time.Unix(node.StatusUpdatedAt, 0))
			e.CreateIndex = index
			node.Events = []*structs.NodeEvent{e}
		}
	}
	node.ModifyIndex = index
	if err := ensureNodePoolTxn(txn, index, node.NodePool); err != nil {
		return err
	}
	return txn.Insert(TableNodes, node)
}

// DeleteNode removes nodes. It fails, deleting nothing, when one of them does
// not exist. Their allocations stay: the scheduler decides what to do with
// them.
func (s *StateStore) DeleteNode(index uint64, nodeIDs []string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	for _, id := range nodeIDs {
		existing, err := nodeByIDTxn(txn.Txn, nil, id)
		if err != nil {
			return err
		}
		if existing == nil {
			return fmt.Errorf("delete node %q: %w", id, structs.ErrUnknownNode)
		}
		if err := txn.Delete(TableNodes, existing); err != nil {
			return err
		}
	}
	return txn.commit()
}

// DeleteDownNodes removes the nodes the garbage collector found down past
// node_gc_threshold. nodes maps each node ID to the ModifyIndex the
// collector saw. A node is removed only while it is unchanged since (same
// ModifyIndex), still down, and holds no allocation whose client status is
// not terminal: an unknown allocation keeps its node. Nodes that fail these
// checks, or no longer exist, are skipped, so a collection that raced a
// reconnect does nothing. It returns the IDs removed.
func (s *StateStore) DeleteDownNodes(index uint64, nodes map[string]uint64) ([]string, error) {
	txn := s.writeTxn(index)
	defer txn.Abort()
	var deleted []string
	for _, id := range slices.Sorted(maps.Keys(nodes)) {
		node, err := nodeByIDTxn(txn.Txn, nil, id)
		if err != nil {
			return nil, err
		}
		if node == nil || node.ModifyIndex != nodes[id] || node.Status != structs.NodeStatusDown {
			continue
		}
		live, err := hasLiveAllocTxn(txn.Txn, indexNode, id)
		if err != nil {
			return nil, err
		}
		if live {
			continue
		}
		if err := txn.Delete(TableNodes, node); err != nil {
			return nil, err
		}
		deleted = append(deleted, id)
	}
	return deleted, txn.commit()
}

// hasLiveAllocTxn reports whether any allocation found by index and args
// has a client status that is not terminal (pending, running, unknown).
// Server-terminal is not enough: an unknown allocation the scheduler
// stopped may still be running on its disconnected client.
func hasLiveAllocTxn(txn *memdb.Txn, index string, args ...any) (bool, error) {
	iter, err := txn.Get(TableAllocs, index, args...)
	if err != nil {
		return false, fmt.Errorf("allocs lookup: %w", err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if !raw.(*structs.Allocation).ClientTerminalStatus() {
			return true, nil
		}
	}
	return false, nil
}

// UpdateNodeStatus sets a node's status (heartbeat expiry, reconnect,
// registration) and appends event when it is not nil. updatedAt is the
// server's time of the change, carried through raft.
func (s *StateStore) UpdateNodeStatus(index uint64, nodeID, status string, updatedAt int64, event *structs.NodeEvent) error {
	if !structs.ValidNodeStatus(status) {
		return fmt.Errorf("update node %q: status %q: %w", nodeID, status, structs.ErrInvalidRequest)
	}
	return s.updateNode(index, nodeID, event, func(n *structs.Node) error {
		n.Status = status
		n.StatusUpdatedAt = updatedAt
		return nil
	})
}

// UpdateNodeStatuses applies a batch of node status changes in one
// transaction, so a blocking query woken at index sees all of them.
// updatedAt is the leader's time of the batch. A node deleted after the
// change was decided is skipped: one purge must not fail the others.
func (s *StateStore) UpdateNodeStatuses(index uint64, updatedAt int64, updates []*structs.NodeStatusUpdate) error {
	return s.UpdateNodeStatusBatch(index, &structs.NodeBatchUpdateStatusRequest{UpdatedAt: updatedAt, Updates: updates})
}

// UpdateNodeStatusBatch applies a NodeBatchUpdateStatus entry in one
// transaction: the nodes' status changes (as UpdateNodeStatuses), the
// site outages the batch declares with their node events (as
// UpdateSiteOutages), and the node-update evaluations, stamped with
// NodeModifyIndex = index (as UpsertEvals). A reader woken by any of it
// sees all of it: a node disconnected without its site's outage, or
// without the evaluations that act on it, is never visible.
func (s *StateStore) UpdateNodeStatusBatch(index uint64, req *structs.NodeBatchUpdateStatusRequest) error {
	for _, u := range req.Updates {
		if u == nil || !structs.ValidNodeStatus(u.Status) {
			return fmt.Errorf("update node status: %w", structs.ErrInvalidRequest)
		}
	}
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := updateNodeStatusesTxn(txn, index, req.UpdatedAt, req.Updates); err != nil {
		return err
	}
	if req.SiteOutages != nil {
		if err := updateSiteOutagesTxn(txn, index, req.SiteOutages); err != nil {
			return err
		}
	}
	for _, e := range req.Evals {
		if e != nil {
			e.NodeModifyIndex = index
		}
	}
	if err := upsertEvalsTxn(txn, index, req.Evals); err != nil {
		return err
	}
	return txn.commit()
}

func updateNodeStatusesTxn(txn *writeTxn, index uint64, updatedAt int64, updates []*structs.NodeStatusUpdate) error {
	for _, u := range updates {
		err := updateNodeTxn(txn, index, u.NodeID, u.NodeEvent, func(n *structs.Node) error {
			n.Status = u.Status
			n.StatusUpdatedAt = updatedAt
			return nil
		})
		if errors.Is(err, structs.ErrUnknownNode) {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// UpdateNodeEligibility sets whether the scheduler may place work on a node.
// A draining node cannot be made eligible: the drain would be undone behind
// the operator's back.
func (s *StateStore) UpdateNodeEligibility(index uint64, nodeID, eligibility string, event *structs.NodeEvent) error {
	switch eligibility {
	case structs.NodeSchedulingEligible, structs.NodeSchedulingIneligible:
	default:
		return fmt.Errorf("update node %q: eligibility %q: %w", nodeID, eligibility, structs.ErrInvalidRequest)
	}
	return s.updateNode(index, nodeID, event, func(n *structs.Node) error {
		if n.Drain && eligibility == structs.NodeSchedulingEligible {
			return fmt.Errorf("update node %q: cannot make a draining node eligible: %w", nodeID, structs.ErrInvalidRequest)
		}
		n.SchedulingEligibility = eligibility
		return nil
	})
}

// NodeDrainUpdate starts, updates or ends a node drain.
type NodeDrainUpdate struct {
	// Drain starts the drain when true (the node becomes ineligible) and
	// ends it when false.
	Drain bool
	// Strategy is the drain's deadline and options; set with Drain.
	Strategy *structs.DrainStrategy
	// MarkEligible, when ending a drain, makes the node eligible again.
	MarkEligible bool
	// Complete, when ending a drain, says it finished rather than was
	// canceled; LastDrain records which.
	Complete bool
	// Meta and AccessorID are recorded on LastDrain when a drain starts.
	Meta       map[string]string
	AccessorID string
	// UpdatedAt is the server's time of the change, carried through raft.
	UpdatedAt time.Time
	// Event, when not nil, is appended to the node's history.
	Event *structs.NodeEvent
}

// UpdateNodeDrain starts or ends a drain. UpsertNode keeps the drain flag
// of a re-registering node, so this is the way to change it.
func (s *StateStore) UpdateNodeDrain(index uint64, nodeID string, u NodeDrainUpdate) error {
	return s.updateNode(index, nodeID, u.Event, func(n *structs.Node) error {
		wasDraining := n.Drain
		n.Drain = u.Drain
		switch {
		case u.Drain:
			n.SchedulingEligibility = structs.NodeSchedulingIneligible
			n.DrainStrategy = u.Strategy.Copy()
		case u.MarkEligible:
			n.SchedulingEligibility = structs.NodeSchedulingEligible
		}
		if !u.Drain {
			n.DrainStrategy = nil
		}
		n.LastDrain = lastDrain(n.LastDrain, wasDraining, u)
		return nil
	})
}

// lastDrain is the node's LastDrain after u: a new record when a drain
// starts, the same one updated otherwise.
func lastDrain(prev *structs.DrainMetadata, wasDraining bool, u NodeDrainUpdate) *structs.DrainMetadata {
	if u.Drain && (!wasDraining || prev == nil) {
		started := u.UpdatedAt
		if u.Strategy != nil && !u.Strategy.StartedAt.IsZero() {
			started = u.Strategy.StartedAt
		}
		return &structs.DrainMetadata{
			StartedAt: started, UpdatedAt: u.UpdatedAt, Status: structs.DrainStatusDraining,
			AccessorID: u.AccessorID, Meta: maps.Clone(u.Meta),
		}
	}
	if prev == nil {
		return nil
	}
	m := prev.Copy()
	m.UpdatedAt = u.UpdatedAt
	switch {
	case u.Drain:
		if u.Meta != nil {
			m.Meta = maps.Clone(u.Meta)
		}
	case !wasDraining:
		return prev
	case u.Complete:
		m.Status = structs.DrainStatusComplete
	default:
		m.Status = structs.DrainStatusCanceled
	}
	return m
}

// updateNode applies change to a copy of a stored node, appends event and
// writes it back.
func (s *StateStore) updateNode(index uint64, nodeID string, event *structs.NodeEvent, change func(*structs.Node) error) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if err := updateNodeTxn(txn, index, nodeID, event, change); err != nil {
		return err
	}
	return txn.commit()
}

func updateNodeTxn(txn *writeTxn, index uint64, nodeID string, event *structs.NodeEvent, change func(*structs.Node) error) error {
	existing, err := nodeByIDTxn(txn.Txn, nil, nodeID)
	if err != nil {
		return err
	}
	if existing == nil {
		return fmt.Errorf("update node %q: %w", nodeID, structs.ErrUnknownNode)
	}
	n := existing.Copy()
	if err := change(n); err != nil {
		return err
	}
	if event != nil {
		e := event.Copy()
		e.CreateIndex = index
		n.AddEvent(e)
	}
	n.ModifyIndex = index
	return txn.Insert(TableNodes, n)
}

// NodeByID returns the node, or nil when there is none.
func (s *StateStore) NodeByID(ws memdb.WatchSet, id string) (*structs.Node, error) {
	return nodeByIDTxn(s.db.Txn(false), ws, id)
}

func nodeByIDTxn(txn *memdb.Txn, ws memdb.WatchSet, id string) (*structs.Node, error) {
	watchCh, raw, err := txn.FirstWatch(TableNodes, indexID, id)
	if err != nil {
		return nil, fmt.Errorf("node lookup: %w", err)
	}
	ws.Add(watchCh)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.Node), nil
}

// NodesByIDPrefix iterates over the nodes whose ID starts with prefix.
func (s *StateStore) NodesByIDPrefix(ws memdb.WatchSet, prefix string) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableNodes, indexID+prefixSuffix, prefix)
}

// Nodes iterates over every node.
func (s *StateStore) Nodes(ws memdb.WatchSet) (memdb.ResultIterator, error) {
	return getWatch(s.db.Txn(false), ws, TableNodes, indexID)
}

// getWatch runs a memdb lookup and watches the range it covers.
func getWatch(txn *memdb.Txn, ws memdb.WatchSet, table, index string, args ...any) (memdb.ResultIterator, error) {
	iter, err := txn.Get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("%s lookup: %w", table, err)
	}
	ws.Add(iter.WatchCh())
	return iter, nil
}
