package mock

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// The tests run inside synctest bubbles: the driver's real clock is the time
// package, which the bubble fakes, so a 10s run_for takes 10s of fake time
// and no real time. A blocked wait that could never finish makes synctest
// fail the test with a deadlock report instead of hanging.

func newTestDriver(t *testing.T) *Driver {
	t.Helper()
	d, err := New(drivers.Options{}, nil)
	must.NoError(t, err)
	t.Cleanup(func() {
		for _, id := range d.tasks.IDs() {
			_ = d.DestroyTask(id, true)
		}
	})
	return d
}

func newTaskConfig(id string, cfg map[string]any) *drivers.TaskConfig {
	return &drivers.TaskConfig{ID: "alloc1/" + id, Name: id, AllocID: "alloc1", Config: cfg}
}

func waitExit(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	ch, err := d.WaitTask(context.Background(), id)
	must.NoError(t, err)
	res, ok := <-ch
	must.True(t, ok, must.Sprint("wait channel closed without a result"))
	return res
}

// TestRunFor checks that a task exits after exactly run_for with its
// configured exit code, signal and error: task runner tests script task
// lifetimes with it.
func TestRunFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newTestDriver(t)
		cfg := newTaskConfig("web", map[string]any{
			"run_for":      "10s",
			"exit_code":    float64(7), // as from JSON
			"exit_signal":  int64(2),   // as from msgpack
			"exit_err_msg": "boom",
		})
		start := time.Now()
		h, err := d.StartTask(cfg)
		must.NoError(t, err)
		must.Eq(t, start, h.StartedAt)

		res := waitExit(t, d, cfg.ID)
		must.Eq(t, 10*time.Second, time.Since(start))
		must.Eq(t, 7, res.ExitCode)
		must.Eq(t, 2, res.Signal)
		must.EqError(t, res.Err, "boom")
		must.False(t, res.Successful())

		st, err := d.InspectTask(cfg.ID)
		must.NoError(t, err)
		must.Eq(t, drivers.TaskStateExited, st.State)
		must.Eq(t, 10*time.Second, st.CompletedAt.Sub(st.StartedAt))
	})
}

// TestRunFor_Success checks the default result is a success, so that a
// mock batch job completes.
func TestRunFor_Success(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newTestDriver(t)
		cfg := newTaskConfig("batch", map[string]any{"run_for": "1ms"})
		_, err := d.StartTask(cfg)
		must.NoError(t, err)
		must.True(t, waitExit(t, d, cfg.ID).Successful())
	})
}

// TestRunUntilStopped checks that without run_for a task runs until asked to
// stop and then exits with the stop signal at once, which is how service
// tasks are modelled.
func TestRunUntilStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newTestDriver(t)
		cfg := newTaskConfig("svc", map[string]any{"run_for": "0s"})
		_, err := d.StartTask(cfg)
		must.NoError(t, err)

		time.Sleep(24 * time.Hour) // let a day of fake time pass
		st, err := d.InspectTask(cfg.ID)
		must.NoError(t, err)
		must.Eq(t, drivers.TaskStateRunning, st.State)

		stopAt := time.Now()
		must.NoError(t, d.StopTask(cfg.ID, time.Minute, "SIGINT"))
		must.Eq(t, stopAt, time.Now())
		res := waitExit(t, d, cfg.ID)
		must.Eq(t, int(syscall.SIGINT), res.Signal)
		must.Eq(t, 128+int(syscall.SIGINT), res.ExitCode)
	})
}

// TestKillAfter checks that a task with kill_after ignores a stop for that
// long, and is killed at the stop timeout when kill_after is not shorter:
// this is how kill_timeout handling is tested without real processes.
func TestKillAfter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		timeout  time.Duration
		wantTook time.Duration
		wantSig  syscall.Signal
	}{
		{name: "exits before timeout", timeout: 10 * time.Second, wantTook: 3 * time.Second, wantSig: syscall.SIGTERM},
		{name: "killed at timeout", timeout: 2 * time.Second, wantTook: 2 * time.Second, wantSig: syscall.SIGKILL},
		{name: "equal is killed", timeout: 3 * time.Second, wantTook: 3 * time.Second, wantSig: syscall.SIGKILL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := newTestDriver(t)
				cfg := newTaskConfig("stubborn", map[string]any{"kill_after": "3s"})
				_, err := d.StartTask(cfg)
				must.NoError(t, err)

				start := time.Now()
				must.NoError(t, d.StopTask(cfg.ID, tc.timeout, "SIGTERM"))
				must.Eq(t, tc.wantTook, time.Since(start))
				res := waitExit(t, d, cfg.ID)
				must.Eq(t, int(tc.wantSig), res.Signal)
			})
		})
	}
}

// TestKillAfter_ConcurrentStops checks that a second stop while one is
// pending neither extends the first deadline nor produces a second result.
func TestKillAfter_ConcurrentStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newTestDriver(t)
		cfg := newTaskConfig("stubborn", map[string]any{"kill_after": "5s"})
		_, err := d.StartTask(cfg)
		must.NoError(t, err)

		start := time.Now()
		done := make(chan time.Duration, 2)
		for range 2 {
			go func() {
				must.NoError(t, d.StopTask(cfg.ID, time.Minute, "SIGTERM"))
				done <- time.Since(start)
			}()
		}
		must.Eq(t, 5*time.Second, <-done)
		must.Eq(t, 5*time.Second, <-done)
	})
}

// TestStartError checks that start_error fails the start with the given
// message and recoverability, since restart policy tests depend on both, and
// that the failed ID can be started again.
func TestStartError(t *testing.T) {
	for _, recoverable := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			d := newTestDriver(t)
			cfg := newTaskConfig("bad", map[string]any{
				"start_error":             "no luck",
				"start_error_recoverable": recoverable,
			})
			_, err := d.StartTask(cfg)
			must.EqError(t, err, "no luck")
			must.Eq(t, recoverable, drivers.IsRecoverable(err))

			_, err = d.InspectTask(cfg.ID)
			must.ErrorIs(t, err, drivers.ErrTaskNotFound)
			delete(cfg.Config, "start_error")
			_, err = d.StartTask(cfg)
			must.NoError(t, err)
		})
	}
}

// TestStartBlockFor checks that StartTask blocks for start_block_for and
// that the ID is taken meanwhile, so a slow start cannot be doubled.
func TestStartBlockFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newTestDriver(t)
		cfg := newTaskConfig("slow", map[string]any{"start_block_for": "2s"})
		start := time.Now()
		started := make(chan error, 1)
		go func() {
			_, err := d.StartTask(cfg)
			started <- err
		}()
		synctest.Wait() // the start is now blocked on its timer
		_, err := d.StartTask(cfg)
		must.ErrorIs(t, err, drivers.ErrTaskExists)

		must.NoError(t, <-started)
		must.Eq(t, 2*time.Second, time.Since(start))
		st, err := d.InspectTask(cfg.ID)
		must.NoError(t, err)
		must.Eq(t, start.Add(2*time.Second), st.StartedAt)
	})
}

func persisted(t *testing.T, h *drivers.TaskHandle) *drivers.TaskHandle {
	return drivertest.Persisted(t, h)
}

// TestRecoverTask checks that a restarted client's driver resumes a task for
// the rest of its run_for, and that one whose run_for ran out while the
// client was down exits at once with its configured result: disconnected
// client tests rely on task lifetimes spanning a client restart.
func TestRecoverTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d1 := newTestDriver(t)
		cfg := newTaskConfig("web", map[string]any{"run_for": "10s", "exit_code": 3})
		start := time.Now()
		h, err := d1.StartTask(cfg)
		must.NoError(t, err)
		saved := persisted(t, h)
		must.NoError(t, d1.DestroyTask(cfg.ID, true)) // the old client is gone

		time.Sleep(4 * time.Second)
		d2 := newTestDriver(t)
		must.NoError(t, d2.RecoverTask(saved))
		must.NoError(t, d2.RecoverTask(saved)) // idempotent
		st, err := d2.InspectTask(cfg.ID)
		must.NoError(t, err)
		must.Eq(t, start, st.StartedAt)

		res := waitExit(t, d2, cfg.ID)
		must.Eq(t, 10*time.Second, time.Since(start))
		must.Eq(t, 3, res.ExitCode)

		time.Sleep(time.Minute)
		d3 := newTestDriver(t)
		must.NoError(t, d3.RecoverTask(saved))
		recoveredAt := time.Now()
		res = waitExit(t, d3, cfg.ID)
		must.Eq(t, recoveredAt, time.Now())
		must.Eq(t, 3, res.ExitCode)
	})
}

// TestRecoverTask_InvalidHandle checks that unusable handles are refused
// with ErrInvalidHandle rather than half-recovered.
func TestRecoverTask_InvalidHandle(t *testing.T) {
	d := newTestDriver(t)
	cfg := &drivers.TaskConfig{ID: "a/b"}
	for name, h := range map[string]*drivers.TaskHandle{
		"nil":      nil,
		"no id":    {Version: HandleVersion, Config: &drivers.TaskConfig{}},
		"version":  {Version: 99, Config: cfg, DriverState: []byte(`{}`)},
		"no state": {Version: HandleVersion, Config: cfg},
		"garbage":  {Version: HandleVersion, Config: cfg, DriverState: []byte(`{`)},
	} {
		t.Run(name, func(t *testing.T) {
			must.ErrorIs(t, d.RecoverTask(h), drivers.ErrInvalidHandle)
		})
	}
}

// TestStdout checks stdout_string and its repeats land in the task's stdout
// file, so log shipping and `alloc logs` can be tested against mock tasks.
func TestStdout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newTestDriver(t)
		cfg := newTaskConfig("chatty", map[string]any{
			"stdout_string":          "tick\n",
			"stdout_repeat":          "2",
			"stdout_repeat_duration": "1s",
		})
		cfg.StdoutPath = filepath.Join(t.TempDir(), "logs", "chatty.stdout.0")
		_, err := d.StartTask(cfg)
		must.NoError(t, err)

		read := func() string {
			b, err := os.ReadFile(cfg.StdoutPath)
			must.NoError(t, err)
			return string(b)
		}
		must.Eq(t, "tick\n", read())
		time.Sleep(time.Second)
		synctest.Wait()
		must.Eq(t, "tick\ntick\n", read())
		time.Sleep(time.Hour)
		must.Eq(t, strings.Repeat("tick\n", 3), read())
	})
}

// TestConfigErrors checks that bad config fails the start with an error
// naming the key, and that keys this driver does not implement are refused
// rather than silently ignored.
func TestConfigErrors(t *testing.T) {
	d := newTestDriver(t)
	for key, cfg := range map[string]map[string]any{
		"run_for":       {"run_for": "soon"},
		"exit_code":     {"exit_code": 1.5},
		"kill_after":    {"kill_after": "-1s"},
		"stdout_repeat": {"stdout_repeat": -1},
		"driver_ip":     {"driver_ip": "10.0.0.1"},
	} {
		t.Run(key, func(t *testing.T) {
			_, err := d.StartTask(newTaskConfig(key, cfg))
			var ce *drivers.ConfigError
			must.ErrorAs[*drivers.ConfigError](t, err, &ce)
			must.Eq(t, key, ce.Key)
			must.ErrorIs(t, err, drivers.ErrInvalidConfig)
		})
	}
	_, err := New(drivers.Options{Config: map[string]any{"fs_isolation": "none"}}, nil)
	must.ErrorIs(t, err, drivers.ErrUnknownKey)
}

// TestManyTasksAreCheap checks that running tasks cost timers, not
// goroutines, and that a thousand of them all exit on time: load tests run
// thousands of mock tasks per client.
func TestManyTasksAreCheap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		d := newTestDriver(t)
		before := runtime.NumGoroutine()
		start := time.Now()
		for i := range n {
			cfg := newTaskConfig(string(rune('a'+i%26))+strings.Repeat("x", i/26), map[string]any{"run_for": "1m"})
			_, err := d.StartTask(cfg)
			must.NoError(t, err)
		}
		must.Less(t, 10, runtime.NumGoroutine()-before)

		chans := make([]<-chan *drivers.ExitResult, 0, n)
		for _, id := range d.tasks.IDs() {
			ch, err := d.WaitTask(context.Background(), id)
			must.NoError(t, err)
			chans = append(chans, ch)
		}
		for _, ch := range chans {
			must.True(t, (<-ch).Successful())
		}
		must.Eq(t, time.Minute, time.Since(start))
	})
}

// TestInjectedClock checks the Clock seam for callers that cannot run in a
// synctest bubble: time moves only when the fake clock is advanced.
func TestInjectedClock(t *testing.T) {
	clk := clocktest.NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	d, err := New(drivers.Options{}, clk)
	must.NoError(t, err)
	cfg := newTaskConfig("web", map[string]any{"run_for": "30s"})
	h, err := d.StartTask(cfg)
	must.NoError(t, err)
	must.Eq(t, clk.Now(), h.StartedAt)

	ch, err := d.WaitTask(context.Background(), cfg.ID)
	must.NoError(t, err)
	clk.Advance(29 * time.Second)
	st, err := d.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, drivers.TaskStateRunning, st.State)

	clk.Advance(time.Second) // fires the timer synchronously
	select {
	case res := <-ch:
		must.True(t, res.Successful())
	case <-time.After(10 * time.Second):
		t.Fatal("task did not exit when the fake clock reached run_for")
	}
	st, err = d.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, 30*time.Second, st.CompletedAt.Sub(st.StartedAt))
}
