package clock

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"
)

// TestSleep checks that Sleep waits the full duration on the clock and
// returns early, reporting it, when done closes: every retry loop of the
// client relies on it to end promptly at shutdown.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := Real()
		start := c.Now()
		must.True(t, Sleep(c, time.Minute, nil))
		must.Eq(t, time.Minute, c.Now().Sub(start))

		done := make(chan struct{})
		go func() {
			time.Sleep(time.Second)
			close(done)
		}()
		start = c.Now()
		must.False(t, Sleep(c, time.Hour, done))
		must.Eq(t, time.Second, c.Now().Sub(start))
		must.False(t, Sleep(c, 0, done))
		must.True(t, Sleep(c, 0, nil))
	})
}
