package tasks

import (
	"context"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock"
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

// TestEscalate checks the stop every driver with real processes shares,
// on fake time: the kill signal, SIGKILL once the timeout has passed and
// no sooner, then the kill wait; a task that exits in its grace gets no
// SIGKILL, and one that survives SIGKILL is reported, not waited on forever.
func TestEscalate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		exitOn     syscall.Signal // 0: never exits
		wantSent   []syscall.Signal
		wantExited bool
		wantTook   time.Duration
	}{
		{name: "exits on the kill signal", exitOn: syscall.SIGTERM, wantSent: []syscall.Signal{syscall.SIGTERM}, wantExited: true},
		{name: "killed after the timeout", exitOn: syscall.SIGKILL, wantSent: []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, wantExited: true, wantTook: 5 * time.Second},
		{name: "survives SIGKILL", wantSent: []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}, wantTook: 7 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				done := make(chan struct{})
				var sent []syscall.Signal
				start := time.Now()
				exited, err := Escalate(EscalateInput{
					Clock: clock.Real(), Done: done, Signal: syscall.SIGTERM,
					Timeout: 5 * time.Second, KillWait: 2 * time.Second, Logger: hclog.NewNullLogger(),
					Send: func(sig syscall.Signal) error {
						sent = append(sent, sig)
						if sig == tc.exitOn {
							close(done)
						}
						return nil
					},
				})
				must.NoError(t, err)
				must.Eq(t, tc.wantExited, exited)
				must.Eq(t, tc.wantSent, sent)
				must.Eq(t, tc.wantTook, time.Since(start))
			})
		})
	}
}

// TestOpenHandle checks the handle check every driver's RecoverTask
// starts with: no config or ID and another layout version are invalid, an
// undecodable state is invalid, and a tracked task is a no-op that decodes
// nothing.
func TestOpenHandle(t *testing.T) {
	s := NewSet[int]()
	good := &drivers.TaskHandle{Version: 1, Config: &drivers.TaskConfig{ID: "a/web"}, DriverState: []byte(`{"pid":7}`)}
	for name, h := range map[string]*drivers.TaskHandle{
		"nil":     nil,
		"no id":   {Version: 1, Config: &drivers.TaskConfig{}},
		"version": {Version: 2, Config: good.Config, DriverState: good.DriverState},
		"garbage": {Version: 1, Config: good.Config, DriverState: []byte(`{`)},
	} {
		var st struct{ Pid int }
		_, _, err := s.OpenHandle(h, 1, &st)
		must.ErrorIs(t, err, drivers.ErrInvalidHandle, must.Sprint(name))
	}
	var st struct{ Pid int }
	id, tracked, err := s.OpenHandle(good, 1, &st)
	must.NoError(t, err)
	must.Eq(t, "a/web", id)
	must.False(t, tracked)
	must.Eq(t, 7, st.Pid)

	must.NoError(t, s.Add("a/web", 1))
	st.Pid = 0
	_, tracked, err = s.OpenHandle(good, 1, &st)
	must.NoError(t, err)
	must.True(t, tracked)
	must.Zero(t, st.Pid)
}
