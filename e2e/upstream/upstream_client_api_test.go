package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// signalJob is sleepJob's task that also says "got-usr1" on each SIGUSR1:
// the shell waits on one sleep (a wait a trapped signal interrupts), so
// the task is always the same two processes.
func signalJob(id string) *nomadapi.Job {
	job := sleepJob(id)
	job.TaskGroups[0].Tasks[0].SetConfig("args", []string{"-c",
		"echo started; trap 'echo got-usr1' USR1; /bin/sleep 3600 & while true; do wait $!; done"})
	return job
}

// send makes a request of our server's HTTP API with a JSON body and
// returns the status and body of the answer.
func send(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	must.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestUpstreamClientLifecycleThroughOurServers checks that, for an
// allocation on an upstream 1.6.5 client, everything an operator does
// through the servers' HTTP API and CLI is answered by that client over
// the connection it opened to our server: logs, fs ls/stat/cat/readat,
// alloc stats, `nomad alloc exec` (output and exit code), signal (the
// task sees it) and restart (a new process, one restart counted, the same
// allocation), and node stats; and that a route it does not serve is
// refused by name. An operator upgrading in place keeps these tools for
// the clients not yet replaced (operations/upgrading.md).
func TestUpstreamClientLifecycleThroughOurServers(t *testing.T) {
	c := startUpstreamCluster(t)
	_, _, err := c.server.API().Jobs().Register(signalJob("life"), nil)
	must.NoError(t, err)
	alloc := c.waitAlloc("life", "running")
	pids := taskPIDs(t, alloc.ID, 2)
	base := c.server.HTTPAddr() + "/v1/client/"

	wait.Poll(t, 20*time.Second, "the task's stdout through our server", func() (bool, string) {
		body, code := httpGet(t, base+"fs/logs/"+alloc.ID+"?task=sleep&type=stdout&plain=true")
		return code == http.StatusOK && body == "started\n", fmt.Sprintf("%d %q", code, body)
	})
	var info struct {
		Name string
		Size int64
	}
	must.NoError(t, c.server.GetJSON("/v1/client/fs/stat/"+alloc.ID+"?path=alloc/logs/sleep.stdout.0", &info))
	must.Eq(t, "sleep.stdout.0", info.Name)
	body, code := httpGet(t, base+"fs/readat/"+alloc.ID+"?path=alloc/logs/sleep.stdout.0&offset=1&limit=4")
	must.Eq(t, http.StatusOK, code, must.Sprintf("body %q", body))
	must.Eq(t, "tart", body)

	// Allocation and node stats, in upstream's JSON, which is ours.
	var stats struct {
		ResourceUsage struct{ MemoryStats struct{ RSS uint64 } }
		Tasks         map[string]struct{ Pids map[string]any }
	}
	must.NoError(t, c.server.GetJSON("/v1/client/allocation/"+alloc.ID+"/stats", &stats))
	must.MapContainsKey(t, stats.Tasks, "sleep")
	var host struct {
		CPU    []struct{ CPU string }
		Memory struct{ Total uint64 }
	}
	must.NoError(t, c.server.GetJSON("/v1/client/stats?node_id="+alloc.NodeID, &host))
	must.SliceNotEmpty(t, host.CPU)
	must.Positive(t, host.Memory.Total)

	// Our CLI's exec, through our server, runs beside the task on the
	// upstream client and brings back its output and exit code.
	out, exit := c.server.Nomad("alloc", "exec", "-task", "sleep", alloc.ID, "/bin/sh", "-c", "echo exec-out; echo exec-err >&2; exit 3")
	must.Eq(t, 3, exit, must.Sprintf("output %q", out))
	must.StrContains(t, out, "exec-out\n")
	must.StrContains(t, out, "exec-err\n")
	out, exit = c.server.Nomad("alloc", "exec", "-task", "sleep", alloc.ID, "/no/such/command")
	must.NotEq(t, 0, exit)
	must.StrContains(t, out, "no such file or directory")

	// Signal: the task's trap says so in its log.
	code, body = send(t, http.MethodPost, base+"allocation/"+alloc.ID+"/signal", `{"Signal":"SIGUSR1","Task":"sleep"}`)
	must.Eq(t, http.StatusOK, code, must.Sprintf("body %q", body))
	wait.Poll(t, 20*time.Second, "the task saw SIGUSR1", func() (bool, string) {
		body, code := httpGet(t, base+"fs/logs/"+alloc.ID+"?task=sleep&type=stdout&plain=true")
		return code == http.StatusOK && strings.Contains(body, "got-usr1"), fmt.Sprintf("%d %q", code, body)
	})

	// Restart: a new process in the same allocation, counted once.
	code, body = send(t, http.MethodPut, base+"allocation/"+alloc.ID+"/restart", `{"TaskName":"sleep"}`)
	must.Eq(t, http.StatusOK, code, must.Sprintf("body %q", body))
	wait.Poll(t, 30*time.Second, "the task restarted once in the same allocation", func() (bool, string) {
		a, _, err := c.server.API().Allocations().Info(alloc.ID, nil)
		if err != nil {
			return false, err.Error()
		}
		ts := a.TaskStates["sleep"]
		now := harness.AllocPIDs(alloc.ID)
		fresh := len(now) == 2 && !slices.ContainsFunc(now, func(p int) bool { return slices.Contains(pids, p) })
		return ts.Restarts == 1 && ts.State == "running" && fresh,
			fmt.Sprintf("restarts %d state %s pids %v (were %v)", ts.Restarts, ts.State, now, pids)
	})

	// Unknown allocations and unserved routes say so.
	body, code = httpGet(t, base+"allocation/"+alloc.ID+"/checks")
	must.Eq(t, http.StatusNotImplemented, code, must.Sprintf("body %q", body))
	var stubs []json.RawMessage
	must.NoError(t, c.server.GetJSON("/v1/job/life/allocations", &stubs))
	must.Len(t, 1, stubs, must.Sprint("no replacement was placed"))
}
