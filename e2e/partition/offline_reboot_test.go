package partition

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// offlineRebootJob has a raw_exec task in a group with a disconnect window
// ("app") and in one without ("nowin"), both pinned to the edge node so
// that no replacement can go elsewhere while it is cut off.
const offlineRebootJob = `
job "edge" {
  datacenters = ["dc1"]
  constraint {
    attribute = "${node.unique.name}"
    value     = "edge-ns"
  }
  group "app" {
    disconnect {
      lost_after = "%s"
    }
    restart {
      attempts = 3
      interval = "5m"
      delay    = "%s"
      mode     = "fail"
    }
%s
  }
  group "nowin" {
%s
  }
}
`

const rawExecTask = `
    task "app" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }`

// stayGone checks for a while that no process of the allocation runs.
func stayGone(t *testing.T, allocID string, d time.Duration, why string) {
	t.Helper()
	harness.Hold(t, d, why, func() error {
		if pids := harness.AllocPIDs(allocID); len(pids) > 0 {
			return fmt.Errorf("allocation %s has processes %v", allocID, pids)
		}
		return nil
	})
}

// Offline reboot ("Offline reboot" in docs/concepts/disconnected-clients.md),
// on a real network: an edge client with raw_exec tasks is cut off, then
// loses power (its agent and tasks are killed with SIGKILL) and comes back
// still cut off. The task of the group with a disconnect window runs again
// within its restart delay, with no server reachable, and the client stops
// it when the window has run out since its last heartbeat; the task of the
// group without a window stays stopped, as upstream leaves it. On heal the
// servers keep exactly one running copy of each group, and `nomad alloc
// status` of the restarted allocation shows `Restarted while disconnected`.
func TestPartition_OfflineReboot(t *testing.T) {
	const window, delay = 40 * time.Second, 2 * time.Second
	e := newEdge(t, edgeOptions{fault: harness.LinkDown, clientConfig: `
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`})
	e.runJob(fmt.Sprintf(offlineRebootJob, window, delay, rawExecTask, rawExecTask))
	var app, nowin string
	wait.Poll(t, 30*time.Second, "both allocations running on the edge node", func() (bool, string) {
		app, nowin = "", ""
		for _, a := range e.allocs() {
			if a.ClientStatus == "running" && a.NodeID == e.nodeID {
				switch a.TaskGroup {
				case "app":
					app = a.ID
				case "nowin":
					nowin = a.ID
				}
			}
		}
		return app != "" && nowin != "" && len(harness.AllocPIDs(app)) == 1 && len(harness.AllocPIDs(nowin)) == 1,
			fmt.Sprintf("%+v", e.allocs())
	})
	// Tasks killed while no agent runs leave their cgroups: the cleanup
	// removes those of these allocations.
	e.agents.KillAtEnd(harness.AllocMark(app), harness.AllocMark(nowin))

	heal := e.fab.Apply("client", harness.LinkDown)
	cutAt := time.Now()
	// The power cut takes the agent and every task at once.
	e.client.Kill9()
	for _, id := range []string{app, nowin} {
		for _, pid := range harness.AllocPIDs(id) {
			must.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		}
	}
	wait.Poll(t, 10*time.Second, "the tasks are dead", func() (bool, string) {
		a, w := harness.AllocPIDs(app), harness.AllocPIDs(nowin)
		return len(a)+len(w) == 0, fmt.Sprintf("app %v, nowin %v", a, w)
	})

	e.client.Args = append(e.client.Args, "-log-level", "debug")
	e.client.Start()
	restartedAt := time.Now()
	wait.Poll(t, delay*5/4+10*time.Second, "the windowed task running again, with no server reachable", func() (bool, string) {
		pids := harness.AllocPIDs(app)
		return len(pids) == 1, fmt.Sprintf("app pids %v", pids)
	})
	t.Logf("windowed task running again %v after the agent restarted (restart delay %v)", time.Since(restartedAt), delay)
	stayGone(t, nowin, 3*time.Second, "a group without a window waits for the servers")

	wait.Poll(t, window+15*time.Second, "the client stopping the windowed task when its window ran out", func() (bool, string) {
		pids := harness.AllocPIDs(app)
		return len(pids) == 0, fmt.Sprintf("app pids %v", pids)
	})
	stoppedAfter := time.Since(cutAt)
	t.Logf("windowed task stopped %v after the cut (window %v)", stoppedAfter, window)
	must.Greater(t, window-5*time.Second, stoppedAfter, must.Sprint("not before the window ran out since the last heartbeat"))
	stayGone(t, app, 3*time.Second, "stopped for good")
	stayGone(t, nowin, time.Second, "a group without a window waits for the servers")

	heal()
	var seen []allocStub
	wait.Poll(t, 60*time.Second, "exactly one running copy of each group after the heal", func() (bool, string) {
		seen = e.allocs()
		running := map[string][]string{}
		for _, a := range seen {
			if a.ClientStatus == "running" && a.DesiredStatus == "run" {
				running[a.TaskGroup] = append(running[a.TaskGroup], a.ID)
			}
		}
		ok := len(running["app"]) == 1 && len(running["nowin"]) == 1 &&
			len(harness.AllocPIDs(running["app"][0])) == 1 && len(harness.AllocPIDs(running["nowin"][0])) == 1
		if ok {
			e.agents.KillAtEnd(harness.AllocMark(running["app"][0]), harness.AllocMark(running["nowin"][0]))
		}
		return ok, fmt.Sprintf("%+v", seen)
	})
	for _, a := range seen {
		if a.ID == app || a.ID == nowin {
			must.NotEq(t, "running", a.ClientStatus, must.Sprintf("the original %s does not run again: %+v", a.TaskGroup, a))
		}
	}
	var status string
	wait.Poll(t, 30*time.Second, "alloc status shows the offline restart", func() (bool, string) {
		var code int
		status, code = e.server.Nomad("alloc", "status", app)
		return code == 0 && strings.Contains(status, "Restarted while disconnected"), status
	})
	t.Logf("nomad alloc status %s:\n%s", app, status)
	out, code := e.server.Nomad("alloc", "status", nowin)
	must.Eq(t, 0, code, must.Sprint(out))
	must.StrNotContains(t, out, "Restarted while disconnected")
}
