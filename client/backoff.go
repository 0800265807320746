package client

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// backoff yields growing, jittered retry delays. Jitter matters on a fleet:
// when a cell tower comes back, its nodes must not all retry in lockstep.
type backoff struct {
	base, max time.Duration
	attempt   int
}

// next returns the delay before the next retry: base doubled per attempt up
// to max, then a uniformly random point in its upper half.
func (b *backoff) next() time.Duration {
	d := b.max
	if b.attempt < 32 {
		if shifted := b.base << b.attempt; shifted > 0 && shifted < b.max {
			d = shifted
		}
	}
	b.attempt++
	return d/2 + jitter(d/2)
}

// reset starts over after a success.
func (b *backoff) reset() { b.attempt = 0 }

// jitter returns a random duration in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// linkRetry is the mean time between two attempts to reach servers that do
// not answer. It does not grow with the outage: the first attempt after
// the link comes back is what decides how fast a node heals, and an attempt
// into a dead link costs one TCP SYN. The spread of ±25% keeps the nodes
// behind one cell tower from retrying in step when it comes back.
const linkRetry = time.Second

// linkRetryDelay returns when to try again after an attempt that started
// elapsed ago found no server: a jittered linkRetry counted from the start
// of that attempt, so that an attempt which spent its time in a dial
// timeout is followed at once by a fresh dial.
func linkRetryDelay(elapsed time.Duration) time.Duration {
	return max(0, linkRetry*3/4+jitter(linkRetry/2)-elapsed)
}

// unreachable reports whether err means that no server could answer (the
// link failed, the servers have no leader yet, or the one asked is
// stopping), as opposed to a server
// refusing the request.
func unreachable(err error) bool {
	return errors.Is(err, pool.ErrTransport) || errors.Is(err, structs.ErrNotLeader) || errors.Is(err, structs.ErrServerShutdown)
}

// retrier chooses the wait after a failed call: linkRetryDelay while the
// servers cannot be reached, growing backoff when one refused the call.
type retrier struct {
	refused backoff
}

func newRetrier(base, max time.Duration) retrier {
	return retrier{refused: backoff{base: base, max: max}}
}

// next returns the wait after err from an attempt that took elapsed.
func (r *retrier) next(err error, elapsed time.Duration) time.Duration {
	if unreachable(err) {
		return linkRetryDelay(elapsed)
	}
	return r.refused.next()
}

func (r *retrier) reset() { r.refused.reset() }

// outageLogMax is the longest a client that cannot reach its servers goes
// without saying so.
const outageLogMax = 5 * time.Minute

// outage tracks a run of failed calls so that it is logged once when it
// starts and then at doubling intervals: a client retrying every second for
// an hour writes a dozen lines, not thousands.
type outage struct {
	since   time.Time // zero while calls succeed
	nextLog time.Duration
}

// failed records a failure at now and reports whether to log it.
func (o *outage) failed(now time.Time) bool {
	if o.since.IsZero() {
		o.since, o.nextLog = now, linkRetry
		return true
	}
	age := now.Sub(o.since)
	if age < o.nextLog {
		return false
	}
	o.nextLog = min(2*age, age+outageLogMax)
	return true
}

// ended records a success; it returns how long the outage lasted, or zero
// if there was none.
func (o *outage) ended(now time.Time) time.Duration {
	if o.since.IsZero() {
		return 0
	}
	d := now.Sub(o.since)
	o.since = time.Time{}
	return d
}
