package stats

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"
)

// The first sample is the task's lifetime average; later ones cover the
// interval since the previous sample.
func TestSampler_Percent(t *testing.T) {
	start := time.Unix(1000, 0)
	s := NewSampler(start)
	u, sys, total := s.Percent(start.Add(2*time.Second), CPUTime{User: 1e9, System: 5e8, Total: 15e8})
	must.Eq(t, 50.0, u)
	must.Eq(t, 25.0, sys)
	must.Eq(t, 75.0, total)

	_, _, total = s.Percent(start.Add(3*time.Second), CPUTime{User: 3e9, System: 5e8, Total: 35e8})
	must.Eq(t, 200.0, total) // two cores busy for the last second
}

// Whatever the counters do, a percentage is never negative: a sum over
// processes drops when one exits.
func TestSampler_NeverNegative(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		now := time.Unix(0, 0)
		s := NewSampler(now)
		for range rapid.IntRange(1, 20).Draw(t, "samples") {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(time.Minute)).Draw(t, "dt")))
			c := rapid.Uint64Range(0, 1e12).Draw(t, "cpu")
			u, sys, total := s.Percent(now, CPUTime{User: c, System: c / 2, Total: c + c/2})
			if u < 0 || sys < 0 || total < 0 {
				t.Fatalf("negative: %v %v %v", u, sys, total)
			}
		}
	})
}
