package allocrunner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// delayedAlloc returns a running-forever mock allocation whose group waits
// group and whose task waits task before the kill signal.
func delayedAlloc(group, task time.Duration) *structs.Allocation {
	a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "0s"})
	a.Job.TaskGroups[0].ShutdownDelay = &group
	a.Job.TaskGroups[0].Tasks[0].ShutdownDelay = task
	return a
}

// A server stop waits the group's shutdown_delay, then the task's, before
// the kill signal, on the runner's clock: a load balancer gets the time to
// stop sending the task work, as upstream promises.
func TestAllocRunner_ShutdownDelayWaitsGroupThenTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := delayedAlloc(10*time.Second, 5*time.Second)
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		stopped := a.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		start := time.Now()
		ar.Update(stopped)
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		must.Eq(t, 15*time.Second, time.Since(start))
		ts := got.TaskStates["web"]
		must.Eq(t, []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted,
			structs.TaskWaitingShuttingDownDelay, structs.TaskKilling, structs.TaskKilled}, eventTypesOf(ts))
		must.Eq(t, "Waiting for shutdown_delay of 5s before killing the task.", ts.Events[3].DisplayMessage)
		must.Eq(t, start.Add(10*time.Second).UnixNano(), ts.Events[3].Time)
		must.Eq(t, start.Add(15*time.Second).UnixNano(), ts.Events[4].Time)
	})
}

// A stop with NoShutdownDelay (alloc stop -no-shutdown-delay) skips both
// delays and says so in the task's events.
func TestAllocRunner_NoShutdownDelaySkipsBoth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := delayedAlloc(10*time.Second, 5*time.Second)
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		stopped := a.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		yes := true
		stopped.DesiredTransition.NoShutdownDelay = &yes
		start := time.Now()
		ar.Update(stopped)
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		must.Eq(t, time.Duration(0), time.Since(start))
		ts := got.TaskStates["web"]
		must.Eq(t, []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted,
			structs.TaskSkippingShutdownDelay, structs.TaskKilling, structs.TaskKilled}, eventTypesOf(ts))
		must.Eq(t, "Skipping shutdown_delay of 5s before killing the task.", ts.Events[3].DisplayMessage)
	})
}

// A task that exits during its shutdown_delay is recorded as exited and
// killed at once, without waiting out the delay or sending a signal.
func TestAllocRunner_TaskExitsDuringShutdownDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "30s"})
		a.Job.TaskGroups[0].Tasks[0].ShutdownDelay = time.Hour
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		begun := time.Now()

		stopped := a.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		ar.Update(stopped)
		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		must.Eq(t, 30*time.Second, time.Since(begun))
		must.Eq(t, []string{structs.TaskReceived, structs.TaskSetup, structs.TaskStarted,
			structs.TaskWaitingShuttingDownDelay, structs.TaskTerminated, structs.TaskKilled}, eventTypesOf(got.TaskStates["web"]))
	})
}

// A client shutting down during the group's delay leaves the task running
// for the next client to re-attach: only the servers decide a stop, and
// the next client will see it.
func TestAllocRunner_ShutdownDuringShutdownDelayLeavesTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := delayedAlloc(time.Minute, 0)
		ar := h.runner(t, a)
		go ar.Run()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		stopped := a.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		ar.Update(stopped)
		time.Sleep(30 * time.Second) // fake time: halfway through the delay
		ar.Shutdown()
		synctest.Wait()
		must.Eq(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)
		st, err := h.drivers["mock_driver"].InspectTask(a.ID + "/web")
		must.NoError(t, err)
		must.Eq(t, "running", string(st.State))
	})
}

// Destroy (a -dev agent's exit, a test's cleanup) kills at once: the delay
// is for the servers' stops, and a teardown must not wait an hour.
func TestAllocRunner_DestroySkipsShutdownDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := delayedAlloc(time.Hour, time.Hour)
		ar := h.runner(t, a)
		go ar.Run()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		start := time.Now()
		ar.Destroy()
		must.Eq(t, time.Duration(0), time.Since(start))
	})
}

// A stop that skips shutdown_delay arriving while the delays are being
// waited (alloc stop -no-shutdown-delay after a plain stop) cuts them
// short, the group's and the task's, as upstream: the operator who is
// tired of waiting does not wait out the rest.
func TestAllocRunner_LaterNoShutdownDelayCutsDelays(t *testing.T) {
	for _, tc := range []struct {
		name        string
		group, task time.Duration
	}{
		{"during the group's delay", time.Hour, time.Hour},
		{"during the task's delay", 0, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				a := delayedAlloc(tc.group, tc.task)
				ar := h.runner(t, a)
				go ar.Run()
				defer ar.Destroy()
				h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

				stopped := a.Copy()
				stopped.DesiredStatus = structs.AllocDesiredStatusStop
				start := time.Now()
				ar.Update(stopped)
				time.Sleep(time.Minute)
				synctest.Wait()
				must.Eq(t, structs.AllocClientStatusRunning, ar.Alloc().ClientStatus)

				skip := stopped.Copy()
				yes := true
				skip.DesiredTransition.NoShutdownDelay = &yes
				skip.AllocModifyIndex++
				ar.Update(skip)
				h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
				must.Eq(t, time.Minute, time.Since(start))
			})
		})
	}
}

// A task's shutdown_delay changed by an in-place update is the one waited
// at the kill, as upstream reads it then; before, the runner kept the
// value the task started with.
func TestAllocRunner_ShutdownDelayFromInPlaceUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := delayedAlloc(0, 0)
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)

		updated := a.Copy()
		updated.Job = a.Job.Copy()
		updated.Job.TaskGroups[0].Tasks[0].ShutdownDelay = 30 * time.Second
		updated.AllocModifyIndex++
		ar.Update(updated)

		stopped := updated.Copy()
		stopped.DesiredStatus = structs.AllocDesiredStatusStop
		stopped.AllocModifyIndex++
		start := time.Now()
		ar.Update(stopped)
		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusComplete)
		must.Eq(t, 30*time.Second, time.Since(start))
	})
}
