package nomad

import "time"

// Clock is the server's source of time for timers that decide behaviour
// (nack timeouts, delayed evaluations, dequeue timeouts). It is injected so
// tests can replace it; the real clock also runs on synctest's fake time
// because it is built on the time package.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is the handle of a Clock.AfterFunc call. Stop and Reset report
// whether the timer was still pending, exactly as *time.Timer does: false
// means f has already been started (or the timer was stopped).
type Timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// RealClock is the Clock backed by the time package.
type RealClock struct{}

var _ Clock = RealClock{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

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
