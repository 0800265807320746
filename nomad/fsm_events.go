package nomad

import (
	"sync"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/stream"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// fsmEvents gathers what the state store commits while the FSM applies one
// raft entry and publishes it, as one batch at the entry's index, once the
// entry is applied. The store calls onCommit only after a transaction
// commits, so a failed write publishes nothing; an entry whose second write
// fails still publishes its first, which did commit.
//
// Every server's FSM applies every entry, so followers publish the same
// batches as the leader.
type fsmEvents struct {
	broker *stream.EventBroker

	mu       sync.Mutex
	applying bool
	pending  memdb.Changes
}

func newFSMEvents(broker *stream.EventBroker) *fsmEvents {
	return &fsmEvents{broker: broker}
}

// onCommit is the state store's OnCommit hook. A write outside an entry
// (tests write to the store directly) is published at once.
func (e *fsmEvents) onCommit(index uint64, changes memdb.Changes) {
	e.mu.Lock()
	if e.applying {
		e.pending = append(e.pending, changes...)
		e.mu.Unlock()
		return
	}
	e.mu.Unlock()
	e.broker.Publish(stream.FromWrite(index, changes))
}

// begin starts collecting the changes of one entry.
func (e *fsmEvents) begin() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applying, e.pending = true, nil
}

// end publishes the changes of the entry applied since begin.
func (e *fsmEvents) end(t structs.MessageType, index uint64) {
	e.mu.Lock()
	changes := e.pending
	e.applying, e.pending = false, nil
	e.mu.Unlock()
	if len(changes) > 0 {
		e.broker.Publish(stream.FromEntry(t, index, changes))
	}
}
