package client

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
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

	// A heartbeat that took 6 s (retried across servers, or waiting on an
	// election) and was answered at its end: taken at its middle, it would
	// put the servers 3 s ahead of where they are. The fast reading held
	// stays, until it has aged past the slow one's 3 s (300 s later).
	c.observe(local.Now(), local.Now().Add(-20*time.Minute).UnixNano())
	sent = local.Now()
	local.Advance(6 * time.Second)
	c.observe(sent, local.Now().Add(-20*time.Minute).UnixNano())
	must.Eq(t, local.Now().Add(-20*time.Minute), c.Now(), must.Sprint("a slow round trip does not replace a fast one"))
	local.Advance(300 * time.Second)
	sent = local.Now()
	local.Advance(6 * time.Second)
	c.observe(sent, local.Now().Add(-20*time.Minute).UnixNano())
	must.Eq(t, local.Now().Add(-20*time.Minute+3*time.Second), c.Now(), must.Sprint("until the fast one has aged past it"))
}

// A client takes the servers' time from its registration's answer, before
// any heartbeat is answered: one restarted with its clock off reports its
// first task times on the servers' clock too. The heartbeat here is never
// answered (its commit is held an hour), so only the registration can have
// told the client.
func TestClient_RegistrationTakesTheServersTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := clienttest.NewFakeServer()
		defer srv.Close()
		srv.SetServerClockAhead(10 * time.Minute)
		srv.SetHeartbeatCommitDelay(time.Hour)
		c := newTestClient(t, srv, testClientOpts{})
		defer c.Destroy()
		synctest.Wait()
		must.Eq(t, 1, srv.Registrations())
		ahead := time.Until(c.serverClock.Now())
		must.True(t, ahead > 9*time.Minute && ahead < 11*time.Minute, must.Sprint("the client's server clock is ", ahead, " ahead"))
	})
}
