package tasks

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// TestTask_ExitOnce checks that of racing exit reports exactly one wins and
// every waiter, early or late, sees that one: the task runner must never see
// two results for one run.
func TestTask_ExitOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		task := New("a/web", "web", start)
		early := task.Wait(context.Background())

		var wg sync.WaitGroup
		wins := make(chan int, 10)
		for i := range 10 {
			wg.Go(func() {
				if task.Exit(&drivers.ExitResult{ExitCode: i}, time.Now()) {
					wins <- i
				}
			})
		}
		wg.Wait()
		close(wins)
		must.Eq(t, 1, len(wins))
		winner := <-wins

		must.Eq(t, winner, (<-early).ExitCode)
		_, open := <-early
		must.False(t, open)
		must.Eq(t, winner, (<-task.Wait(context.Background())).ExitCode)

		st := task.Status(map[string]string{"k": "v"})
		must.Eq(t, drivers.TaskStateExited, st.State)
		must.Eq(t, winner, st.ExitResult.ExitCode)
		must.Eq(t, "v", st.DriverAttributes["k"])
	})
}

// TestTask_WaitCancel checks that a cancelled wait closes its channel and
// leaves no goroutine behind (synctest would report it as blocked).
func TestTask_WaitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		task := New("a/web", "web", time.Now())
		ctx, cancel := context.WithCancel(context.Background())
		ch := task.Wait(ctx)
		cancel()
		_, ok := <-ch
		must.False(t, ok)
		must.Nil(t, task.Result())
		must.Eq(t, drivers.TaskStateRunning, task.Status(nil).State)
	})
}

// TestSet checks reservation semantics: a reserved ID blocks a second start
// but is not visible to lookups until filled, and a release frees it.
func TestSet(t *testing.T) {
	s := NewSet[int]()
	must.NoError(t, s.Reserve("a"))
	must.ErrorIs(t, s.Reserve("a"), drivers.ErrTaskExists)
	must.ErrorIs(t, s.Add("a", 1), drivers.ErrTaskExists)
	_, err := s.Get("a")
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)
	must.True(t, s.Has("a"))

	s.Release("a")
	must.False(t, s.Has("a"))
	must.NoError(t, s.Reserve("a"))
	s.Fill("a", 7)
	v, err := s.Get("a")
	must.NoError(t, err)
	must.Eq(t, 7, v)

	must.NoError(t, s.Add("b", 8))
	must.Eq(t, []string{"a", "b"}, s.IDs())
	s.Delete("a")
	must.Eq(t, 1, s.Len())
}
