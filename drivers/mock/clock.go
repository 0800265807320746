package mock

import "time"

// Clock is the driver's only source of time, so that tests can substitute a
// fake one.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d. It must not call f
	// before returning: the driver arms timers while holding a lock that f
	// takes.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened yet and reports
	// whether it did so.
	Stop() bool
}

// RealClock returns the clock backed by the time package. Under
// testing/synctest it runs on the bubble's fake time.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
