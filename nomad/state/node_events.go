package state

import (
	"sort"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// AddNodeEvents appends the events clients reported to their nodes, in
// one transaction, each node keeping at most structs.MaxRetainedNodeEvents.
// A node that is gone is an error: the endpoint checked it exists.
func (s *StateStore) AddNodeEvents(index uint64, events map[string][]*structs.NodeEvent) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	ids := make([]string, 0, len(events))
	for id := range events {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for _, e := range events[id] {
			if err := updateNodeTxn(txn, index, id, e, func(*structs.Node) error { return nil }); err != nil {
				return err
			}
		}
	}
	return txn.commit()
}
