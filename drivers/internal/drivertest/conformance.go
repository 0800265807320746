package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// Suite is what the conformance suite needs of a driver: how to build it
// and three tasks in its own config language.
//
// Sleep and Trap write a line "ready" to their stdout once they are running
// (Trap: once its handler is in place), which the suite waits for before it
// signals anything. The suite gives each config a fresh allocation ID and
// task ID, the NOMAD_ALLOC_ID and NOMAD_TASK_NAME the client sets on every
// task, and log paths where they are empty.
type Suite struct {
	// New builds an instance of the driver, as a new agent process would;
	// two calls stand for an agent and the one that replaced it. It skips
	// the test where the driver cannot run here, saying why.
	New func(t *testing.T) drivers.Driver
	// Sleep runs until it is stopped; SIGTERM ends it with exit code 143
	// (128+SIGTERM): by the signal, or by a trap where the task is the
	// init of a PID namespace, which ignores signals it does not handle.
	Sleep func(t *testing.T) *drivers.TaskConfig
	// Exit exits at once with code.
	Exit func(t *testing.T, code int) *drivers.TaskConfig
	// Trap catches sig (a name such as "SIGUSR1"), writes a line
	// "trapped" on each one it receives and runs on, so that a stop with
	// sig must end in SIGKILL (exit code 137).
	Trap func(t *testing.T, sig string) *drivers.TaskConfig
	// Timeout bounds every wait; hitting it means a lost exit or line.
	Timeout time.Duration
	Caps    Caps
}

// Caps are where drivers legitimately differ in what the suite can check.
// Signals and FindTask are checked where the driver implements
// drivers.Signaler and drivers.TaskFinder.
type Caps struct {
	// ExitStatusSurvivesAgent is set where something outside the agent
	// keeps a task's exit status (docker's engine; mock's handle, which
	// replays the task's config): a re-attached task then reports its
	// real exit code, and a task that exited while no agent ran is
	// recovered as exited. Where it is not (raw_exec, exec) the status
	// went to whoever reaped the orphan: a re-attached task's result is
	// drivers.ErrExitCodeUnknown, and one already gone is
	// drivers.ErrTaskNotFound.
	ExitStatusSurvivesAgent bool
	// AfterReboot returns h as an agent on the same node after a reboot
	// would read it (see OtherBoot). Nil for drivers whose handles do not
	// name processes of one boot: docker's engine keeps the container and
	// its state across a reboot, and mock tasks have no process.
	AfterReboot func(t *testing.T, h *drivers.TaskHandle) *drivers.TaskHandle
}

// RunConformance checks that the driver s builds keeps the Driver contract
// the task runner relies on: start and wait with the task's exit code, the
// contract's errors, stop with the kill signal and SIGKILL after the
// timeout, signals, re-attaching from a persisted handle (also to a task
// that exited meanwhile), refusing a handle from before a reboot, and
// FindTask.
func RunConformance(t *testing.T, s Suite) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Suite)
	}{
		{"StartAndWait", conformStartAndWait},
		{"Errors", conformErrors},
		{"StopWithKillSignal", conformStopWithKillSignal},
		{"StopEscalatesToSIGKILL", conformStopEscalates},
		{"Signal", conformSignal},
		{"Recover", conformRecover},
		{"RecoverExited", conformRecoverExited},
		{"RecoverAfterReboot", conformRecoverAfterReboot},
		{"FindTask", conformFindTask},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// conformStartAndWait: a task's own exit code reaches every waiter, early
// or late, and InspectTask, since restart policies and batch completion
// are decided on it; an exited task is destroyed without force.
func conformStartAndWait(t *testing.T, s Suite) {
	d := s.New(t)
	zero := s.prepare(t, s.Exit(t, 0))
	_, h := s.start(t, d, zero)
	must.Eq(t, drivers.TaskStateRunning, h.State)
	must.Eq(t, zero.ID, h.Config.ID)
	must.True(t, s.wait(t, d, zero.ID).Successful())

	cfg := s.prepare(t, s.Exit(t, 3))
	_, h = s.start(t, d, cfg)
	res := s.wait(t, d, cfg.ID)
	must.Eq(t, 3, res.ExitCode)
	must.Zero(t, res.Signal)
	must.NoError(t, res.Err)
	must.False(t, res.Successful())
	must.Eq(t, res, s.wait(t, d, cfg.ID), must.Sprint("a late waiter gets the same result"))

	st, err := d.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, drivers.TaskStateExited, st.State)
	must.Eq(t, 3, st.ExitResult.ExitCode)
	must.True(t, st.StartedAt.Equal(h.StartedAt), must.Sprintf("started %v, handle says %v", st.StartedAt, h.StartedAt))
	must.False(t, st.CompletedAt.IsZero())

	must.NoError(t, d.DestroyTask(cfg.ID, false))
	_, err = d.InspectTask(cfg.ID)
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)
}

// conformErrors: the error values callers branch on, and the WaitTask
// contract (a cancelled wait just closes; a waiter gets one result, then
// the channel closes).
func conformErrors(t *testing.T, s Suite) {
	d := s.New(t)
	_, err := d.WaitTask(context.Background(), "nope")
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)
	must.ErrorIs(t, d.StopTask("nope", time.Second, ""), drivers.ErrTaskNotFound)
	must.ErrorIs(t, d.DestroyTask("nope", true), drivers.ErrTaskNotFound)
	_, err = d.InspectTask("nope")
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)

	cfg := s.prepare(t, s.Sleep(t))
	lines, _ := s.start(t, d, cfg)
	s.nextLine(t, lines, "ready")
	_, err = d.StartTask(cfg)
	must.ErrorIs(t, err, drivers.ErrTaskExists)
	must.ErrorIs(t, d.StopTask(cfg.ID, time.Second, "SIGBOGUS"), drivers.ErrUnknownSignal)
	must.ErrorIs(t, d.DestroyTask(cfg.ID, false), drivers.ErrTaskRunning)
	st, err := d.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, drivers.TaskStateRunning, st.State, must.Sprint("refusals leave the task running"))

	ctx, cancel := context.WithCancel(context.Background())
	cancelled, err := d.WaitTask(ctx, cfg.ID)
	must.NoError(t, err)
	cancel()
	select {
	case res, ok := <-cancelled:
		must.False(t, ok, must.Sprintf("got result %v from a cancelled wait", res))
	case <-time.After(s.Timeout):
		t.Fatal("a cancelled wait did not close")
	}

	early, err := d.WaitTask(context.Background(), cfg.ID)
	must.NoError(t, err)
	must.NoError(t, d.DestroyTask(cfg.ID, true))
	select {
	case res, ok := <-early:
		must.True(t, ok, must.Sprint("the early waiter's channel closed without a result"))
		must.False(t, res.Successful())
	case <-time.After(s.Timeout):
		t.Fatal("the early waiter got nothing")
	}
	_, ok := <-early
	must.False(t, ok, must.Sprint("the channel closes after its one result"))
	must.ErrorIs(t, d.DestroyTask(cfg.ID, true), drivers.ErrTaskNotFound)
}

// conformStopWithKillSignal: a stop delivers the kill signal and returns
// as soon as the task exits, not after the kill timeout, so that stopping
// a job is as fast as its tasks; stopping it again is a no-op.
func conformStopWithKillSignal(t *testing.T, s Suite) {
	d := s.New(t)
	cfg := s.prepare(t, s.Sleep(t))
	lines, _ := s.start(t, d, cfg)
	s.nextLine(t, lines, "ready")

	start := time.Now()
	must.NoError(t, d.StopTask(cfg.ID, time.Hour, "SIGTERM"))
	must.Less(t, s.Timeout, time.Since(start))
	res := s.wait(t, d, cfg.ID)
	must.Eq(t, 128+int(syscall.SIGTERM), res.ExitCode, must.Sprint(res))
	must.False(t, res.Successful())
	must.NoError(t, d.StopTask(cfg.ID, time.Second, ""))
}

// conformStopEscalates: a task that survives its kill signal is killed
// with SIGKILL once the timeout has passed, so that a stuck task cannot
// block a job update or a drain.
func conformStopEscalates(t *testing.T, s Suite) {
	const grace = 300 * time.Millisecond
	d := s.New(t)
	cfg := s.prepare(t, s.Trap(t, "SIGTERM"))
	lines, _ := s.start(t, d, cfg)
	s.nextLine(t, lines, "ready")

	start := time.Now()
	must.NoError(t, d.StopTask(cfg.ID, grace, "SIGTERM"))
	must.GreaterEq(t, grace, time.Since(start))
	res := s.wait(t, d, cfg.ID)
	must.Eq(t, 128+int(syscall.SIGKILL), res.ExitCode, must.Sprint(res))
}

// conformSignal: a signal reaches the running task without stopping it
// (`nomad alloc signal`), and an unknown task or signal is refused.
func conformSignal(t *testing.T, s Suite) {
	d := s.New(t)
	sg, ok := d.(drivers.Signaler)
	if !ok {
		t.Skipf("%s does not implement drivers.Signaler", d.Name())
	}
	cfg := s.prepare(t, s.Trap(t, "SIGUSR1"))
	lines, _ := s.start(t, d, cfg)
	s.nextLine(t, lines, "ready")

	must.NoError(t, sg.SignalTask(cfg.ID, "SIGUSR1"))
	s.nextLine(t, lines, "trapped")
	st, err := d.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, drivers.TaskStateRunning, st.State)
	must.ErrorIs(t, sg.SignalTask("nope", "SIGUSR1"), drivers.ErrTaskNotFound)
	must.ErrorIs(t, sg.SignalTask(cfg.ID, "SIGBOGUS"), drivers.ErrUnknownSignal)
	must.NoError(t, d.StopTask(cfg.ID, s.Timeout, "SIGKILL"))
}

// conformRecover: a second driver instance (a restarted agent) re-attaches
// to a running task from its persisted handle, once however often it is
// asked, with the task's start time, and can stop it and see it exit.
func conformRecover(t *testing.T, s Suite) {
	d1 := s.New(t)
	cfg := s.prepare(t, s.Sleep(t))
	lines, h := s.start(t, d1, cfg)
	s.nextLine(t, lines, "ready")
	saved := Persisted(t, h)

	d2 := s.New(t)
	s.destroyOnCleanup(t, d2, cfg.ID)
	must.NoError(t, d2.RecoverTask(saved))
	must.NoError(t, d2.RecoverTask(saved), must.Sprint("recovering again is a no-op"))
	st, err := d2.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, drivers.TaskStateRunning, st.State)
	must.True(t, st.StartedAt.Equal(saved.StartedAt), must.Sprintf("started %v, handle says %v", st.StartedAt, saved.StartedAt))

	must.NoError(t, d2.StopTask(cfg.ID, s.Timeout, "SIGTERM"))
	res := s.wait(t, d2, cfg.ID)
	must.False(t, res.Successful())
	if s.Caps.ExitStatusSurvivesAgent {
		must.Eq(t, 128+int(syscall.SIGTERM), res.ExitCode, must.Sprint(res))
	} else {
		must.ErrorIs(t, res.Err, drivers.ErrExitCodeUnknown)
	}
}

// conformRecoverExited: a task that exited while no agent watched it is
// either recovered as exited with its real exit code (where the status
// survives the agent) or reported gone, so that the task runner never
// waits on it forever.
func conformRecoverExited(t *testing.T, s Suite) {
	d1 := s.New(t)
	cfg := s.prepare(t, s.Exit(t, 3))
	_, h := s.start(t, d1, cfg)
	saved := Persisted(t, h)
	s.wait(t, d1, cfg.ID)

	d2 := s.New(t)
	s.destroyOnCleanup(t, d2, cfg.ID)
	err := d2.RecoverTask(saved)
	if !s.Caps.ExitStatusSurvivesAgent {
		must.ErrorIs(t, err, drivers.ErrTaskNotFound)
		_, err = d2.InspectTask(cfg.ID)
		must.ErrorIs(t, err, drivers.ErrTaskNotFound)
		return
	}
	must.NoError(t, err)
	must.Eq(t, 3, s.wait(t, d2, cfg.ID).ExitCode)
}

// conformRecoverAfterReboot: a handle from before a reboot is refused with
// ErrTaskNotFound even when its pid and start tick happen to name a live
// process now, which is left alone: after a reboot they name nothing of
// the task's, and adopting them would let a stop kill a stranger.
func conformRecoverAfterReboot(t *testing.T, s Suite) {
	if s.Caps.AfterReboot == nil {
		d := s.New(t)
		t.Skipf("%s handles do not name processes of one boot", d.Name())
	}
	d1 := s.New(t)
	cfg := s.prepare(t, s.Sleep(t))
	lines, h := s.start(t, d1, cfg)
	s.nextLine(t, lines, "ready")
	rebooted := s.Caps.AfterReboot(t, Persisted(t, h))

	d2 := s.New(t)
	s.destroyOnCleanup(t, d2, cfg.ID)
	must.ErrorIs(t, d2.RecoverTask(rebooted), drivers.ErrTaskNotFound)
	_, err := d2.InspectTask(cfg.ID)
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)
	st, err := d1.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, drivers.TaskStateRunning, st.State, must.Sprint("the process the old handle matches was left alone"))
}

// conformFindTask: an agent that lost its state finds the task an earlier
// one left running, with its start time, instead of starting it twice;
// another allocation's task is never taken for it, nor a task that has
// exited.
func conformFindTask(t *testing.T, s Suite) {
	d1 := s.New(t)
	if _, ok := d1.(drivers.TaskFinder); !ok {
		t.Skipf("%s does not implement drivers.TaskFinder", d1.Name())
	}
	cfg := s.prepare(t, s.Sleep(t))
	lines, saved := s.start(t, d1, cfg)
	s.nextLine(t, lines, "ready")

	d2 := s.New(t)
	s.destroyOnCleanup(t, d2, cfg.ID)
	finder := d2.(drivers.TaskFinder)
	_, err := finder.FindTask(s.prepare(t, s.Sleep(t)))
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)

	found, err := finder.FindTask(cfg)
	must.NoError(t, err)
	must.Eq(t, cfg.ID, found.Config.ID)
	must.Less(t, 2*time.Second, found.StartedAt.Sub(saved.StartedAt).Abs(), must.Sprint("the task's own start time"))
	st, err := d2.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, drivers.TaskStateRunning, st.State)

	must.NoError(t, d2.StopTask(cfg.ID, s.Timeout, "SIGTERM"))
	must.False(t, s.wait(t, d2, cfg.ID).Successful())
	s.wait(t, d1, cfg.ID)
	_, err = finder.FindTask(cfg)
	must.ErrorIs(t, err, drivers.ErrTaskNotFound, must.Sprint("an exited task is not found"))
}

// OtherBoot returns a copy of h whose DriverState names another boot, as
// the handle of a task started before a reboot reads afterwards. It is
// Caps.AfterReboot for drivers that persist the boot ID as "boot_id"; it
// skips the test where the kernel exposes no boot ID.
func OtherBoot(t *testing.T, h *drivers.TaskHandle) *drivers.TaskHandle {
	t.Helper()
	var st map[string]any
	must.NoError(t, json.Unmarshal(h.DriverState, &st))
	boot, _ := st["boot_id"].(string)
	if boot == "" {
		t.Skip("the kernel exposes no boot ID")
	}
	st["boot_id"] = "00000000-0000-0000-0000-000000000000"
	out := h.Copy()
	must.NoError(t, out.SetDriverState(st))
	return out
}

// allocSeq numbers the suite's allocations, so that tasks of one run never
// share an ID, a cgroup or a container name.
var allocSeq atomic.Int64

// prepare gives cfg a fresh allocation and task ID, the environment the
// client sets on every task, and log paths where it has none.
func (s Suite) prepare(t *testing.T, cfg *drivers.TaskConfig) *drivers.TaskConfig {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "web"
	}
	cfg.AllocID = fmt.Sprintf("%08x-0000-4000-8000-%012x", os.Getpid(), allocSeq.Add(1))
	cfg.ID = cfg.AllocID + "/" + cfg.Name
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	cfg.Env["NOMAD_ALLOC_ID"] = cfg.AllocID
	cfg.Env["NOMAD_TASK_NAME"] = cfg.Name
	if cfg.StdoutPath == "" {
		logs := filepath.Join(t.TempDir(), "logs")
		cfg.StdoutPath = filepath.Join(logs, cfg.Name+".stdout.0")
		cfg.StderrPath = filepath.Join(logs, cfg.Name+".stderr.0")
	}
	return cfg
}

// start makes cfg's stdout a FIFO whose lines it returns (FIFOLines),
// starts cfg with d and destroys the task when the test ends, before the
// FIFO closes.
func (s Suite) start(t *testing.T, d drivers.Driver, cfg *drivers.TaskConfig) (<-chan string, *drivers.TaskHandle) {
	t.Helper()
	lines := FIFOLines(t, cfg.StdoutPath)
	h, err := d.StartTask(cfg)
	must.NoError(t, err)
	s.destroyOnCleanup(t, d, cfg.ID)
	return lines, h
}

// destroyOnCleanup destroys id on d when the test ends, so that a failing
// test leaks no task into the next.
func (s Suite) destroyOnCleanup(t *testing.T, d drivers.Driver, id string) {
	t.Cleanup(func() {
		if err := d.DestroyTask(id, true); err != nil && !errors.Is(err, drivers.ErrTaskNotFound) {
			t.Logf("destroying %s: %v", id, err)
		}
	})
}

// nextLine fails the test unless the task's next stdout line is want.
func (s Suite) nextLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	must.Eq(t, want, NextLine(t, lines, s.Timeout))
}

// wait returns the task's exit result, or fails the test after Timeout.
func (s Suite) wait(t *testing.T, d drivers.Driver, id string) *drivers.ExitResult {
	t.Helper()
	return WaitExit(t, d, id, s.Timeout)
}

// shLoop runs until killed, its sleeps in the background because a trap
// runs only between commands.
const shLoop = `echo ready; while :; do sleep 1 & wait $!; done`

// SleepScript is the suite's Sleep as a shell script, for drivers whose
// tasks can run /bin/sh -c. A task that is the init of its PID namespace
// (pid1: exec's, a container's command) ignores a signal it does not
// handle, so it traps SIGTERM to die of it; a plain process dies of the
// signal itself.
func SleepScript(pid1 bool) string {
	if pid1 {
		return `trap 'exit 143' TERM; ` + shLoop
	}
	return `echo ready; exec sleep 300`
}

// ExitScript is the suite's Exit as a shell script.
func ExitScript(code int) string { return "exit " + strconv.Itoa(code) }

// TrapScript is the suite's Trap as a shell script.
func TrapScript(sig string) string {
	return `trap 'echo trapped' ` + strings.TrimPrefix(sig, "SIG") + `; ` + shLoop
}
