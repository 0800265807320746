package partition

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"
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
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if pids := pidsWithAllocID(allocID); len(pids) > 0 {
			t.Fatalf("%s: allocation %s has processes %v", why, allocID, pids)
		}
	}
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
	n := newNetns(t)
	var killIDs []string
	t.Cleanup(func() { // nothing of the test's tasks outlives it
		for _, id := range killIDs {
			killAllocTasks(id)
		}
	})
	dir := t.TempDir()
	serverCfg := filepath.Join(dir, "server.hcl")
	must.NoError(t, os.WriteFile(serverCfg, []byte(`
ports {
  http = 24646
  rpc  = 24647
}
server {
  min_heartbeat_ttl = "2s"
  heartbeat_grace   = "1s"
}
`), 0o644))
	clientCfg := filepath.Join(dir, "client.hcl")
	must.NoError(t, os.WriteFile(clientCfg, []byte(`
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`), 0o644))
	startAgent(t, "", "-dev", "-bind", n.hostIP, "-config", serverCfg, "-data-dir", filepath.Join(dir, "server"))
	e := &edge{n: n, api: fmt.Sprintf("http://%s:24646", n.hostIP)}
	pollUntil(t, 30*time.Second, "server up", func() (bool, string) {
		var nodes []nodeStub
		err := getJSON(e.api+"/v1/nodes", &nodes)
		return err == nil, fmt.Sprint(err)
	})
	clientArgs := []string{"-client", "-servers", n.hostIP + ":24647", "-bind", n.nsIP,
		"-node", "edge-ns", "-data-dir", filepath.Join(dir, "client"), "-config", clientCfg}
	client := startAgent(t, n.name, clientArgs...)
	pollUntil(t, 30*time.Second, "edge node ready", func() (bool, string) {
		var nodes []nodeStub
		if err := getJSON(e.api+"/v1/nodes", &nodes); err != nil {
			return false, err.Error()
		}
		for _, nd := range nodes {
			if nd.Name == "edge-ns" && nd.Status == "ready" {
				e.nodeID = nd.ID
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", nodes)
	})

	job := filepath.Join(dir, "edge.nomad.hcl")
	must.NoError(t, os.WriteFile(job, []byte(fmt.Sprintf(offlineRebootJob, window, delay, rawExecTask, rawExecTask)), 0o644))
	out, err := exec.Command(nomadBin, "job", "run", "-address", e.api, job).CombinedOutput()
	must.NoError(t, err, must.Sprint(string(out)))
	var app, nowin string
	pollUntil(t, 30*time.Second, "both allocations running on the edge node", func() (bool, string) {
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
		return app != "" && nowin != "" && len(pidsWithAllocID(app)) == 1 && len(pidsWithAllocID(nowin)) == 1,
			fmt.Sprintf("%+v", e.allocs())
	})
	killIDs = append(killIDs, app, nowin)

	linkDown.cut(t, n)
	cutAt := time.Now()
	// The power cut takes the agent and every task at once.
	must.NoError(t, client.cmd.Process.Signal(syscall.SIGKILL))
	for _, id := range []string{app, nowin} {
		for _, pid := range pidsWithAllocID(id) {
			must.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		}
	}
	pollUntil(t, 10*time.Second, "the tasks are dead", func() (bool, string) {
		a, w := pidsWithAllocID(app), pidsWithAllocID(nowin)
		return len(a)+len(w) == 0, fmt.Sprintf("app %v, nowin %v", a, w)
	})

	startAgent(t, n.name, append(clientArgs, "-log-level", "debug")...)
	restartedAt := time.Now()
	pollUntil(t, delay*5/4+10*time.Second, "the windowed task running again, with no server reachable", func() (bool, string) {
		pids := pidsWithAllocID(app)
		return len(pids) == 1, fmt.Sprintf("app pids %v", pids)
	})
	t.Logf("windowed task running again %v after the agent restarted (restart delay %v)", time.Since(restartedAt), delay)
	stayGone(t, nowin, 3*time.Second, "a group without a window waits for the servers")

	pollUntil(t, window+15*time.Second, "the client stopping the windowed task when its window ran out", func() (bool, string) {
		pids := pidsWithAllocID(app)
		return len(pids) == 0, fmt.Sprintf("app pids %v", pids)
	})
	stoppedAfter := time.Since(cutAt)
	t.Logf("windowed task stopped %v after the cut (window %v)", stoppedAfter, window)
	must.Greater(t, window-5*time.Second, stoppedAfter, must.Sprint("not before the window ran out since the last heartbeat"))
	stayGone(t, app, 3*time.Second, "stopped for good")
	stayGone(t, nowin, time.Second, "a group without a window waits for the servers")

	linkDown.heal(t, n)
	var seen []allocStub
	pollUntil(t, 60*time.Second, "exactly one running copy of each group after the heal", func() (bool, string) {
		seen = e.allocs()
		running := map[string][]string{}
		for _, a := range seen {
			if a.ClientStatus == "running" && a.DesiredStatus == "run" {
				running[a.TaskGroup] = append(running[a.TaskGroup], a.ID)
			}
		}
		ok := len(running["app"]) == 1 && len(running["nowin"]) == 1 &&
			len(pidsWithAllocID(running["app"][0])) == 1 && len(pidsWithAllocID(running["nowin"][0])) == 1
		if ok {
			killIDs = append(killIDs, running["app"][0], running["nowin"][0])
		}
		return ok, fmt.Sprintf("%+v", seen)
	})
	for _, a := range seen {
		if a.ID == app || a.ID == nowin {
			must.NotEq(t, "running", a.ClientStatus, must.Sprintf("the original %s does not run again: %+v", a.TaskGroup, a))
		}
	}
	var status string
	pollUntil(t, 30*time.Second, "alloc status shows the offline restart", func() (bool, string) {
		out, err := exec.Command(nomadBin, "alloc", "status", "-address", e.api, app).CombinedOutput()
		status = string(out)
		return err == nil && strings.Contains(status, "Restarted while disconnected"), status
	})
	t.Logf("nomad alloc status %s:\n%s", app, status)
	out, err = exec.Command(nomadBin, "alloc", "status", "-address", e.api, nowin).CombinedOutput()
	must.NoError(t, err, must.Sprint(string(out)))
	must.StrNotContains(t, string(out), "Restarted while disconnected")
}
