package allocrunner

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/checks"
	"github.com/nomad-edge/nomad/client/clienttest"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/rawexec"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// withCheck gives the allocation's first task a service with check c and
// the group a port "http" on 127.0.0.1:port.
func withCheck(a *structs.Allocation, port int, c *structs.ServiceCheck) {
	tg := a.Job.TaskGroups[0]
	if c.Interval == 0 {
		c.Interval = 5 * time.Second
	}
	if c.Timeout == 0 {
		c.Timeout = time.Second
	}
	if c.OnUpdate == "" {
		c.OnUpdate = structs.OnUpdateRequireHealthy
	}
	tg.Tasks[0].Services = []*structs.Service{{Name: "web", PortLabel: "http", Provider: "nomad", Checks: []*structs.ServiceCheck{c}}}
	a.AllocatedResources.Shared.Ports = structs.AllocatedPorts{{Label: "http", Value: port, HostIP: "127.0.0.1"}}
}

// freePort returns a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func onlyCheck(t *testing.T, ar *AllocRunner) checks.Result {
	t.Helper()
	res := ar.CheckResults()
	must.MapLen(t, 1, res)
	for _, r := range res {
		return r
	}
	return checks.Result{}
}

// TestChecksHook_CheckRestartThroughRestartPolicy checks that check_restart
// restarts a task whose tcp check keeps failing, with upstream's Restart
// Signaled event, and that those restarts count against the restart
// policy: past its attempts the task fails, as upstream's.
func TestChecksHook_CheckRestartThroughRestartPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "1h"})
		withCheck(a, freePort(t), &structs.ServiceCheck{
			Name: "alive", Type: "tcp",
			CheckRestart: &structs.CheckRestart{Limit: 2, Grace: 5 * time.Second},
		})
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()

		task := a.Job.TaskGroups[0].Tasks[0].Name
		got := h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool { return a.TaskStates[task].Restarts >= 1 })
		var signaled *structs.TaskEvent
		for _, e := range got.TaskStates[task].Events {
			if e.Type == structs.TaskRestartSignal {
				signaled = e
			}
		}
		must.NotNil(t, signaled)
		must.EqOp(t, `healthcheck: check "alive" unhealthy`, signaled.RestartReason)
		must.SliceContains(t, eventTypesOf(got.TaskStates[task]), structs.TaskRestarting)

		// Attempts 2 in the mock's policy: the third unhealthy streak fails it.
		got = h.rec.waitStatus(t, a.ID, structs.AllocClientStatusFailed)
		st := got.TaskStates[task]
		must.True(t, st.Failed)
		must.EqOp(t, uint64(2), st.Restarts)
		must.SliceContains(t, eventTypesOf(st), structs.TaskNotRestarting)
		must.MapEmpty(t, ar.CheckResults()) // stopped with the allocation
	})
}

// TestChecksHook_DeploymentWaitsForChecks checks "checks" deployment
// health: a running task with a failing check is not healthy, and once
// the check passes the allocation is healthy min_healthy_time later, not
// before.
func TestChecksHook_DeploymentWaitsForChecks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := clienttest.MockAlloc("node-1", map[string]any{"run_for": "1h"})
		port := freePort(t)
		withCheck(a, port, &structs.ServiceCheck{Name: "alive", Type: "tcp"})
		a.DeploymentID = "d1"
		a.Job.TaskGroups[0].Update = &structs.UpdateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckChecks,
			MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute}
		ar := h.runner(t, a)
		go ar.Run()
		defer ar.Destroy()

		h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning)
		time.Sleep(time.Minute)
		synctest.Wait()
		must.EqOp(t, checks.ResultFailure, onlyCheck(t, ar).Status)
		must.Nil(t, h.rec.waitStatus(t, a.ID, structs.AllocClientStatusRunning).DeploymentStatus)

		listenAt := time.Now()
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		must.NoError(t, err)
		defer l.Close()
		got := h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool { return a.DeploymentStatus.HasHealth() })
		must.True(t, *got.DeploymentStatus.Healthy)
		// The check passes at its next run (within an interval), and
		// min_healthy_time counts from there.
		healthyAfter := got.DeploymentStatus.Timestamp.Sub(listenAt)
		must.Between(t, 10*time.Second, healthyAfter, 15*time.Second)
	})
}

// TestChecksHook_RealTaskHTTPAndScript checks the checks against a real
// raw_exec task, python3's http.server on the allocation's port: the http
// check passes while the file it asks for exists and fails once it is
// gone, and a script check runs in the task's directory through its
// driver as alloc exec does (exit 0 passing, 1 warning).
func TestChecksHook_RealTaskHTTPAndScript(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	d, err := rawexec.New(drivers.Options{Config: map[string]any{"enabled": true}})
	must.NoError(t, err)
	h := newHarness(t)
	h.drivers[rawexec.Name] = d
	port := freePort(t)
	a := clienttest.MockAlloc("node-1", nil)
	task := a.Job.TaskGroups[0].Tasks[0]
	task.Driver = rawexec.Name
	task.Config = map[string]any{"command": "python3", "args": []any{"-m", "http.server", strconv.Itoa(port), "--bind", "127.0.0.1", "--directory", "${NOMAD_TASK_DIR}"}}
	withCheck(a, port, &structs.ServiceCheck{Name: "web-ok", Type: "http", Path: "/ok.txt", Interval: time.Second})
	task.Services[0].Checks = append(task.Services[0].Checks, &structs.ServiceCheck{
		Name: "file", Type: "script", Command: "/bin/sh", Args: []string{"-c", "test -f local/ok.txt"},
		Interval: time.Second, Timeout: 5 * time.Second, OnUpdate: structs.OnUpdateRequireHealthy,
	})
	ar := h.runner(t, a)
	go ar.Run()
	defer ar.Destroy()

	ok := filepath.Join(ar.Dir().TaskDir(task.Name).LocalDir, "ok.txt")
	got := h.rec.waitFor(t, a.ID, func(a *structs.Allocation) bool { return a.ClientStatus != structs.AllocClientStatusPending })
	must.EqOp(t, structs.AllocClientStatusRunning, got.ClientStatus, must.Sprint(clienttest.DescribeAlloc(got)))
	must.NoError(t, os.WriteFile(ok, []byte("fine"), 0o644))
	byName := func() map[string]checks.Result {
		out := map[string]checks.Result{}
		for _, r := range ar.CheckResults() {
			out[r.Check] = r
		}
		return out
	}
	wait.Poll(t, 20*time.Second, "both checks passing", func() (bool, string) {
		r := byName()
		return r["web-ok"].Status == checks.ResultSuccess && r["file"].Status == checks.ResultSuccess, fmt.Sprintf("%+v", r)
	})
	must.EqOp(t, "fine", byName()["web-ok"].Output)
	must.EqOp(t, task.Name, byName()["web-ok"].Task)
	must.EqOp(t, a.Name, byName()["web-ok"].Group)

	must.NoError(t, os.Remove(ok))
	// test(1) exits 1, which a script check reads as a warning.
	wait.Poll(t, 20*time.Second, "http failing, script warning", func() (bool, string) {
		r := byName()
		return r["web-ok"].Status == checks.ResultFailure && r["file"].Status == checks.ResultWarning, fmt.Sprintf("%+v", r)
	})
	must.EqOp(t, 404, byName()["web-ok"].StatusCode)
}
