package client

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
)

// The allocations' clock is the client's while it agrees with the
// servers' (within a second) or has not read theirs, and the servers' when
// it does not, carried forward by the client's clock: a task's finish is
// then on the clock the servers count reschedule delays on.
func TestServerClock(t *testing.T) {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	local := clocktest.NewManual(start)
	c := newServerClock(local)
	must.Eq(t, start, c.Now(), must.Sprint("no reading yet: the client's own"))

	sent := local.Now()
	local.Advance(200 * time.Millisecond)
	c.observe(sent, start.Add(10*time.Minute+100*time.Millisecond).UnixNano())
	must.Eq(t, start.Add(10*time.Minute+200*time.Millisecond), c.Now(), must.Sprint("the servers' time at the middle of the round trip, carried forward"))
	local.Advance(5 * time.Second)
	must.Eq(t, start.Add(10*time.Minute+5200*time.Millisecond), c.Now())

	c.observe(local.Now(), local.Now().Add(-20*time.Minute).UnixNano())
	must.Eq(t, local.Now().Add(-20*time.Minute), c.Now(), must.Sprint("behind as well as ahead"))

	c.observe(local.Now(), local.Now().Add(300*time.Millisecond).UnixNano())
	must.Eq(t, local.Now(), c.Now(), must.Sprint("within the tolerance: the client's own"))

	c.observe(local.Now(), 0)
	must.Eq(t, local.Now(), c.Now(), must.Sprint("a server that does not say changes nothing"))
}
