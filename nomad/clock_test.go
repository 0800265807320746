package nomad

import (
	"sync"
	"time"
)

// manualClock is a Clock that moves only when told to. Timers fire inside
// Advance, on the caller's goroutine, each at its own instant.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers map[*manualTimer]struct{}
}

type manualTimer struct {
	c   *manualClock
	f   func()
	at  time.Time
	seq uint64
}

var _ Clock = (*manualClock)(nil)

func newManualClock() *manualClock {
	return &manualClock{now: time.Unix(1_700_000_000, 0), timers: map[*manualTimer]struct{}{}}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, f: f}
	c.armLocked(t, d)
	return t
}

func (c *manualClock) armLocked(t *manualTimer, d time.Duration) {
	c.seq++
	t.at, t.seq = c.now.Add(d), c.seq
	c.timers[t] = struct{}{}
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	delete(t.c.timers, t)
	return pending
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	t.c.armLocked(t, d)
	return pending
}

// Advance moves the clock forward by d, firing due timers in order.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		var next *manualTimer
		for t := range c.timers {
			if !t.at.After(end) && (next == nil || t.at.Before(next.at) || (t.at.Equal(next.at) && t.seq < next.seq)) {
				next = t
			}
		}
		if next == nil {
			c.now = end
			c.mu.Unlock()
			return
		}
		if next.at.After(c.now) {
			c.now = next.at
		}
		delete(c.timers, next)
		c.mu.Unlock()
		next.f()
		c.mu.Lock()
	}
}
