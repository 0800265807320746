package allocrunner

import (
	"testing"
	"testing/synctest"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/drivers/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// A task of a checked driver naming a user on the client's user.denylist
// fails validation and is never started or restarted, as upstream; the
// same user on a driver that is not checked runs.
func TestAllocRunner_UserDenylist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.users = UserPolicy{Denylist: map[string]bool{"root": true}, CheckedDrivers: map[string]bool{mock.Name: true}}
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "0s"})
		a.Job.TaskGroups[0].Tasks[0].User = "root"
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()

		got := h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
		ts := got.TaskStates["web"]
		must.True(t, ts.Failed)
		must.Eq(t, 0, ts.Restarts)
		must.Eq(t, []string{structs.TaskReceived, structs.TaskSetup, structs.TaskFailedValidation, structs.TaskNotRestarting}, eventTypesOf(ts))
		must.Eq(t, `running as user "root" is disallowed (the client's user.denylist applies to the mock_driver driver)`, ts.Events[2].DisplayMessage)

		h.users.CheckedDrivers = map[string]bool{"exec": true}
		b := clienttest.MockAlloc("node-1", map[string]any{"run_for": "0s"})
		b.Job.TaskGroups[0].Tasks[0].User = "root"
		br := h.runner(t, b)
		go br.Run()
		defer br.Destroy()
		h.rec.waitStatus(t, b.ID, structs.AllocClientStatusRunning)
	})
}
