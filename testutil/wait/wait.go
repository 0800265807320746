// Package wait holds the two ways a test waits for a condition: Eventually
// on the fake clock of a testing/synctest bubble, and Poll on real time
// for what no bubble can hold (other processes, real sockets, the kernel).
// Both fail the test with what the condition last saw, so a timeout says
// where things stood rather than only that they did not finish.
//
// It imports nothing of the module, so every package's tests can use it,
// the client's and the drivers' included.
package wait

import (
	"testing"
	"testing/synctest"
	"time"
)

// Eventually checks cond every second of fake time until it holds; past
// within it fails with what it last saw. Call it inside a synctest bubble:
// there the checks cost no real time, so within can be as long as the
// behaviour needs, and each check first waits until every goroutine of the
// bubble is blocked, so it reads a settled state.
func Eventually(t testing.TB, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var seen string
	for deadline := time.Now().Add(within); ; {
		synctest.Wait()
		ok, s := cond()
		if ok {
			return
		}
		seen = s
		if !time.Now().Before(deadline) {
			t.Fatalf("%s: not within %v of fake time; last saw: %s", what, within, seen)
		}
		time.Sleep(time.Second)
	}
}

// PollInterval is how often Poll checks: short enough that a measured
// latency (a heal, a start) is not rounded up by much, long enough that a
// check through an HTTP API does not load what it measures.
const PollInterval = 20 * time.Millisecond

// Poll checks cond every PollInterval of real time until it holds and
// returns how long that took; past timeout it fails the test with what
// cond last saw. It is for waits on real processes, where there is no
// event to wait on; code on the injected clock is tested in a bubble with
// Eventually instead.
func Poll(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var seen string
	for {
		ok, s := cond()
		if ok {
			return time.Since(start)
		}
		seen = s
		if time.Since(start) >= timeout {
			t.Fatalf("%s: not within %v; last saw: %s", what, timeout, seen)
			return 0
		}
		time.Sleep(PollInterval)
	}
}
