package command

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// preemptJob writes a one-task mock job of the type, priority and cpu.
func preemptJob(t *testing.T, id, typ string, priority int, cpu int64) string {
	t.Helper()
	src := fmt.Sprintf(`job %q {
  type     = %q
  priority = %d
  group "g" {
    task "t" {
      driver = "mock_driver"
      config {
        run_for = "1h"
      }
      resources {
        cpu    = %d
        memory = 32
      }
    }
  }
}
`, id, typ, priority, cpu)
	path := filepath.Join(t.TempDir(), id+".nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

// `job plan` of a system job that fits only by evicting a lower-priority
// allocation lists that allocation under Preemptions, in upstream's
// layout (observed on 1.6.5: after the dry run, the full allocation ID,
// job and group), since system jobs preempt by default.
func TestJobPlan_ListsPreemptions(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := apiClient(t, a)
	nodes, _, err := c.Nodes().List(nil)
	must.NoError(t, err)
	node, _, err := c.Nodes().Info(nodes[0].ID, nil)
	must.NoError(t, err)
	capacity := node.NodeResources.Cpu.CpuShares
	if node.ReservedResources != nil {
		capacity -= int64(node.ReservedResources.Cpu.CpuShares)
	}

	code, _, errOut := run(t, a, jobRun, "-detach", preemptJob(t, "low", "service", 20, capacity-200))
	must.Eq(t, 0, code, must.Sprint(errOut))
	low := waitRunning(t, a, "low", 1)

	path := preemptJob(t, "hi", "system", 90, 500)
	code, out, errOut := run(t, a, jobPlan, path)
	must.Eq(t, planChanges, code, must.Sprintf("stdout:\n%s\nstderr:\n%s", out, errOut))
	must.StrContains(t, out, "Scheduler dry-run:\n- All tasks successfully allocated.\n")
	must.StrContains(t, out, "\nPreemptions:\n\nAlloc ID")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^`+low[0].ID+` +low +g$`), out)
	must.StrContains(t, out, "g\nJob Modify Index: 0\n")
}
