package devagent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// serverClientConfig is an agent that keeps its state (a server and a
// client, not -dev), so that it can be killed and started again.
func serverClientConfig(p harness.Ports) string {
	return fmt.Sprintf(`ports {
  http = %d
  rpc = %d
  serf = %d
}
data_dir  = "@DATA_DIR@"
bind_addr = "127.0.0.1"
server {
  enabled          = true
  bootstrap_expect = 1
}
client {
  enabled = true
}
`, p.HTTP, p.RPC, p.Serf)
}

type allocDetail struct {
	ClientStatus string
	TaskStates   map[string]struct {
		State  string
		Events []struct{ Type, DisplayMessage string }
	}
}

// A `driver = "exec"` job runs isolated (its own PID namespace, as nobody),
// its task survives `kill -9` of the agent and is re-attached by the next
// agent with the same pid, and a task over its memory limit is reported in
// its events as OOM killed.
func TestAgent_ExecDriver(t *testing.T) {
	harness.NeedExecDriver(t)
	agents := harness.NewAgents(t)
	dir := agents.Dir
	p := harness.Ports{HTTP: harness.FreePort(t), RPC: harness.FreePort(t), Serf: harness.FreePort(t)}
	a := agents.Add(harness.AgentConfig{Name: "agent", Ports: p, Config: serverClientConfig(p)})
	a.Start()
	waitNodeReady(t, a)

	job := filepath.Join(dir, "exec.nomad.hcl")
	must.NoError(t, os.WriteFile(job, []byte(`job "isolated" {
  group "g" {
    task "sleeper" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      resources {
        memory = 32
      }
    }
  }
}
`), 0o644))
	out, code := a.Nomad("job", "run", job)
	must.Eq(t, 0, code, must.Sprint(out))
	var allocs []allocStub
	wait.Poll(t, 15*time.Second, "exec allocation running", func() (bool, string) {
		if err := a.GetJSON("/v1/job/isolated/allocations", &allocs); err != nil {
			return false, err.Error()
		}
		return len(allocs) == 1 && allocs[0].ClientStatus == "running", fmt.Sprintf("%+v", allocs)
	})
	agents.KillAtEnd(harness.AllocMark(allocs[0].ID))
	pids := harness.AllocPIDs(allocs[0].ID)
	must.Len(t, 1, pids, must.Sprint("the sleep task is one real process"))
	pid := pids[0]
	taskNS, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	must.NoError(t, err)
	ourNS, err := os.Readlink("/proc/self/ns/pid")
	must.NoError(t, err)
	must.NotEq(t, ourNS, taskNS, must.Sprint("the task has its own PID namespace"))
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must.NoError(t, err)
	must.StrContains(t, string(status), "\nUid:\t65534\t", must.Sprint("the task runs as nobody"))

	// The agent dies without a chance to clean up; its task runs on.
	a.Kill9()
	must.NoError(t, syscall.Kill(pid, 0), must.Sprint("the task outlived its agent"))

	a.Start()
	waitNodeReady(t, a)
	wait.Poll(t, 15*time.Second, "the allocation running again after the agent's restart", func() (bool, string) {
		var d allocDetail
		if err := a.GetJSON("/v1/allocation/"+allocs[0].ID, &d); err != nil {
			return false, err.Error()
		}
		return d.ClientStatus == "running" && len(d.TaskStates["sleeper"].Events) > 0, fmt.Sprintf("%+v", d)
	})
	must.Eq(t, []int{pid}, harness.AllocPIDs(allocs[0].ID), must.Sprint("re-attached to the same process, not restarted"))

	hog := filepath.Join(dir, "hog.nomad.hcl")
	must.NoError(t, os.WriteFile(hog, []byte(`job "hog" {
  type = "batch"
  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "hog" {
      driver = "exec"
      config {
        command = "/usr/bin/tail"
        args    = ["/dev/zero"]
      }
      resources {
        memory = 16
      }
    }
  }
}
`), 0o644))
	out, code = a.Nomad("job", "run", "-detach", hog)
	must.Eq(t, 0, code, must.Sprint(out))
	var hogID string
	wait.Poll(t, 20*time.Second, "the memory hog OOM killed", func() (bool, string) {
		var hogs []allocStub
		if err := a.GetJSON("/v1/job/hog/allocations", &hogs); err != nil || len(hogs) == 0 {
			return false, fmt.Sprint(err)
		}
		if hogID != hogs[0].ID {
			hogID = hogs[0].ID
			agents.KillAtEnd(harness.AllocMark(hogID))
		}
		var d allocDetail
		if err := a.GetJSON("/v1/allocation/"+hogs[0].ID, &d); err != nil {
			return false, err.Error()
		}
		for _, e := range d.TaskStates["hog"].Events {
			if e.Type == "Terminated" && strings.Contains(e.DisplayMessage, "OOM Killed") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", d)
	})

	out, code = a.Nomad("job", "stop", "isolated")
	must.Eq(t, 0, code, must.Sprint(out))
	wait.Poll(t, 20*time.Second, "the exec task gone after job stop", func() (bool, string) {
		return syscall.Kill(pid, 0) != nil, "still running"
	})
}
