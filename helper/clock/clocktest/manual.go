// Package clocktest holds the manual clock, the one fake of package clock,
// for tests that cannot run inside a testing/synctest bubble.
package clocktest

import (
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/clock"
)

// Manual is a clock.Clock that moves only when Advance is called. Due
// timers fire inside Advance, on the caller's goroutine, each at its own
// instant and in deadline order (ties in arming order); channel timers
// receive their time, AfterFunc timers call their function.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers map[*timer]struct{}
}

var _ clock.Clock = (*Manual)(nil)

// NewManual returns a manual clock reading start.
func NewManual(start time.Time) *Manual {
	return &Manual{now: start, timers: map[*timer]struct{}{}}
}

type timer struct {
	c   *Manual
	f   func()
	ch  chan time.Time
	at  time.Time
	seq uint64
}

// Now implements clock.Clock.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer implements clock.Clock.
func (c *Manual) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	c.armLocked(t, d)
	return t
}

// AfterFunc implements clock.Clock.
func (c *Manual) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, f: f}
	c.armLocked(t, d)
	return t
}

func (c *Manual) armLocked(t *timer, d time.Duration) {
	c.seq++
	t.at, t.seq = c.now.Add(d), c.seq
	c.timers[t] = struct{}{}
}

// Pending returns how many timers are armed.
func (c *Manual) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

func (t *timer) C() <-chan time.Time { return t.ch }

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	delete(t.c.timers, t)
	return pending
}

func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, pending := t.c.timers[t]
	t.c.armLocked(t, d)
	return pending
}

// Advance moves the clock forward by d, firing due timers in order.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		var next *timer
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
		at := c.now
		c.mu.Unlock()
		if next.f != nil {
			next.f()
		} else {
			select {
			case next.ch <- at:
			default:
			}
		}
		c.mu.Lock()
	}
}

// Boot is a clock.BootClock for tests: its boot clock advances with the
// clock it is given (a Manual, or the real clock inside a testing/synctest
// bubble), and Reboot starts a new boot.
type Boot struct {
	c     clock.Clock
	mu    sync.Mutex
	id    string
	start time.Time
	off   bool
}

var _ clock.BootClock = (*Boot)(nil)

// NewBoot returns a boot clock on c whose boot id began now.
func NewBoot(c clock.Clock, id string) *Boot { return &Boot{c: c, id: id, start: c.Now()} }

// Reboot starts boot id now: later readings belong to it.
func (b *Boot) Reboot(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.id, b.start = id, b.c.Now()
}

// SetUnavailable makes ReadBoot report no boot clock, as on a platform
// without one.
func (b *Boot) SetUnavailable(off bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.off = off
}

// ReadBoot implements clock.BootClock.
func (b *Boot) ReadBoot() (clock.BootReading, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.off {
		return clock.BootReading{}, false
	}
	return clock.BootReading{BootID: b.id, SinceBoot: b.c.Now().Sub(b.start)}, true
}
