package command

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// job stop -no-shutdown-delay reaches the client through the API, the
// server and the stop's raft entry: a task whose group waits an hour
// before its kill signal is killed at once, and its events say the delay
// was skipped.
func TestJobStop_NoShutdownDelay(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	client := apiClient(t, a)
	path := filepath.Join(t.TempDir(), "slow.nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(`job "slow" {
  group "g" {
    shutdown_delay = "1h"
    task "t" {
      driver         = "mock_driver"
      shutdown_delay = "1h"
      config {
        run_for = "5m"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`), 0o600))
	code, _, errOut := run(t, a, jobRun, "-detach", path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	allocID := ""
	wait.Poll(t, 30*time.Second, "the allocation running", func() (bool, string) {
		stubs, _, err := client.Jobs().Allocations("slow", false, nil)
		if err != nil || len(stubs) == 0 {
			return false, "no allocation yet"
		}
		allocID = stubs[0].ID
		return stubs[0].ClientStatus == api.AllocClientStatusRunning, "client status " + stubs[0].ClientStatus
	})

	code, _, errOut = run(t, a, jobStop, "-detach", "-no-shutdown-delay", "slow")
	must.Eq(t, 0, code, must.Sprint(errOut))
	wait.Poll(t, 30*time.Second, "the task killed without its shutdown delay", func() (bool, string) {
		alloc, _, err := client.Allocations().Info(allocID, nil)
		if err != nil {
			return false, err.Error()
		}
		ts := alloc.TaskStates["t"]
		if ts == nil {
			return false, "no task state"
		}
		var types []string
		for _, e := range ts.Events {
			types = append(types, e.Type)
		}
		return alloc.ClientStatus == api.AllocClientStatusComplete && slices.Contains(types, "Skipping shutdown delay"),
			"client status " + alloc.ClientStatus + ", events " + strings.Join(types, ", ")
	})
}

// A stop already under way, whose task waits out an hour's shutdown_delay,
// is cut short by a second stop with -no-shutdown-delay, through `alloc
// stop` or `job stop`: the mark reaches the client although no plan
// follows it.
func TestStop_NoShutdownDelayCutsStopInProgress(t *testing.T) {
	for _, via := range []string{"alloc stop", "job stop"} {
		t.Run(via, func(t *testing.T) {
			a := agenttest.NewDevAgent(t, nil)
			client := apiClient(t, a)
			path := filepath.Join(t.TempDir(), "slow.nomad.hcl")
			must.NoError(t, os.WriteFile(path, []byte(`job "slow" {
  group "g" {
    task "t" {
      driver         = "mock_driver"
      shutdown_delay = "1h"
      config {
        run_for = "5m"
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`), 0o600))
			code, _, errOut := run(t, a, jobRun, "-detach", path)
			must.Eq(t, 0, code, must.Sprint(errOut))
			allocID := ""
			wait.Poll(t, 30*time.Second, "the allocation running", func() (bool, string) {
				stubs, _, err := client.Jobs().Allocations("slow", false, nil)
				if err != nil || len(stubs) == 0 {
					return false, "no allocation yet"
				}
				allocID = stubs[0].ID
				return stubs[0].ClientStatus == api.AllocClientStatusRunning, "client status " + stubs[0].ClientStatus
			})
			events := func() (*api.Allocation, []string) {
				alloc, _, err := client.Allocations().Info(allocID, nil)
				if err != nil || alloc.TaskStates["t"] == nil {
					return nil, nil
				}
				var types []string
				for _, e := range alloc.TaskStates["t"].Events {
					types = append(types, e.Type)
				}
				return alloc, types
			}
			code, _, errOut = run(t, a, jobStop, "-detach", "slow")
			must.Eq(t, 0, code, must.Sprint(errOut))
			wait.Poll(t, 30*time.Second, "the task waiting out its delay", func() (bool, string) {
				_, types := events()
				return slices.Contains(types, "Waiting for shutdown delay"), strings.Join(types, ", ")
			})

			if via == "alloc stop" {
				code, out, errOut := run(t, a, allocStop, "-no-shutdown-delay", allocID)
				must.Eq(t, 0, code, must.Sprint(errOut))
				must.StrContains(t, out, "already stopping")
			} else {
				code, _, errOut = run(t, a, jobStop, "-detach", "-no-shutdown-delay", "slow")
				must.Eq(t, 0, code, must.Sprint(errOut))
			}
			wait.Poll(t, 30*time.Second, "the delay cut short", func() (bool, string) {
				alloc, types := events()
				if alloc == nil {
					return false, "no allocation"
				}
				return alloc.ClientStatus == api.AllocClientStatusComplete && slices.Contains(types, "Killed"),
					"client status " + alloc.ClientStatus + ", events " + strings.Join(types, ", ")
			})
		})
	}
}
