package client

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

const (
	// allocSyncInterval is the shortest time between two Node.UpdateAlloc
	// calls: a burst of task events becomes one call per interval, with
	// the newest state of each allocation.
	allocSyncInterval = 200 * time.Millisecond

	allocSyncRetryBase = 500 * time.Millisecond
	allocSyncRetryMax  = 15 * time.Second

	// allocSyncHoldMax bounds how long a hold keeps updates queued: past
	// it they are sent (and, refused, retried with backoff) before the
	// hold is asked again, so a heartbeat that fails for good never
	// silences the allocations' reports. Long against an outage's usual
	// length: with 15 s, the updates a site's nodes had in flight when
	// their cell went silent were all sent 15 s later, into servers that
	// still held the nodes disconnected.
	allocSyncHoldMax = time.Minute
)

// allocUpdater batches allocation state changes into Node.UpdateAlloc
// calls. An update is dropped only once the servers acknowledged it or a
// newer update for the same allocation replaced it; while the servers are
// unreachable updates queue up (one per allocation) and are retried with
// backoff.
type allocUpdater struct {
	clock  clock.Clock
	send   func(updates []*structs.Allocation) error
	logger hclog.Logger
	// onSent, when set, is called after every batch the servers took.
	onSent func()
	// hold, when set and true, keeps batches queued: the servers would
	// refuse them now (see Client.holdPushes). The updater waits for a
	// retryNow, or at most allocSyncHoldMax, and asks again.
	hold func() bool

	mu      sync.Mutex
	pending map[string]*structs.Allocation
	// inflight are the allocations of the batch being sent.
	inflight map[string]bool

	wake chan struct{} // something is pending
	kick chan struct{} // retry now: the link is back
}

func newAllocUpdater(c clock.Clock, send func([]*structs.Allocation) error, logger hclog.Logger) *allocUpdater {
	return &allocUpdater{
		clock:   c,
		send:    send,
		logger:  logger,
		pending: make(map[string]*structs.Allocation),
		wake:    make(chan struct{}, 1),
		kick:    make(chan struct{}, 1),
	}
}

// AllocStateUpdated implements allocrunner.StateUpdater. It never blocks.
func (u *allocUpdater) AllocStateUpdated(a *structs.Allocation) {
	u.mu.Lock()
	u.pending[a.ID] = a
	u.mu.Unlock()
	signal(u.wake)
}

// retryNow cuts a retry backoff short, for when a heartbeat has just
// succeeded after failures.
func (u *allocUpdater) retryNow() { signal(u.kick) }

// forget drops what is queued for an allocation the servers no longer have.
func (u *allocUpdater) forget(allocID string) {
	u.mu.Lock()
	delete(u.pending, allocID)
	u.mu.Unlock()
}

// delivered reports whether the servers have taken every update of the
// allocation: nothing is queued for it, nor being sent.
func (u *allocUpdater) delivered(allocID string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, queued := u.pending[allocID]
	return !queued && !u.inflight[allocID]
}

// numPending returns how many allocations have an update queued.
func (u *allocUpdater) numPending() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.pending)
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run sends batches until shutdownCh is closed.
func (u *allocUpdater) run(shutdownCh <-chan struct{}) {
	r := newRetrier(allocSyncRetryBase, allocSyncRetryMax)
	for {
		select {
		case <-u.wake:
		case <-shutdownCh:
			return
		}
		if !u.waitHold(shutdownCh) {
			return
		}
		u.mu.Lock()
		batch := u.pending
		u.pending = make(map[string]*structs.Allocation, len(batch))
		u.inflight = make(map[string]bool, len(batch))
		for id := range batch {
			u.inflight[id] = true
		}
		u.mu.Unlock()
		if len(batch) == 0 {
			continue
		}

		updates := make([]*structs.Allocation, 0, len(batch))
		for _, a := range batch {
			updates = append(updates, a)
		}
		wait := allocSyncInterval
		start := u.clock.Now()
		err := u.send(updates)
		if err != nil {
			u.requeue(batch)
		}
		// After the requeue: a refused update is never seen delivered.
		u.mu.Lock()
		u.inflight = nil
		u.mu.Unlock()
		if err != nil {
			wait = r.next(err, u.clock.Now().Sub(start))
			if errors.Is(err, pool.ErrCallTimeout) {
				// The servers are reachable but slow (a storm's backlog),
				// or the link died mid-call: sent again at once, the push
				// would join the backlog it timed out in. A growing,
				// jittered wait lets it drain; a heartbeat that ends an
				// outage still kicks the retry (retryNow).
				wait = r.refused.next()
			}
			// The heartbeat loop reports an unreachable link; a refusal
			// is this loop's own news.
			log := u.logger.Warn
			if unreachable(err) {
				log = u.logger.Debug
			}
			log("failed to update allocations; will retry", "allocs", len(updates), "retry_in", wait, "error", err)
			signal(u.wake)
		} else {
			r.reset()
			u.logger.Debug("updated allocations", "allocs", len(updates))
			if u.onSent != nil {
				u.onSent()
			}
		}
		if !u.sleep(wait, shutdownCh) {
			return
		}
	}
}

// waitHold waits while the hold says so, at most allocSyncHoldMax; a kick
// only makes it ask again (a kick left from long ago must not release the
// updates into a refusal). It returns false on shutdown.
func (u *allocUpdater) waitHold(shutdownCh <-chan struct{}) bool {
	if u.hold == nil || !u.hold() {
		return true
	}
	deadline := u.clock.Now().Add(allocSyncHoldMax)
	for u.hold() {
		left := deadline.Sub(u.clock.Now())
		if left <= 0 {
			return true
		}
		if !u.sleep(left, shutdownCh) {
			return false
		}
	}
	return true
}

// requeue puts a failed batch back, except where a newer update arrived
// meanwhile.
func (u *allocUpdater) requeue(batch map[string]*structs.Allocation) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for id, a := range batch {
		if _, newer := u.pending[id]; !newer {
			u.pending[id] = a
		}
	}
}

// sleep waits d, or less if kicked; it returns false on shutdown.
func (u *allocUpdater) sleep(d time.Duration, shutdownCh <-chan struct{}) bool {
	t := u.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-u.kick:
	case <-shutdownCh:
		return false
	}
	return true
}

// sendAllocUpdates is the batcher's Node.UpdateAlloc call.
func (c *Client) sendAllocUpdates(updates []*structs.Allocation) error {
	req := &structs.AllocUpdateRequest{
		NodeID:       c.NodeID(),
		Alloc:        updates,
		WriteRequest: structs.WriteRequest{Region: c.cfg.Region, AuthToken: c.secretID()},
	}
	var resp structs.GenericResponse
	return c.rpc(methodUpdateAlloc, req, &resp)
}
