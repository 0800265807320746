package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// testTimeout bounds every wait; hitting it means a lost exit.
const testTimeout = 60 * time.Second

func newTestDriver(t *testing.T) *Driver {
	t.Helper()
	needPodman(t)
	d, err := New(drivers.Options{Config: map[string]any{
		"endpoint": podman.endpoint,
		// The test image is shared by every test and cannot be pulled
		// again: keep it.
		"gc": []map[string]any{{"image": false}},
	}})
	must.NoError(t, err)
	t.Cleanup(func() {
		for _, id := range d.tasks.IDs() {
			_ = d.DestroyTask(id, true)
		}
	})
	return d
}

var taskSeq atomic.Int64

// newTaskConfig lays out an allocation dir the way the client does.
func newTaskConfig(t testing.TB, config map[string]any) *drivers.TaskConfig {
	t.Helper()
	dir := t.TempDir()
	n := taskSeq.Add(1)
	alloc := fmt.Sprintf("%08d-aaaa-bbbb-cccc-%012d", os.Getpid()%1e8, n)
	shared := filepath.Join(dir, "alloc")
	task := filepath.Join(dir, "web")
	for _, p := range []string{filepath.Join(shared, "logs"), filepath.Join(task, "local"), filepath.Join(task, "secrets")} {
		must.NoError(t, os.MkdirAll(p, 0o755))
	}
	if config["image"] == nil {
		config["image"] = testImage
	}
	return &drivers.TaskConfig{
		ID: alloc + "/web", Name: "web", AllocID: alloc, JobName: "example", TaskGroupName: "g",
		Env:        map[string]string{"NOMAD_ALLOC_ID": alloc, "NOMAD_TASK_NAME": "web", "GREETING": "hello"},
		Config:     config,
		TaskDir:    task,
		LocalDir:   filepath.Join(task, "local"),
		SecretsDir: filepath.Join(task, "secrets"),
		AllocDir:   shared,
		StdoutPath: filepath.Join(shared, "logs", "web.stdout.0"),
		StderrPath: filepath.Join(shared, "logs", "web.stderr.0"),
		Resources:  drivers.Resources{CPUShares: 100, MemoryMB: 64},
	}
}

func sh(script string) map[string]any {
	return map[string]any{"command": "/bin/sh", "args": []any{"-c", script}}
}

func waitExit(t *testing.T, d *Driver, id string) *drivers.ExitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ch, err := d.WaitTask(ctx, id)
	must.NoError(t, err)
	res, ok := <-ch
	must.True(t, ok, must.Sprint("task did not exit within the test timeout"))
	return res
}

// TestDriver_RunsContainerWithLogs checks that a container runs the task's
// command with its environment and mounts, and that its stdout and stderr
// land in the allocation's log files, where `alloc logs` reads them.
func TestDriver_RunsContainerWithLogs(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, sh(`echo "$GREETING from $NOMAD_TASK_NAME"; echo oops >&2; echo shared > /alloc/out; ls /local /secrets >/dev/null`))
	_, err := d.StartTask(cfg)
	must.NoError(t, err)

	res := waitExit(t, d, cfg.ID)
	must.True(t, res.Successful(), must.Sprintf("result: %s", res))
	readFileUntil(t, cfg.StdoutPath, "hello from web\n")
	readFileUntil(t, cfg.StderrPath, "oops\n")
	b, err := os.ReadFile(filepath.Join(cfg.AllocDir, "out"))
	must.NoError(t, err)
	must.Eq(t, "shared\n", string(b))
}

// TestDriver_Ulimit checks that a task's `ulimit` block reaches the
// container: its shell sees the soft and hard limits asked for (upstream's
// jobs set it; on some hosts Podman needs both nofile and nproc).
func TestDriver_Ulimit(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, sh(`echo "nofile $(ulimit -Sn) $(ulimit -Hn) nproc $(ulimit -Su)"`))
	cfg.Config["ulimit"] = []any{map[string]any{"nofile": "512:1000", "nproc": "300"}}
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	res := waitExit(t, d, cfg.ID)
	must.True(t, res.Successful(), must.Sprintf("result: %s", res))
	readFileUntil(t, cfg.StdoutPath, "nofile 512 1000 nproc 300\n")
}

// TestDriver_RecoverAfterAgentKill checks that a container outlives a
// SIGKILLed agent and that a new driver re-attaches to the same container
// from the persisted handle, keeps its logs flowing and can stop and remove
// it: the disconnect feature relies on tasks surviving agent restarts.
func TestDriver_RecoverAfterAgentKill(t *testing.T) {
	needPodman(t)
	cfg := newTaskConfig(t, sh(`i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done`))
	handle := drivertest.StartInCrashedAgent(t, cfg, testEndpointEnv+"="+podman.endpoint)
	// Nobody follows the logs while the agent is down: the container's
	// output waits in the engine.

	var st taskState
	must.NoError(t, handle.GetDriverState(&st))
	d := newTestDriver(t)
	must.NoError(t, d.RecoverTask(handle))
	status, err := d.InspectTask(cfg.ID)
	must.NoError(t, err)
	must.Eq(t, drivers.TaskStateRunning, status.State)
	must.Eq(t, st.ContainerID, status.DriverAttributes["container_id"])
	must.Eq(t, "true", status.DriverAttributes["recovered"])

	// What the container wrote while no agent ran arrives first, then
	// new lines through the new driver's log stream.
	readFileUntil(t, cfg.StdoutPath, "tick 3\n")
	b, _ := os.ReadFile(cfg.StdoutPath)
	n := strings.Count(string(b), "tick")
	readFileUntil(t, cfg.StdoutPath, fmt.Sprintf("tick %d\n", n+3))

	must.NoError(t, d.StopTask(cfg.ID, time.Second, "SIGKILL"))
	res := waitExit(t, d, cfg.ID)
	must.Eq(t, 137, res.ExitCode)
	must.NoError(t, d.DestroyTask(cfg.ID, false))

	_, err = d.api.inspectContainer(context.Background(), st.ContainerID)
	must.ErrorIs(t, err, ErrNoSuchContainer)
	b, _ = os.ReadFile(cfg.StdoutPath)
	for i := range n + 3 {
		must.StrContains(t, string(b), fmt.Sprintf("tick %d\n", i))
	}
}

// TestDriver_FindTaskUpstreamContainer checks that a container upstream
// Nomad started (labelled with the allocation only, named
// "<task>-<alloc ID>", as upstream 1.6.5's docker driver does: see
// e2e/upstream TestOurClientAdoptsAnUpstreamDockerContainer) is found for
// its task, and never for another task of the same allocation: a client
// taking over an upstream node adopts it instead of starting a second one.
func TestDriver_FindTaskUpstreamContainer(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, sh("sleep 60"))
	id, err := podman.service.RunDetached(cfg.Name+"-"+cfg.AllocID, map[string]string{labelAllocID: cfg.AllocID}, "sleep 60")
	must.NoError(t, err)
	other := *cfg
	other.Name, other.ID = "sidecar", cfg.AllocID+"/sidecar"
	_, err = d.FindTask(&other)
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)

	h, err := d.FindTask(cfg)
	must.NoError(t, err)
	var st taskState
	must.NoError(t, h.GetDriverState(&st))
	must.Eq(t, id, st.ContainerID)
	must.NoError(t, d.StopTask(cfg.ID, time.Second, "SIGKILL"))
	waitExit(t, d, cfg.ID)
	must.NoError(t, d.DestroyTask(cfg.ID, false))
}

// TestDriver_RecoverGone checks that a handle whose container was removed
// is reported as not found, so the task runner marks the task lost instead
// of retrying forever.
func TestDriver_RecoverGone(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, sh("exit 0"))
	h := &drivers.TaskHandle{Version: HandleVersion, Config: cfg, State: drivers.TaskStateRunning}
	must.NoError(t, h.SetDriverState(taskState{ContainerID: "0123456789abcdef"}))
	must.ErrorIs(t, d.RecoverTask(h), drivers.ErrTaskNotFound)
}

// TestDriver_PortMapping checks that a port of the group network named in
// `ports` is published on the host and reaches the container's `to` port.
func TestDriver_PortMapping(t *testing.T) {
	d := newTestDriver(t)
	hostPort := freePort(t)
	c := sh(`echo ok > /local/index.html; exec httpd -f -p 8080 -h /local`)
	c["ports"] = []any{"http"}
	cfg := newTaskConfig(t, c)
	cfg.Ports = []drivers.Port{{Label: "http", Value: hostPort, To: 8080}}
	_, err := d.StartTask(cfg)
	must.NoError(t, err)

	url := fmt.Sprintf("http://127.0.0.1:%d/index.html", hostPort)
	wait.Poll(t, testTimeout, fmt.Sprintf("port %d to answer", hostPort), func() (bool, string) {
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error()
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		must.Eq(t, "ok\n", string(body))
		return true, ""
	})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestDriver_PullEmitsEvent checks that a missing image is pulled with a
// "Downloading image" event on the task, and that a failed pull is a
// recoverable error (the registry may be back on the next attempt).
func TestDriver_PullEmitsEvent(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, map[string]any{"image": "127.0.0.1:1/nope/missing:1"})
	var mu sync.Mutex
	var events []string
	cfg.Events = func(m string) { mu.Lock(); events = append(events, m); mu.Unlock() }
	_, err := d.StartTask(cfg)
	must.Error(t, err)
	must.True(t, drivers.IsRecoverable(err), must.Sprintf("error: %v", err))
	mu.Lock()
	defer mu.Unlock()
	must.Eq(t, []string{"Downloading image"}, events)
}

// TestDriver_Fingerprint checks that the driver is detected with the
// engine's version where the endpoint answers, and undetected with the
// reason where it does not.
func TestDriver_Fingerprint(t *testing.T) {
	d := newTestDriver(t)
	fp := d.Fingerprint()
	must.True(t, fp.Detected)
	must.True(t, fp.Healthy)
	must.NotEq(t, "", fp.Attributes["driver.docker.version"])
	must.Eq(t, "1", fp.Attributes["driver.docker"])

	off, err := New(drivers.Options{Config: map[string]any{"endpoint": "unix://" + filepath.Join(t.TempDir(), "none.sock")}})
	must.NoError(t, err)
	fp = off.Fingerprint()
	must.False(t, fp.Detected)
	must.StrContains(t, fp.HealthDescription, "failed to connect to docker daemon")
}

// TestDriver_DestroyRemovesContainer checks that destroying an exited task
// removes its container, so a node running for months does not pile up
// dead containers.
func TestDriver_DestroyRemovesContainer(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, sh("exit 0"))
	h, err := d.StartTask(cfg)
	must.NoError(t, err)
	waitExit(t, d, cfg.ID)
	var st taskState
	must.NoError(t, h.GetDriverState(&st))
	must.NoError(t, d.DestroyTask(cfg.ID, false))
	_, err = d.api.inspectContainer(context.Background(), st.ContainerID)
	must.True(t, errors.Is(err, ErrNoSuchContainer), must.Sprintf("inspect after destroy: %v", err))
	_, err = d.InspectTask(cfg.ID)
	must.ErrorIs(t, err, drivers.ErrTaskNotFound)
}

// TestDriver_LoadImage checks that `load` brings the image from an archive
// in the task directory, for nodes that reach no registry.
func TestDriver_LoadImage(t *testing.T) {
	d := newTestDriver(t)
	cfg := newTaskConfig(t, sh("echo loaded"))
	must.NoError(t, podman.service.Save(filepath.Join(cfg.TaskDir, "local", "image.tar")))
	cfg.Config["load"] = "local/image.tar"
	_, err := d.StartTask(cfg)
	must.NoError(t, err)
	must.True(t, waitExit(t, d, cfg.ID).Successful())
	readFileUntil(t, cfg.StdoutPath, "loaded")

	other := newTaskConfig(t, map[string]any{"load": "../../etc/passwd"})
	_, err = d.StartTask(other)
	must.ErrorIs(t, err, drivers.ErrInvalidConfig)
}
