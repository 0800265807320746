package client

import (
	"context"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/clock"
)

// periodic runs fn on the client's clock, first after first, then each
// time after the duration fn returned, until the client shuts down; kick
// on what it returns runs fn again at once (once more, when it is running).
// Between runs no goroutine waits: a timer of the
// clock calls fn, so the housekeeping of an idle client costs no stack,
// which matters to the simulator's thousands of clients in one process.
// Shutdown waits for a run in progress, as for the loops of startLoop.
func (c *Client) periodic(first time.Duration, fn func() time.Duration) *periodicRun {
	p := &periodicRun{c: c, fn: fn}
	c.wg.Add(1)
	p.mu.Lock()
	p.t = c.clock.AfterFunc(first, p.run)
	p.mu.Unlock()
	context.AfterFunc(c.ctx, p.stop)
	return p
}

type periodicRun struct {
	c  *Client
	fn func() time.Duration

	mu sync.Mutex
	// t is the armed timer; kicked asks the run in progress for another
	// at once; ended is set once c.wg has been told. All guarded by mu.
	t      clock.Timer
	kicked bool
	ended  bool
}

func (p *periodicRun) run() {
	var next time.Duration
	if p.c.ctx.Err() == nil {
		next = p.fn()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c.ctx.Err() != nil {
		p.endLocked()
		return
	}
	if p.kicked {
		p.kicked, next = false, 0
	}
	p.t = p.c.clock.AfterFunc(next, p.run)
}

// kick runs fn now, or once more right after the run in progress.
func (p *periodicRun) kick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	if p.t.Stop() {
		p.t = p.c.clock.AfterFunc(0, p.run)
		return
	}
	p.kicked = true
}

// stop runs once the client's context ends: a timer stopped before it
// fired will never run, so the loop ends here; one that fired already is
// running and ends itself.
func (p *periodicRun) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.t.Stop() {
		p.endLocked()
	}
}

func (p *periodicRun) endLocked() {
	if !p.ended {
		p.ended = true
		p.c.wg.Done()
	}
}
