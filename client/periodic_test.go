package client

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock"
)

// A periodic loop runs on its schedule with no goroutine of its own
// between runs, runs at once when kicked (once more when kicked while
// running), and ends with the client: Shutdown's wait returns, also while
// a run is in progress, and nothing runs after.
func TestPeriodic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Client{clock: clock.Real()}
		c.ctx, c.cancel = context.WithCancel(context.Background())
		var runs atomic.Int32
		release := make(chan struct{})
		var block atomic.Bool
		before := runtime.NumGoroutine()
		p := c.periodic(time.Second, func() time.Duration {
			runs.Add(1)
			if block.Load() {
				<-release
			}
			return 10 * time.Second
		})
		synctest.Wait()
		must.Eq(t, before+0, runtime.NumGoroutine(), must.Sprint("no goroutine waits for the first run"))
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		must.Eq(t, 1, runs.Load())
		time.Sleep(10 * time.Second)
		synctest.Wait()
		must.Eq(t, 2, runs.Load())
		must.Eq(t, before, runtime.NumGoroutine(), must.Sprint("none between runs either"))

		p.kick()
		synctest.Wait()
		must.Eq(t, 3, runs.Load(), must.Sprint("a kick runs it at once"))

		block.Store(true)
		p.kick()
		synctest.Wait() // the fourth run is blocked in fn
		p.kick()        // kicked while running: once more after it
		block.Store(false)
		release <- struct{}{}
		synctest.Wait()
		must.Eq(t, 5, runs.Load())

		block.Store(true)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		must.Eq(t, 6, runs.Load()) // blocked in fn
		c.cancel()
		done := make(chan struct{})
		go func() { c.wg.Wait(); close(done) }()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the wait returned while a run was in progress")
		default:
		}
		release <- struct{}{}
		<-done
		time.Sleep(time.Minute)
		synctest.Wait()
		must.Eq(t, 6, runs.Load(), must.Sprint("nothing runs after the client ends"))
	})
}
