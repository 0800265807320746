package nomad

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
)

// The one watch loop of the leader's watchers runs its pass again when what
// the pass read changes, when the pass's own deadline comes, retry after a
// failed pass and when a restore abandons the store, and nothing else wakes
// it; it returns once stop closes. The drainer, the deployment watcher, the
// periodic dispatcher and the site outage detector rely on each wake.
func TestWatchLoop_WakesAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		newStore := func() *state.StateStore {
			st, err := state.NewStateStore(nil)
			must.NoError(t, err)
			return st
		}
		var (
			mu     sync.Mutex
			st     = newStore()
			passes int
			next   time.Duration // what the next pass returns
			fail   error
		)
		current := func() *state.StateStore { mu.Lock(); defer mu.Unlock(); return st }
		set := func(d time.Duration, err error) { mu.Lock(); defer mu.Unlock(); next, fail = d, err }
		count := func() int { mu.Lock(); defer mu.Unlock(); return passes }
		loop := watchLoop{
			state: current, clock: clock.Real(), logger: hclog.NewNullLogger(),
			failed: "pass failed", retry: time.Minute,
			pass: func(ws memdb.WatchSet) (time.Duration, error) {
				if _, err := current().Nodes(ws); err != nil {
					return 0, err
				}
				mu.Lock()
				defer mu.Unlock()
				passes++
				return next, fail
			},
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go func() { defer close(done); loop.run(stop) }()
		synctest.Wait()
		must.Eq(t, 1, count())

		time.Sleep(time.Hour)
		synctest.Wait()
		must.Eq(t, 1, count(), must.Sprint("no deadline and no change: no pass"))

		set(10*time.Minute, nil)
		must.NoError(t, current().UpsertNode(10, mock.Node()))
		synctest.Wait()
		must.Eq(t, 2, count(), must.Sprint("a change of what the pass read"))

		set(0, errors.New("no quorum"))
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		must.Eq(t, 3, count(), must.Sprint("the deadline the pass returned"))

		set(0, nil)
		time.Sleep(time.Minute)
		synctest.Wait()
		must.Eq(t, 4, count(), must.Sprint("retry after the failed pass"))

		old := current()
		mu.Lock()
		st = newStore()
		mu.Unlock()
		old.Abandon()
		synctest.Wait()
		must.Eq(t, 5, count(), must.Sprint("the store abandoned by a restore"))

		close(stop)
		<-done
	})
}
