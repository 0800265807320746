package nomad

import (
	"sync"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Default windows of the leader's write batchers. Short against a
// heartbeat TTL (seconds) and a client's 200 ms allocation sync, long
// enough that a site of nodes returning in the same second shares a few
// raft entries and a few evaluations per job instead of several per node.
const (
	defaultNodeStatusBatchWindow  = 20 * time.Millisecond
	defaultAllocUpdateBatchWindow = 20 * time.Millisecond

	// Bounds on one batch, so a raft entry stays small enough to
	// replicate quickly: a node status change is about 200 bytes, an
	// allocation update with its task states about a kilobyte.
	maxNodeStatusBatch  = 2048
	maxAllocUpdateBatch = 1024
)

// batchResult is what a batch's commit returns to every submitter.
type batchResult struct {
	// Index is the raft index of the batch's entry.
	Index uint64
	// Evals are the evaluations committed with the batch.
	Evals []*structs.Evaluation
}

// updateBatcher gathers writes submitted within a window and commits them
// together: the first submission of a batch arms a timer of window on
// the clock; a batch is also committed as soon as its weight reaches
// maxWeight, and at once when window is zero. Batches are committed one at a time in the order they were
// opened, so a later submission never lands in raft before an earlier
// one; while one commits, the next batch keeps filling, so the busier the
// leader the fewer entries per change.
type updateBatcher[T any] struct {
	clock     Clock
	window    time.Duration
	maxWeight int
	commit    func(items []T) (batchResult, error)

	mu    sync.Mutex
	queue []*updateBatch[T] // opened, not yet taken for commit; the last may be open
	open  *updateBatch[T]   // accepting submissions

	// commitLock is held while a batch is taken from the queue and
	// committed: that is what keeps commits in order. A channel, not a
	// mutex, so that a submitter waiting for it is durably blocked under
	// testing/synctest.
	commitLock chan struct{}
}

// newUpdateBatcher returns a batcher committing through commit.
func newUpdateBatcher[T any](c Clock, window time.Duration, maxWeight int, commit func([]T) (batchResult, error)) *updateBatcher[T] {
	return &updateBatcher[T]{clock: c, window: window, maxWeight: maxWeight, commit: commit, commitLock: make(chan struct{}, 1)}
}

// updateBatch is one batch; done is closed once its commit returned.
type updateBatch[T any] struct {
	items  []T
	weight int
	taken  bool
	done   chan struct{}
	res    batchResult
	err    error
}

// wait blocks until the batch was committed, and returns the commit's
// result.
func (b *updateBatch[T]) wait() (batchResult, error) {
	<-b.done
	return b.res, b.err
}

// submit adds an item of the given weight to the open batch and returns
// that batch, for the caller to wait on.
func (u *updateBatcher[T]) submit(item T, weight int) *updateBatch[T] {
	u.mu.Lock()
	b := u.open
	if b == nil {
		b = &updateBatch[T]{done: make(chan struct{})}
		u.open = b
		u.queue = append(u.queue, b)
		if u.window > 0 {
			u.clock.AfterFunc(u.window, func() { u.flush(b) })
		}
	}
	b.items = append(b.items, item)
	b.weight += weight
	full := u.maxWeight > 0 && b.weight >= u.maxWeight
	if full {
		u.open = nil
	}
	u.mu.Unlock()
	if full || u.window <= 0 {
		// Without a window the submitter commits; whatever arrives while
		// it waits for, or runs, an earlier commit joins its batch.
		u.flush(b)
	}
	return b
}

// flush commits, in order, every batch opened up to and including b that
// no other flush has taken. It returns at once when b was taken already.
func (u *updateBatcher[T]) flush(b *updateBatch[T]) {
	u.commitLock <- struct{}{}
	defer func() { <-u.commitLock }()
	for {
		u.mu.Lock()
		if b.taken || len(u.queue) == 0 {
			u.mu.Unlock()
			return
		}
		next := u.queue[0]
		u.queue[0] = nil
		u.queue = u.queue[1:]
		next.taken = true
		if u.open == next {
			u.open = nil
		}
		u.mu.Unlock()

		next.res, next.err = u.commit(next.items)
		close(next.done)
		if next == b {
			return
		}
	}
}
