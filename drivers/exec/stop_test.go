//go:build linux

package exec

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
)

// fifoLines streams the lines written to path: see drivertest.FIFOLines.
func fifoLines(t *testing.T, path string) <-chan string { return drivertest.FIFOLines(t, path) }

func nextLine(t *testing.T, lines <-chan string) string {
	t.Helper()
	return drivertest.NextLine(t, lines, testTimeout)
}

// A task that ignores its kill signal (a PID namespace's init without a
// handler does) is killed once kill_timeout has passed, with everything it
// started.
func TestStopTask_KillAfterTimeout(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "/bin/sh", "-c", `trap '' TERM; sleep 30 & echo ready; wait`)
	lines := fifoLines(t, cfg.StdoutPath)
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	must.Eq(t, "ready", nextLine(t, lines))
	h, err := d.tasks.Get(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, 2, len(h.State.Cgroups.Pids()), must.Sprint("the shell and its sleep"))

	must.NoError(t, d.StopTask(cfg.ID, 50*time.Millisecond, "SIGTERM"))
	res := waitExit(t, d, cfg.ID)
	must.Eq(t, int(syscall.SIGKILL), res.Signal)
	must.NoError(t, d.DestroyTask(cfg.ID, false))
	must.SliceEmpty(t, h.State.Cgroups.Pids())
}

// On a host that cannot isolate tasks the driver is not detected, says why,
// and refuses a task with that reason, which the client reports as the
// task's Driver Failure, instead of running it unconfined.
func TestFingerprint_CannotIsolate(t *testing.T) {
	d := newTestDriver(t, nil)
	d.hostCheck = func() (int, string) { return 0, "exec needs the agent to run as root" }
	fp := d.Fingerprint()
	must.False(t, fp.Detected)
	must.False(t, fp.Healthy)
	must.StrContains(t, fp.HealthDescription, "exec needs the agent to run as root")

	_, err := d.StartTask(newTaskConfig(t, "/bin/true"))
	must.ErrorIs(t, err, ErrCannotIsolate)
	must.ErrorContains(t, err, "exec needs the agent to run as root")
	must.False(t, drivers.IsRecoverable(err))
}

// Where it can isolate, the driver is healthy and tells the scheduler which
// cgroup version it limits tasks with.
func TestFingerprint_Healthy(t *testing.T) {
	needIsolation(t)
	fp := newTestDriver(t, nil).Fingerprint()
	must.True(t, fp.Detected)
	must.True(t, fp.Healthy)
	must.Eq(t, "1", fp.Attributes["driver.exec"])
	v, _ := cgroup.Detect(cgroupControllers)
	must.Eq(t, "v"+itoa(v), fp.Attributes["driver.exec.cgroup"])
}

// A task whose init cannot set it up fails to start with the init's
// reason, and leaves no cgroup behind.
func TestStartTask_SetupFailure(t *testing.T) {
	needIsolation(t)
	d := newTestDriver(t, nil)
	cfg := newTaskConfig(t, "no-such-command")
	_, err := d.StartTask(cfg)
	must.ErrorIs(t, err, ErrTaskSetup)
	must.ErrorContains(t, err, `command "no-such-command": not found`)
	v, _ := cgroup.Detect(cgroupControllers)
	for _, p := range cgroup.For(v, cgroup.NameFor(cfg.ID), taskControllers()).Paths {
		_, err := os.Stat(p)
		must.True(t, os.IsNotExist(err), must.Sprintf("cgroup %s removed", p))
	}
	// The ID is free again for the restart policy's next attempt.
	cfg.Config["command"] = "/bin/true"
	_, err = d.StartTask(cfg)
	must.NoError(t, err)
	must.True(t, waitExit(t, d, cfg.ID).Successful())
}
