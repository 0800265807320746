package client

import (
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/clock"
)

// serverClockTolerance is how far the servers' clock, as read through a
// heartbeat, may be from the client's before the client's task times are
// given on the servers' clock instead of its own: well above a
// heartbeat's round trip on a poor link, well below a reschedule delay.
const serverClockTolerance = time.Second

// serverClock is the clock the client's allocations report their times on
// (a task's start and finish, its events): the client's own while it
// agrees with the servers', else the servers' as last read through a
// heartbeat. The servers count from those times (a failed allocation's
// reschedule delay counts from its tasks' finish), so a client whose clock
// is off (an edge box without a battery-backed clock, before NTP reaches
// it) or jumps (NTP stepping it) would otherwise have its allocations
// replaced before their delay, or long after. The reading is carried
// forward by the client's monotonic clock (Clock's readings, immune to
// wall clock steps), so a jump of the wall clock after the reading does
// not move it. Timers are the client's own.
type serverClock struct {
	clock.Clock

	mu sync.Mutex
	// server was the servers' time when the client's clock read local.
	server, local time.Time
	read          bool
}

func newServerClock(c clock.Clock) *serverClock { return &serverClock{Clock: c} }

// observe takes a heartbeat's answer: sent is when the client sent it (a
// reading of Clock), serverUnixNano the answering server's time, zero
// from a server that does not say. The server's time is taken to belong
// to the middle of the round trip.
func (c *serverClock) observe(sent time.Time, serverUnixNano int64) {
	if serverUnixNano == 0 {
		return
	}
	now := c.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.server = time.Unix(0, serverUnixNano).UTC()
	c.local = sent.Add(now.Sub(sent) / 2)
	c.read = true
}

// Now is the client's clock when it agrees with the servers' within
// serverClockTolerance, or has not read theirs yet; else the servers'.
func (c *serverClock) Now() time.Time {
	now := c.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read {
		return now
	}
	theirs := c.server.Add(now.Sub(c.local))
	if d := theirs.Sub(now.Round(0)); d < serverClockTolerance && d > -serverClockTolerance {
		return now
	}
	return theirs
}
