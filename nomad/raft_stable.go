package nomad

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// closingStable is the raft stable store of a server whose stores close on
// shutdown. Raft cannot be asked to stop every writer first: a heartbeat
// runs on the transport's connection goroutine, and one already past
// raft's shutdown check writes the term after Shutdown returned. Raft
// panics when that write fails ("failed to save current term: database
// not open"), and to answer it as stored would ack a term that is not.
// So close waits for the calls in flight, and a call that comes after
// parks: it never returns, neither stored nor failed. Its raft is shut
// down and its connection closed, so nothing waits for the answer; at
// most one goroutine per connection of the raft layer is left so, for
// the rest of the process.
//
// A write that fails (the disk full, or failing with I/O errors) is tried
// again until it is stored, with a backoff up to stableRetryMax, instead of
// failing: raft panics on a term it could not save, and a server whose
// disk fails for a while must not crash on the next election but wait,
// with its term and vote not yet acknowledged to anyone, and go on once
// the disk takes writes again. Each try is a whole new write of the key (a
// new bolt transaction), never a retried sync of the failed one.
type closingStable struct {
	store  raft.StableStore
	logger hclog.Logger

	mu     sync.RWMutex
	closed bool
	// closing is closed by close, waking writes waiting to try again.
	closing   chan struct{}
	closeOnce sync.Once
	// parked is what a call after close waits on: nil (forever) but in
	// the test of the parking.
	parked chan struct{}
}

// Retries of a failed stable-store write.
const (
	stableRetryMin = 10 * time.Millisecond
	stableRetryMax = time.Second
)

var _ raft.StableStore = (*closingStable)(nil)

// errUnparked is what a parked call returns when the test lets it go.
var errUnparked = errors.New("raft stable store closed")

// enter holds off close until the call leaves (the caller unlocks mu);
// after close it parks.
func (c *closingStable) enter() error {
	c.mu.RLock()
	if !c.closed {
		return nil
	}
	c.mu.RUnlock()
	<-c.parked
	return errUnparked
}

func (c *closingStable) Set(key, val []byte) error {
	return c.write(key, func() error { return c.store.Set(key, val) })
}

// write runs put until it succeeds, or parks once the store closes. Each
// try holds off close only while it runs.
func (c *closingStable) write(key []byte, put func() error) error {
	wait := stableRetryMin
	for tries := 1; ; tries++ {
		if err := c.enter(); err != nil {
			return err
		}
		err := put()
		c.mu.RUnlock()
		if err == nil {
			if tries > 1 && c.logger != nil {
				c.logger.Info("raft stable store write succeeded again", "key", string(key), "tries", tries)
			}
			return nil
		}
		if tries == 1 && c.logger != nil {
			c.logger.Error("raft stable store write failed; trying again until the disk takes it", "key", string(key), "error", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.closingCh():
			t.Stop()
		}
		wait = min(2*wait, stableRetryMax)
	}
}

func (c *closingStable) closingCh() chan struct{} {
	c.closeOnce.Do(func() { c.closing = make(chan struct{}) })
	return c.closing
}

func (c *closingStable) Get(key []byte) ([]byte, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	return c.store.Get(key)
}

func (c *closingStable) SetUint64(key []byte, val uint64) error {
	return c.write(key, func() error { return c.store.SetUint64(key, val) })
}

func (c *closingStable) GetUint64(key []byte) (uint64, error) {
	if err := c.enter(); err != nil {
		return 0, err
	}
	defer c.mu.RUnlock()
	return c.store.GetUint64(key)
}

// close waits for the calls in flight and parks every later one; the
// store under it may be closed once it returns.
func (c *closingStable) close() {
	c.mu.Lock()
	was := c.closed
	c.closed = true
	c.mu.Unlock()
	if !was {
		close(c.closingCh())
	}
}
