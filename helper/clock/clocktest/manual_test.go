package clocktest

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// The manual clock fires due timers in deadline order, each at its own
// instant, and a stopped or reset timer does not fire early: tests of
// heartbeat TTLs and broker delays rely on exactly that order.
func TestManual_FiresInOrderAtTheirInstants(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := NewManual(start)
	var fired []time.Duration
	record := func() { fired = append(fired, c.Now().Sub(start)) }
	c.AfterFunc(3*time.Second, record)
	c.AfterFunc(time.Second, record)
	stopped := c.AfterFunc(2*time.Second, record)
	reset := c.AfterFunc(time.Second, record)
	ch := c.NewTimer(5 * time.Second)

	must.True(t, stopped.Stop())
	must.True(t, reset.Reset(4*time.Second))
	c.Advance(10 * time.Second)

	must.Eq(t, []time.Duration{time.Second, 3 * time.Second, 4 * time.Second}, fired)
	select {
	case at := <-ch.C():
		must.Eq(t, start.Add(5*time.Second), at)
	default:
		t.Fatal("the channel timer did not fire")
	}
	must.Eq(t, start.Add(10*time.Second), c.Now())
	must.Eq(t, 0, c.Pending())
	must.False(t, stopped.Stop(), must.Sprint("a stopped timer is not pending"))
}
