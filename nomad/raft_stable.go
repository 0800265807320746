package nomad

import (
	"errors"
	"sync"

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
type closingStable struct {
	store raft.StableStore

	mu     sync.RWMutex
	closed bool
	// parked is what a call after close waits on: nil (forever) but in
	// the test of the parking.
	parked chan struct{}
}

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
	if err := c.enter(); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	return c.store.Set(key, val)
}

func (c *closingStable) Get(key []byte) ([]byte, error) {
	if err := c.enter(); err != nil {
		return nil, err
	}
	defer c.mu.RUnlock()
	return c.store.Get(key)
}

func (c *closingStable) SetUint64(key []byte, val uint64) error {
	if err := c.enter(); err != nil {
		return err
	}
	defer c.mu.RUnlock()
	return c.store.SetUint64(key, val)
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
	c.closed = true
	c.mu.Unlock()
}
