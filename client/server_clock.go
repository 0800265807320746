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
// heartbeat (the reading with the shortest round trip, serverClockAging).
// The servers count from those times (a failed allocation's
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
	// server was the servers' time when the client's clock read local,
	// give or take half, the reading's round trip halved.
	server, local time.Time
	half          time.Duration
	read          bool
}

// serverClockAging is how fast a reading's error bound grows with its
// age: by a hundredth of it. The servers' time in an answer may belong to
// any moment of the round trip (a heartbeat retried across servers, or
// waiting on an election, comes back seconds after it was sent), so a
// reading is only as good as half its round trip; a slower one replaces
// it only once it has aged past that (100 s for a 2 s trip
// over a fast one), and a reading as fast or faster always does, which
// follows a step of the servers' clock at the next heartbeat.
const serverClockAging = 100

func newServerClock(c clock.Clock) *serverClock { return &serverClock{Clock: c} }

// observe takes a heartbeat's answer: sent is when the client sent it (a
// reading of Clock), serverUnixNano the answering server's time, zero
// from a server that does not say. The server's time is taken to belong
// to the middle of the round trip; it is kept unless the reading held is
// the better one (serverClockAging).
func (c *serverClock) observe(sent time.Time, serverUnixNano int64) {
	if serverUnixNano == 0 {
		return
	}
	now := c.Clock.Now()
	half := now.Sub(sent) / 2
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read && half > c.half+now.Sub(c.local)/serverClockAging {
		return
	}
	c.server = time.Unix(0, serverUnixNano).UTC()
	c.local = sent.Add(half)
	c.half = half
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
