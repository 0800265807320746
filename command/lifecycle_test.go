package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// A job file with prestart, main and poststop tasks runs through the whole
// path (job file, API, server, client): the API's TaskStates show the
// prestart task completed once and the poststop task waiting while the
// allocation runs, `alloc status` names each task's lifecycle as upstream
// does, and a job stop runs the poststop task before the allocation
// completes.
func TestLifecycle_JobFileToAllocStatus(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	client := apiClient(t, a)
	path := filepath.Join(t.TempDir(), "lc.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`job "lc" {
  group "g" {
    task "init" {
      driver = "mock_driver"
      lifecycle {
        hook = "prestart"
      }
      config {
        run_for = "100ms"
      }
    }
    task "main" {
      driver = "mock_driver"
      config {
        run_for = "10m"
      }
    }
    task "cleanup" {
      driver = "mock_driver"
      lifecycle {
        hook = "poststop"
      }
      config {
        run_for = "100ms"
      }
    }
  }
}
`), 0o600))
	code, _, errOut := run(t, a, jobRun, "-detach", path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	var alloc *api.Allocation
	wait.Poll(t, 30*time.Second, "the main task running after init", func() (bool, string) {
		stubs, _, err := client.Jobs().Allocations("lc", false, nil)
		if err != nil || len(stubs) == 0 {
			return false, "no allocation yet"
		}
		alloc, _, err = client.Allocations().Info(stubs[0].ID, nil)
		if err != nil {
			return false, err.Error()
		}
		main, init := alloc.TaskStates["main"], alloc.TaskStates["init"]
		return main != nil && main.State == "running" && init != nil && init.State == "dead",
			"client status " + alloc.ClientStatus
	})
	must.Eq(t, api.AllocClientStatusRunning, alloc.ClientStatus)
	must.False(t, alloc.TaskStates["init"].Failed)
	must.Eq(t, "pending", alloc.TaskStates["cleanup"].State)

	code, out, errOut := run(t, a, allocStatus, alloc.ID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, `Task "init" (prestart) is "dead"`)
	must.StrContains(t, out, `Task "cleanup" (poststop) is "pending"`)
	must.StrContains(t, out, `Task "main" is "running"`)
	must.True(t, strings.Index(out, `Task "init"`) < strings.Index(out, `Task "main"`), must.Sprint("lifecycle tasks come first"))
	code, out, _ = run(t, a, allocStatus, "-short", alloc.ID)
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Lifecycle")

	code, _, errOut = run(t, a, jobStop, "-detach", "lc")
	must.Eq(t, 0, code, must.Sprint(errOut))
	wait.Poll(t, 30*time.Second, "the poststop task run after the stop", func() (bool, string) {
		got, _, err := client.Allocations().Info(alloc.ID, nil)
		if err != nil {
			return false, err.Error()
		}
		c := got.TaskStates["cleanup"]
		return got.ClientStatus == api.AllocClientStatusComplete && c.State == "dead" && !c.Failed && len(c.Events) > 1,
			"client status " + got.ClientStatus + ", cleanup " + c.State
	})
}

// An invalid hook is refused before anything reaches the servers, at its
// position in the file, the hook named.
func TestLifecycle_InvalidHookRefused(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := filepath.Join(t.TempDir(), "bad.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`job "bad" {
  group "g" {
    task "init" {
      driver = "mock_driver"
      lifecycle {
        hook = "prestrt"
      }
    }
    task "main" {
      driver = "mock_driver"
    }
  }
}
`), 0o600))
	code, _, errOut := run(t, a, jobRun, "-detach", path)
	must.NotEq(t, 0, code)
	must.StrContains(t, errOut, `bad.nomad.hcl:6:16: lifecycle block of task "init": invalid hook "prestrt"`)
}
