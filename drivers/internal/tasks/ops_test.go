package tasks

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// fakeTask records what the shared operations ask of a driver's task.
type fakeTask struct {
	*Task
	stops    []syscall.Signal
	released int
}

func (f *fakeTask) Stop(sig syscall.Signal, _ time.Duration) error {
	f.stops = append(f.stops, sig)
	f.Exit(drivers.SignalExitResult(sig), time.Now())
	return nil
}

func (f *fakeTask) Release() error { f.released++; return nil }

// DestroyTask refuses a running task unless forced, kills a forced one
// with SIGKILL, releases it once and forgets it; StopTask parses the
// signal name and an unknown one is refused before the task is touched.
func TestSharedOps(t *testing.T) {
	s := NewSet[*fakeTask]()
	f := &fakeTask{Task: New("a/web", "web", time.Now())}
	must.NoError(t, s.Add("a/web", f))

	must.ErrorIs(t, DestroyTask(s, "a/web", false), drivers.ErrTaskRunning)
	must.Zero(t, f.released)
	must.ErrorIs(t, StopTask(s, "a/web", time.Second, "SIGNOPE"), drivers.ErrUnknownSignal)
	must.SliceEmpty(t, f.stops)

	ch, err := WaitTask(s, context.Background(), "a/web")
	must.NoError(t, err)
	must.NoError(t, DestroyTask(s, "a/web", true))
	must.Eq(t, []syscall.Signal{syscall.SIGKILL}, f.stops)
	must.Eq(t, 1, f.released)
	must.Eq(t, int(syscall.SIGKILL), (<-ch).Signal)
	must.False(t, s.Has("a/web"))

	_, err = WaitTask(s, context.Background(), "a/web")
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)
	must.ErrorIs(t, StopTask(s, "a/web", 0, ""), drivers.ErrTaskNotFound)
	must.ErrorIs(t, DestroyTask(s, "a/web", true), drivers.ErrTaskNotFound)
}
