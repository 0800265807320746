package command

import (
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func systemGC(m Meta) cli.Command { return &SystemGCCommand{Meta: m} }

// `nomad system gc` removes a stopped job whose allocation has finished and
// prints nothing, as upstream; arguments are refused.
func TestSystemGC(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	code, out, errOut := run(t, a, jobRun, writeJob(t, "web", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	waitRunning(t, a, "web", 1)
	code, out, errOut = run(t, a, jobStop, "web")
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	c := apiClient(t, a)
	wait.Poll(t, 30*time.Second, "the allocation to finish", func() (bool, string) {
		allocs, _, err := c.Jobs().Allocations("web", false, nil)
		if err != nil || len(allocs) != 1 {
			return false, describe(allocs, err)
		}
		return allocs[0].ClientStatus == "complete", describe(allocs, nil)
	})

	code, out, errOut = run(t, a, systemGC)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "", out)
	code, _, errOut = run(t, a, jobStatusCmd, "web")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `No job(s) with prefix or id "web" found`)

	code, _, errOut = run(t, a, systemGC, "extra")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "This command takes no arguments")
}
