package nomad

import (
	"time"

	"github.com/nomad-edge/nomad/helper/clock"
)

// Clock and Timer are the one clock of package clock, shared with the
// client and drivers: the server's timers that decide behaviour (nack
// timeouts, delayed evaluations, heartbeat TTLs, GC intervals) run on it,
// so tests can fake it or run under testing/synctest.
type (
	Clock = clock.Clock
	Timer = clock.Timer
)

// clockExpiry returns a channel closed after d on clock, or nil (never
// closed) when d <= 0, and a function releasing the timer.
func clockExpiry(clock Clock, d time.Duration) (<-chan struct{}, func()) {
	if d <= 0 {
		return nil, func() {}
	}
	ch := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(ch) })
	return ch, func() { t.Stop() }
}
