package client

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A push that timed out reached servers too busy to answer in time (a
// storm's backlog) or a link that died mid-call. Sent again at once it
// would join the backlog it timed out in, a round every call timeout, for
// as long as the backlog lasts; the updater waits a growing, jittered
// while instead, and still sends the update in the end.
func TestAllocUpdater_BacksOffAfterTimedOutPushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var calls int
		landed := make(chan struct{})
		send := func([]*structs.Allocation) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if calls <= 5 {
				time.Sleep(ClientCallTimeout + allocUpdateBudget) // no answer
				return fmt.Errorf("%w: rpc Node.UpdateAlloc: %w", pool.ErrTransport, pool.ErrCallTimeout)
			}
			close(landed)
			return nil
		}
		u := newAllocUpdater(clock.Real(), send, hclog.NewNullLogger())
		shutdown := make(chan struct{})
		defer close(shutdown)
		go u.run(shutdown)

		start := time.Now()
		u.AllocStateUpdated(&structs.Allocation{ID: "a1"})
		<-landed
		took := time.Since(start)
		timedOut := 5 * (ClientCallTimeout + allocUpdateBudget)
		// base 0.5 s doubling, each wait in the upper half of its step:
		// at least 0.25+0.5+1+2+4 s between the five failures and the success.
		must.GreaterEq(t, timedOut+7750*time.Millisecond, took, must.Sprintf("retried without backing off: %v", took))
		must.Less(t, timedOut+16*time.Second, took, must.Sprintf("the wait stays bounded: %v", took))
		must.Eq(t, 0, u.numPending())
	})
}

// While the hold says the servers would refuse, updates stay queued, even
// when a kick left from long ago (a registration, an earlier gap) is still
// buffered; the kick that comes with the hold's end sends them at once.
func TestAllocUpdater_HoldOutlastsAStaleKick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		held, sent := true, 0
		send := func([]*structs.Allocation) error {
			mu.Lock()
			defer mu.Unlock()
			sent++
			return nil
		}
		u := newAllocUpdater(clock.Real(), send, hclog.NewNullLogger())
		u.hold = func() bool {
			mu.Lock()
			defer mu.Unlock()
			return held
		}
		shutdown := make(chan struct{})
		defer close(shutdown)
		go u.run(shutdown)

		u.retryNow() // stale: nothing was waiting for it
		u.AllocStateUpdated(&structs.Allocation{ID: "a1"})
		time.Sleep(allocSyncHoldMax - time.Second)
		mu.Lock()
		must.Eq(t, 0, sent, must.Sprint("sent while held"))
		held = false
		mu.Unlock()
		u.retryNow()
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		must.Eq(t, 1, sent, must.Sprint("the end of the hold sends at once"))
	})
}
