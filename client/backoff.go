package client

import (
	"math/rand/v2"
	"time"
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
