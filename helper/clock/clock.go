package clock

import "time"

// Clock tells the time and makes timers. Implementations must be safe for
// concurrent use.
type Clock interface {
	// Now returns the current time. The real clock's readings carry a
	// monotonic component, so durations between them are immune to wall
	// clock steps (NTP corrections on a node that was offline for hours).
	Now() time.Time

	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer

	// AfterFunc calls f in its own goroutine after d, like time.AfterFunc.
	// It never calls f before returning, so a caller may arm a timer while
	// holding a lock that f takes. The returned Timer's C is nil.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a one-shot timer, like time.Timer. Stop and Reset report
// whether the timer was still pending, exactly as *time.Timer's do: false
// means it has fired (or its function has started) or was stopped.
type Timer interface {
	// C receives the time once the timer fires; nil for AfterFunc timers.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
	// Reset rearms the timer to fire after d.
	Reset(d time.Duration) bool
}

// Real returns the clock backed by the time package. Under testing/synctest
// it follows the bubble's fake time. A binary built with the faultclock tag
// may shift its wall readings instead (fault_on.go); the production binary
// has no such code.
func Real() Clock { return withFault(realClock{}) }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Sleep waits for d on c, returning false early if done is closed first.
func Sleep(c Clock, d time.Duration, done <-chan struct{}) bool {
	if d <= 0 {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-done:
		return false
	}
}
