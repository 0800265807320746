package allocrunner

import (
	"errors"
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// An operator's restart stops the task with its kill signal and starts it
// again at once, in place, without spending the restart policy: a task
// with no restarts left still restarts, and the allocation keeps running.
func TestTaskRunner_RestartInPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "1h"})
		a.Job.TaskGroups[0].Tasks[0].RestartPolicy = &structs.RestartPolicy{Attempts: 0, Mode: structs.RestartPolicyModeFail}
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()
		name := a.Job.TaskGroups[0].Tasks[0].Name
		h.rec.waitFor(t, a.ID, func(got *structs.Allocation) bool {
			ts := got.TaskStates[name]
			return ts != nil && ts.State == structs.TaskStateRunning
		})

		must.NoError(t, ar.Restart(name))
		got := h.rec.waitFor(t, a.ID, func(got *structs.Allocation) bool {
			ts := got.TaskStates[name]
			return ts != nil && ts.Restarts == 1 && ts.State == structs.TaskStateRunning
		})
		must.Eq(t, structs.AllocClientStatusRunning, got.ClientStatus)
		events := eventTypesOf(got.TaskStates[name])
		for _, want := range []string{structs.TaskRestartSignal, structs.TaskKilling, structs.TaskRestarting} {
			must.SliceContains(t, events, want)
		}
		must.Eq(t, structs.TaskStarted, events[len(events)-1])
		must.False(t, got.TaskStates[name].Failed)

		err := ar.Restart("nope")
		must.True(t, errors.Is(err, ErrUnknownTask))
		// mock_driver cannot signal: refused by name, not ignored.
		err = ar.Signal(name, "SIGHUP")
		must.True(t, errors.Is(err, ErrNotSupported))
		err = ar.Signal("", "SIGHUP")
		must.True(t, errors.Is(err, ErrNotSupported))
	})
}
