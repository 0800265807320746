//go:build linux

package rawexec

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
	"github.com/nomad-edge/nomad/drivers/internal/proc"
)

// testTimeout bounds every wait. Nothing here should take more than a fraction
// of it; hitting it means a lost exit, not a slow machine.
const testTimeout = 10 * time.Second

func newTestDriver(t *testing.T) *Driver {
	t.Helper()
	d, err := New(drivers.Options{Config: map[string]any{"enabled": true}})
	must.NoError(t, err)
	t.Cleanup(func() { destroyAll(d) })
	return d
}

// destroyAll kills whatever a test left running, so that a failing test does
// not leak sleeping processes into the next one.
func destroyAll(d *Driver) {
	for _, id := range d.tasks.IDs() {
		_ = d.DestroyTask(id, true)
	}
}

func newTaskConfig(t *testing.T, command string, args ...string) *drivers.TaskConfig {
	t.Helper()
	dir := t.TempDir()
	return &drivers.TaskConfig{
		ID:         "alloc1/" + t.Name(),
		Name:       "web",
		AllocID:    "alloc1",
		TaskDir:    filepath.Join(dir, "task"),
		StdoutPath: filepath.Join(dir, "logs", "web.stdout.0"),
		StderrPath: filepath.Join(dir, "logs", "web.stderr.0"),
		Config:     map[string]any{"command": command, "args": toAny(args)},
	}
}

// toAny mimics a config block that came through JSON: lists are []any.
func toAny(ss []string) []any { return drivertest.Args(ss...) }

func waitExit(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	return drivertest.WaitExit(t, d, id, testTimeout)
}

// fifoLines streams the lines written to path: see drivertest.FIFOLines.
func fifoLines(t *testing.T, path string) <-chan string { return drivertest.FIFOLines(t, path) }

func nextLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	return drivertest.NextLine(t, lines, testTimeout)
}

// waitGone blocks until pid has exited, through a pidfd: the same event the
// driver uses for recovered tasks.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	must.NoError(t, err)
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	done := make(chan error, 1)
	go func() { done <- proc.WaitPidfd(f) }()
	select {
	case err := <-done:
		must.NoError(t, err)
	case <-time.After(testTimeout):
		t.Fatalf("process %d still alive after %s", pid, testTimeout)
	}
}

// TestStartTask_Output checks that stdout and stderr land in the client's log
// files (dirs created) and that the task sees its env over a minimal base,
// because `nomad alloc logs` and interpolated env are how users debug tasks.
func TestStartTask_Output(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, "sh", "-c", `echo "hello $GREETING"; echo oops >&2; pwd; test -n "$PATH" && echo has-path`)
	cfg.Env = map[string]string{"GREETING": "edge"}
	must.NoError(t, os.MkdirAll(filepath.Dir(cfg.StdoutPath), 0o755))
	must.NoError(t, os.WriteFile(cfg.StdoutPath, []byte("earlier\n"), 0o644))

	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	res := waitExit(t, d, cfg.ID)
	must.True(t, res.Successful(), must.Sprint(res))

	out, err := os.ReadFile(cfg.StdoutPath)
	must.NoError(t, err)
	must.Eq(t, "earlier\nhello edge\n"+cfg.TaskDir+"\nhas-path\n", string(out))
	errOut, err := os.ReadFile(cfg.StderrPath)
	must.NoError(t, err)
	must.Eq(t, "oops\n", string(errOut))
}

// TestStartTask_ClientEnvNotInherited checks that the client's environment
// does not leak into tasks, so a task behaves the same however the agent was
// launched and never sees the agent's secrets.
func TestStartTask_ClientEnvNotInherited(t *testing.T) {
	t.Setenv("RAWEXEC_TEST_SECRET", "leak")
	d := newTestDriver(t)
	cfg := newTaskConfig(t, "sh", "-c", `echo "[$RAWEXEC_TEST_SECRET]"`)
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	waitExit(t, d, cfg.ID)
	out, err := os.ReadFile(cfg.StdoutPath)
	must.NoError(t, err)
	must.Eq(t, "[]\n", string(out))
}

// An agent started under nohup ignores SIGHUP, one started with `&` from a
// script SIGINT and SIGQUIT, and ignored signals survive exec: its tasks
// would ignore them too, and `nomad alloc signal -s HUP` (a reload) or a
// shell's trap would do nothing. A task starts with them at their
// defaults whatever the agent inherited, also after the agent notified
// and stopped notifying one of them (as `nomad agent` does around its
// run: the runtime then puts SIG_IGN back while signal.Ignored says
// false). The test runs itself again with SIGHUP and SIGQUIT ignored from
// the start, as nohup would.
func TestStartTask_SignalsAtDefaultWhenTheAgentIgnoresThem(t *testing.T) {
	if os.Getenv("RAWEXEC_SIGIGN_CHILD") == "1" {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGHUP)
		signal.Stop(ch)
		assertTaskSignalsAtDefault(t)
		return
	}
	cmd := exec.Command("sh", "-c", `trap '' HUP QUIT; exec "$0" -test.run '^TestStartTask_SignalsAtDefaultWhenTheAgentIgnoresThem$' -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), "RAWEXEC_SIGIGN_CHILD=1")
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprintf("the test run with SIGHUP ignored:\n%s", out))
	must.StrContains(t, string(out), "--- PASS")
}

func assertTaskSignalsAtDefault(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, "sh", "-c", `grep SigIgn /proc/$$/status`)
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	res := waitExit(t, d, cfg.ID)
	must.True(t, res.Successful(), must.Sprint(res))

	out, err := os.ReadFile(cfg.StdoutPath)
	must.NoError(t, err)
	fields := strings.Fields(string(out))
	must.SliceLen(t, 2, fields, must.Sprintf("output %q", out))
	mask, err := strconv.ParseUint(fields[1], 16, 64)
	must.NoError(t, err)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2} {
		must.Zero(t, mask&(1<<(uint(sig)-1)), must.Sprintf("the task ignores %v (SigIgn %s)", sig, fields[1]))
	}
}

// TestStopTask_KillsProcessGroup checks that a stop reaches the task's
// children, because a task that forks workers must not leave them running
// after it is stopped. SIGINT covers children that ignore the stop signal
// (a shell's background jobs ignore SIGINT) and must still go once the task
// itself has exited.
func TestStopTask_KillsProcessGroup(t *testing.T) {
	for _, sig := range []string{"SIGTERM", "SIGINT"} {
		t.Run(sig, func(t *testing.T) {
			d := newTestDriver(t)
			cfg := newTaskConfig(t, "sh", "-c", `sleep 300 & echo $!; wait`)
			lines := fifoLines(t, cfg.StdoutPath)
			_, err := d.StartTask(cfg)
			must.NoError(t, err)
			child, err := strconv.Atoi(nextLine(t, lines))
			must.NoError(t, err)

			must.NoError(t, d.StopTask(cfg.ID, testTimeout, sig))
			res := waitExit(t, d, cfg.ID)
			must.Positive(t, res.Signal)
			waitGone(t, child)
		})
	}
}

// TestDestroyTask_KillsLeftovers checks that destroying an exited task kills
// background processes it left in its group, so that a finished task's
// daemons do not outlive its allocation.
func TestDestroyTask_KillsLeftovers(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, "sh", "-c", `sleep 300 & echo $!`)
	lines := fifoLines(t, cfg.StdoutPath)
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	child, err := strconv.Atoi(nextLine(t, lines))
	must.NoError(t, err)

	res := waitExit(t, d, cfg.ID)
	must.True(t, res.Successful())
	must.NoError(t, d.DestroyTask(cfg.ID, false))
	waitGone(t, child)

	_, err = d.InspectTask(cfg.ID)
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)
}

// persisted round-trips a handle through JSON, as the client's state DB does.
func persisted(t *testing.T, h *drivers.TaskHandle) *drivers.TaskHandle {
	return drivertest.Persisted(t, h)
}

// TestRecoverTask checks that a new driver instance (a restarted client)
// re-attaches to a running task from its persisted handle, can stop it and
// sees it exit, reporting the exit status as unknown because it cannot read
// it.
func TestRecoverTask(t *testing.T) {
	for _, tc := range []struct {
		name    string
		noPidfd bool
	}{
		{name: "pidfd"},
		{name: "proc polling", noPidfd: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d1 := newTestDriver(t)
			cfg := newTaskConfig(t, "sleep", "30")
			h, err := d1.StartTask(cfg)
			must.NoError(t, err)
			saved := persisted(t, h)

			d2 := newTestDriver(t)
			d2.tasks.NoPidfd = tc.noPidfd
			d2.tasks.PollInterval = 10 * time.Millisecond
			must.NoError(t, d2.RecoverTask(saved))
			w, err := d2.tasks.Get(cfg.ID)
			must.NoError(t, err)
			must.Eq(t, !tc.noPidfd, w.HasPidfd())

			// Recovering again is a no-op, not a second watcher.
			must.NoError(t, d2.RecoverTask(saved))

			st, err := d2.InspectTask(cfg.ID)
			must.NoError(t, err)
			must.Eq(t, drivers.TaskStateRunning, st.State)
			must.Eq(t, "true", st.DriverAttributes["recovered"])
			must.Eq(t, h.StartedAt.UTC(), st.StartedAt.UTC())

			must.NoError(t, d2.StopTask(cfg.ID, testTimeout, "SIGTERM"))
			res := waitExit(t, d2, cfg.ID)
			must.ErrorIs(t, res.Err, drivers.ErrExitCodeUnknown)
			must.False(t, res.Successful())

			// The original instance, the process's real parent, saw the
			// true status.
			must.Eq(t, int(syscall.SIGTERM), waitExit(t, d1, cfg.ID).Signal)
			must.NoError(t, d2.DestroyTask(cfg.ID, false))
		})
	}
}

// TestRecoverTask_ReusedPid checks that recovery refuses a pid that now
// belongs to a different process (other start time, or another boot), since
// adopting it would let a later stop kill an unrelated program.
func TestRecoverTask_ReusedPid(t *testing.T) {
	d1 := newTestDriver(t)
	cfg := newTaskConfig(t, "sleep", "30")
	h, err := d1.StartTask(cfg)
	must.NoError(t, err)

	var st taskState
	must.NoError(t, h.GetDriverState(&st))

	for name, mutate := range map[string]func(*taskState){
		"start time": func(s *taskState) { s.StartTime++ },
		"boot id":    func(s *taskState) { s.BootID = "00000000-0000-0000-0000-000000000000" },
	} {
		t.Run(name, func(t *testing.T) {
			other := st
			mutate(&other)
			tampered := h.Copy()
			must.NoError(t, tampered.SetDriverState(other))

			d2 := newTestDriver(t)
			must.ErrorIs(t, d2.RecoverTask(tampered), drivers.ErrTaskNotFound)
		})
	}

	// The genuine process was left alone.
	st2, err := d1.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, drivers.TaskStateRunning, st2.State)
}

// TestRecoverTask_InvalidHandle checks that a handle that could make a signal
// reach other processes (pid 0 or 1 means "my group" or "everyone") or that
// another version wrote is rejected before anything is signalled.
func TestRecoverTask_InvalidHandle(t *testing.T) {
	d := newTestDriver(t)
	base := &drivers.TaskHandle{
		Version: HandleVersion,
		Config:  &drivers.TaskConfig{ID: "a/b"},
	}
	for name, h := range map[string]*drivers.TaskHandle{
		"nil config": {Version: HandleVersion},
		"version":    {Version: HandleVersion + 1, Config: base.Config},
		"no state":   base,
	} {
		t.Run(name, func(t *testing.T) {
			must.ErrorIs(t, d.RecoverTask(h), drivers.ErrInvalidHandle)
		})
	}
	for _, st := range []taskState{
		{Pid: 1, Pgid: 1, StartTime: 1},
		{Pid: 0, Pgid: 0, StartTime: 1},
		{Pid: 1234, Pgid: -1, StartTime: 1},
		{Pid: 1234, Pgid: 1, StartTime: 1},
		{Pid: 1234, Pgid: 4321, StartTime: 1},
		{Pid: 1234, Pgid: 1234},
	} {
		h := base.Copy()
		must.NoError(t, h.SetDriverState(st))
		must.ErrorIs(t, d.RecoverTask(h), drivers.ErrInvalidHandle, must.Sprint(st))
	}
}

// TestDisabled checks that raw_exec, which runs tasks unisolated, runs
// nothing unless the operator enabled it, and says why.
func TestDisabled(t *testing.T) {
	d, err := New(drivers.Options{})
	must.NoError(t, err)

	fp := d.Fingerprint()
	must.True(t, fp.Detected)
	must.False(t, fp.Healthy)
	must.Eq(t, "disabled", fp.HealthDescription)

	_, err = d.StartTask(newTaskConfig(t, "true"))
	must.ErrorIs(t, err, drivers.ErrDriverDisabled)
	must.False(t, drivers.IsRecoverable(err))

	enabled := newTestDriver(t).Fingerprint()
	must.True(t, enabled.Healthy)
	must.Eq(t, "1", enabled.Attributes["driver.raw_exec"])
}

// TestNew_PluginConfig checks agent config decoding: the string form HCL may
// produce is accepted, and a bad value or unknown key is an error naming it.
func TestNew_PluginConfig(t *testing.T) {
	d, err := New(drivers.Options{Config: map[string]any{"enabled": "true"}})
	must.NoError(t, err)
	must.True(t, d.Fingerprint().Healthy)

	for cfg, key := range map[string]map[string]any{
		"enabled":    {"enabled": 3},
		"no_cgroups": {"enabled": true, "no_cgroups": true},
	} {
		_, err := New(drivers.Options{Config: key})
		var ce *drivers.ConfigError
		must.ErrorAs[*drivers.ConfigError](t, err, &ce)
		must.Eq(t, cfg, ce.Key)
	}
}

// TestStartTask_Errors checks the start failures the task runner must tell
// apart: bad config and a missing binary are permanent, a duplicate ID is
// ErrTaskExists.
func TestStartTask_Errors(t *testing.T) {
	d := newTestDriver(t)

	t.Run("missing command", func(t *testing.T) {
		cfg := newTaskConfig(t, "")
		delete(cfg.Config, "command")
		_, err := d.StartTask(cfg)
		var ce *drivers.ConfigError
		must.ErrorAs[*drivers.ConfigError](t, err, &ce)
		must.Eq(t, "command", ce.Key)
		must.ErrorIs(t, err, drivers.ErrMissingKey)
		must.StrContains(t, err.Error(), `"command"`)
	})
	t.Run("bad args", func(t *testing.T) {
		cfg := newTaskConfig(t, "true")
		cfg.Config["args"] = []any{"ok", map[string]any{}}
		_, err := d.StartTask(cfg)
		must.ErrorIs(t, err, drivers.ErrInvalidConfig)
		must.StrContains(t, err.Error(), `"args"`)
	})
	t.Run("no such binary", func(t *testing.T) {
		cfg := newTaskConfig(t, "/nonexistent/binary")
		_, err := d.StartTask(cfg)
		must.Error(t, err)
		must.False(t, drivers.IsRecoverable(err))
		// The failed start left no trace: the ID can be used again.
		cfg.Config["command"] = "true"
		_, err = d.StartTask(cfg)
		must.NoError(t, err)
		waitExit(t, d, cfg.ID)
	})
	t.Run("duplicate", func(t *testing.T) {
		cfg := newTaskConfig(t, "sleep", "30")
		_, err := d.StartTask(cfg)
		must.NoError(t, err)
		_, err = d.StartTask(cfg)
		must.ErrorIs(t, err, drivers.ErrTaskExists)
	})
}
