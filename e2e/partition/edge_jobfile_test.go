package partition

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// edgeJobFile is the typical edge job file of issue 22: the binary of a
// raw_exec task comes from an artifact, a prestart task prepares the host
// volume it keeps its data in, a sidecar runs beside it, and the values a
// pipeline varies come from a -var-file. The app refuses to start on a
// volume its prestart task has not prepared.
const edgeJobFile = `
variable "artifact_url" {
  type = string
}

variable "volume" {
  type    = string
  default = "scratch"
}

variable "data_path" {
  type = string
  validation {
    condition     = can(regex("^/", var.data_path))
    error_message = "The data path must be absolute."
  }
}

variable "sidecar_seconds" {
  type    = number
  default = 3600
}

locals {
  app_binary = "edge-app"
  marker     = upper("v1")
}

job "edge" {
  datacenters = ["dc1"]
  constraint {
    attribute = "${node.unique.name}"
    value     = "edge-ns"
  }
  group "app" {
    disconnect {
      lost_after = "1h"
    }
    restart {
      attempts = 3
      interval = "5m"
      delay    = "2s"
      mode     = "fail"
    }
    volume "data" {
      type   = "host"
      source = var.volume
    }

    task "prepare" {
      driver = "exec"
      lifecycle {
        hook = "prestart"
      }
      volume_mount {
        volume      = "data"
        destination = "/srv/data"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo prepared >> /srv/data/prestart.log && echo ${local.marker} > /srv/data/config"]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }

    task "app" {
      driver = "raw_exec"
      artifact {
        source      = var.artifact_url
        destination = "local/bin"
      }
      config {
        command = "local/bin/${local.app_binary}"
        args    = [var.data_path, local.marker]
      }
      resources {
        cpu    = 100
        memory = 32
      }
    }

    task "sidecar" {
      driver = "raw_exec"
      lifecycle {
        hook    = "poststart"
        sidecar = true
      }
      config {
        command = "/bin/sleep"
        args    = [format("%d", var.sidecar_seconds)]
      }
      resources {
        cpu    = 50
        memory = 16
      }
    }
  }
}
`

// edgeApp is the artifact's binary: it checks the volume was prepared,
// records its start in the volume, and runs until stopped.
const edgeApp = `#!/bin/sh
test "$(cat "$1/config")" = "$2" || { echo "volume not prepared" >&2; exit 3; }
echo "start $$" >> "$1/app.log"
exec /bin/sleep 3600
`

// artifactServer serves the app as a tar.gz with an ETag on the fabric's
// host address, and counts the requests: none after the first means the
// client never downloaded it again, not even conditionally.
type artifactServer struct {
	url      string
	requests atomic.Int32
}

func serveArtifact(t *testing.T, ip string) *artifactServer {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	must.NoError(t, tw.WriteHeader(&tar.Header{Name: "edge-app", Mode: 0o755, Size: int64(len(edgeApp)), Typeflag: tar.TypeReg}))
	_, err := tw.Write([]byte(edgeApp))
	must.NoError(t, err)
	must.NoError(t, tw.Close())
	must.NoError(t, gz.Close())
	body := buf.Bytes()

	l, err := net.Listen("tcp", ip+":0")
	must.NoError(t, err)
	s := &artifactServer{url: fmt.Sprintf("http://%s/edge-app.tar.gz", l.Addr())}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		w.Header().Set("ETag", `"edge-app-1"`)
		if r.Header.Get("If-None-Match") == `"edge-app-1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// edgeAlloc is what the test reads of the allocation.
type edgeAlloc struct {
	ID, NodeID, ClientStatus, DesiredStatus string
	TaskStates                              map[string]struct {
		State     string
		Failed    bool
		Restarts  uint64
		StartedAt time.Time
		Events    []struct{ Type, DisplayMessage string }
	}
}

func (e *edge) edgeAllocs() []edgeAlloc {
	var list []edgeAlloc
	_ = e.server.GetJSON("/v1/job/edge/allocations", &list)
	return list
}

// lines reads a file of the host volume, one entry a line.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	must.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// eventTypes lists a task's event types, for failure messages and for
// what must not be among them.
func eventTypes(a edgeAlloc, task string) []string {
	var out []string
	for _, ev := range a.TaskStates[task].Events {
		out = append(out, ev.Type)
	}
	return out
}

// The edge job file of issue 22 run by the real binary: `nomad job run
// -var-file` renders its variables, locals and functions; the client
// downloads the app's artifact once, runs the prestart task in the host
// volume, then the app from the artifact and its sidecar. Through a
// partition nothing restarts and nothing is downloaded again. After an
// offline reboot (the agent and its tasks killed while cut off, the agent
// started again still cut off) the app and the sidecar run again from
// what the node kept: the artifact is not fetched, the prestart task does
// not run again, the volume's data is still there. On the heal the same
// allocation runs, still without a new download.
func TestPartition_EdgeJobFile(t *testing.T) {
	harness.NeedExecDriver(t) // the prestart task mounts the volume with exec
	vol := t.TempDir()
	must.NoError(t, os.Chmod(vol, 0o777)) // exec runs the prestart task as nobody
	e := newEdge(t, edgeOptions{fault: harness.LinkDown, netOnly: true, clientConfig: fmt.Sprintf(`
client {
  host_volume "edge-data" {
    path = %q
  }
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
`, vol)})
	art := serveArtifact(t, e.fab.HostIP())

	dir := e.agents.Dir
	jobPath, varsPath := filepath.Join(dir, "edge.nomad.hcl"), filepath.Join(dir, "edge.vars.hcl")
	must.NoError(t, os.WriteFile(jobPath, []byte(edgeJobFile), 0o644))
	must.NoError(t, os.WriteFile(varsPath, []byte(fmt.Sprintf("artifact_url = %q\nvolume = \"edge-data\"\ndata_path = %q\n", art.url, vol)), 0o644))
	out, code := e.server.Nomad("job", "run", "-var-file", varsPath, jobPath)
	must.Eq(t, 0, code, must.Sprint(out))

	var first edgeAlloc
	var appPIDs, sidecarPIDs []int
	wait.Poll(t, 60*time.Second, "app and sidecar running on the edge node after the prestart task", func() (bool, string) {
		list := e.edgeAllocs()
		if len(list) != 1 {
			return false, fmt.Sprintf("%+v", list)
		}
		first = list[0]
		appPIDs, sidecarPIDs = harness.TaskPIDs(first.ID, "app"), harness.TaskPIDs(first.ID, "sidecar")
		ts := first.TaskStates
		return first.ClientStatus == "running" && ts["app"].State == "running" && ts["sidecar"].State == "running" &&
				len(appPIDs) == 1 && len(sidecarPIDs) == 1,
			fmt.Sprintf("%s; app %v %v sidecar %v %v prepare %v", first.ClientStatus, appPIDs, eventTypes(first, "app"),
				sidecarPIDs, eventTypes(first, "sidecar"), eventTypes(first, "prepare"))
	})
	e.agents.KillAtEnd(harness.AllocMark(first.ID))
	prep := first.TaskStates["prepare"]
	must.Eq(t, "dead", prep.State, must.Sprint("the prestart task ran to completion"))
	must.False(t, prep.Failed)
	must.Eq(t, []string{"prepared"}, lines(t, filepath.Join(vol, "prestart.log")))
	must.SliceLen(t, 1, lines(t, filepath.Join(vol, "app.log")), must.Sprint("the app started once"))
	must.Eq(t, int32(1), art.requests.Load(), must.Sprint("one download of the artifact"))
	status, code := e.server.Nomad("alloc", "status", first.ID)
	must.Eq(t, 0, code, must.Sprint(status))
	must.StrContains(t, status, "(prestart)")
	must.StrContains(t, status, "(poststart sidecar)")

	// A partition: the node is given up for disconnected, its allocation
	// unknown, and on the heal the same processes run on.
	got := e.cutAndHeal(t, harness.LinkDown, 8*time.Second)
	t.Logf("partition: heal → node ready %v, → allocation running %v", got.ready, got.running)
	healed := e.edgeAllocs()
	must.SliceLen(t, 1, healed)
	must.Eq(t, first.ID, healed[0].ID)
	for _, task := range []string{"app", "sidecar"} {
		must.Eq(t, uint64(0), healed[0].TaskStates[task].Restarts, must.Sprintf("%s was not restarted", task))
		must.Eq(t, first.TaskStates[task].StartedAt, healed[0].TaskStates[task].StartedAt, must.Sprint(task))
	}
	must.Eq(t, appPIDs, harness.TaskPIDs(first.ID, "app"), must.Sprint("the same app process"))
	must.Eq(t, sidecarPIDs, harness.TaskPIDs(first.ID, "sidecar"), must.Sprint("the same sidecar process"))
	must.Eq(t, int32(1), art.requests.Load(), must.Sprint("the reconnect downloaded nothing"))
	must.Eq(t, []string{"prepared"}, lines(t, filepath.Join(vol, "prestart.log")), must.Sprint("the prestart task did not run again"))

	// An offline reboot: cut off, then the power goes, taking the agent
	// and every task; the agent comes back still cut off.
	heal := e.fab.Apply("client", harness.LinkDown)
	e.client.Kill9()
	for _, pid := range harness.AllocPIDs(first.ID) {
		must.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	}
	wait.Poll(t, 10*time.Second, "the tasks are dead", func() (bool, string) {
		pids := harness.AllocPIDs(first.ID)
		return len(pids) == 0, fmt.Sprint(pids)
	})
	e.client.Start()
	restartedAt := time.Now()
	var app2, sidecar2 []int
	wait.Poll(t, 30*time.Second, "app and sidecar running again with no server or artifact server reachable", func() (bool, string) {
		app2, sidecar2 = harness.TaskPIDs(first.ID, "app"), harness.TaskPIDs(first.ID, "sidecar")
		return len(app2) == 1 && len(sidecar2) == 1 && len(lines(t, filepath.Join(vol, "app.log"))) == 2,
			fmt.Sprintf("app %v sidecar %v app.log %q", app2, sidecar2, lines(t, filepath.Join(vol, "app.log")))
	})
	t.Logf("offline reboot: app and sidecar running again %v after the agent restarted", time.Since(restartedAt))
	must.NotEq(t, appPIDs, app2, must.Sprint("a new app process: the old one died with the power"))
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", app2[0]))
	must.NoError(t, err)
	must.StrContains(t, exe, first.ID, must.Sprint("the app runs in its own task directory, where the kept artifact is"))
	appLog := lines(t, filepath.Join(vol, "app.log"))
	must.Eq(t, fmt.Sprintf("start %d", appPIDs[0]), appLog[0], must.Sprint("the volume kept the data of before the reboot"))
	must.Eq(t, []string{"prepared"}, lines(t, filepath.Join(vol, "prestart.log")), must.Sprint("the prestart task did not run again"))
	must.Eq(t, int32(1), art.requests.Load())

	heal()
	var final edgeAlloc
	// The servers learn of the offline restart when the client reports it,
	// after the node is ready again.
	wait.Poll(t, 60*time.Second, "node ready and the same allocation running, restarted while disconnected, after the heal", func() (bool, string) {
		list := e.edgeAllocs()
		st := e.nodeStatus()
		if len(list) != 1 {
			return false, fmt.Sprintf("node %s; %+v", st, list)
		}
		final = list[0]
		return st == "ready" && final.ID == first.ID && final.ClientStatus == "running" &&
				final.TaskStates["app"].State == "running" && final.TaskStates["sidecar"].State == "running" &&
				slices.Contains(eventTypes(final, "app"), "Restarted while disconnected"),
			fmt.Sprintf("node %s; %s app %v sidecar %v", st, final.ClientStatus, eventTypes(final, "app"), eventTypes(final, "sidecar"))
	})
	// What happens after the heal must not undo it: nothing restarts,
	// nothing is downloaded.
	harness.Hold(t, 3*time.Second, "the rebooted tasks run on after the heal", func() error {
		if a, s := harness.TaskPIDs(first.ID, "app"), harness.TaskPIDs(first.ID, "sidecar"); !slices.Equal(a, app2) || !slices.Equal(s, sidecar2) {
			return fmt.Errorf("app %v (was %v), sidecar %v (was %v)", a, app2, s, sidecar2)
		}
		if n := art.requests.Load(); n != 1 {
			return fmt.Errorf("%d requests to the artifact server", n)
		}
		return nil
	})
	must.Eq(t, []string{"prepared"}, lines(t, filepath.Join(vol, "prestart.log")))
	must.SliceNotContains(t, eventTypes(final, "app"), "Failed Artifact Download")
	must.Eq(t, uint64(0), final.TaskStates["sidecar"].Restarts+final.TaskStates["app"].Restarts-2, must.Sprint("app and sidecar restarted once each, by the reboot"))
	status, code = e.server.Nomad("alloc", "status", first.ID)
	must.Eq(t, 0, code, must.Sprint(status))
	t.Logf("nomad alloc status %s after the offline reboot and the heal:\n%s", first.ID, status)
}
