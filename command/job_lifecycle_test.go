package command

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func jobPlan(m Meta) cli.Command    { return &JobPlanCommand{Meta: m} }
func jobHistory(m Meta) cli.Command { return &JobHistoryCommand{Meta: m} }
func jobRevert(m Meta) cli.Command  { return &JobRevertCommand{Meta: m} }
func jobScale(m Meta) cli.Command   { return &JobScaleCommand{Meta: m} }
func jobInspect(m Meta) cli.Command { return &JobInspectCommand{Meta: m} }

// `job plan` shows the diff, the dry run and the check-index hint, and its
// exit code says whether allocations would change, as scripts expect; a
// `job run -check-index` with a stale index is refused.
func TestJobPlan_DiffDryRunAndCheckIndex(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := writeJob(t, "web", "mock_driver", `run_for = "5m"`)

	code, out, errOut := run(t, a, jobPlan, path)
	must.Eq(t, planChanges, code, must.Sprintf("stdout:\n%s\nstderr:\n%s", out, errOut))
	must.StrContains(t, out, `+ Job: "web"`)
	must.StrContains(t, out, `+ Task Group: "web" (1 create)`)
	must.StrContains(t, out, "Scheduler dry-run:\n- All tasks successfully allocated.")
	must.StrContains(t, out, "Job Modify Index: 0\n")
	must.StrContains(t, out, "nomad job run -check-index 0 "+path)

	code, _, _ = run(t, a, jobRun, "-detach", "-check-index", "0", path)
	must.Eq(t, 0, code)
	waitRunning(t, a, "web", 1)

	code, out, _ = run(t, a, jobPlan, path)
	must.Eq(t, planNoChanges, code, must.Sprint(out))
	must.StrContains(t, out, `Job: "web"`)
	must.StrContains(t, out, `Task Group: "web" (1 ignore)`)

	src, err := os.ReadFile(path)
	must.NoError(t, err)
	must.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(src), "count = 1", "count = 2", 1)), 0o600))
	code, out, _ = run(t, a, jobPlan, "-verbose", path)
	must.Eq(t, planChanges, code)
	must.StrContains(t, out, `+/- Task Group: "web" (1 create, 1 in-place update)`)
	must.StrContains(t, out, `  +/- Count: "1" => "2"`)
	must.StrContains(t, out, `      Driver: "mock_driver"`, must.Sprint("-verbose shows unchanged fields"))

	code, _, errOut = run(t, a, jobRun, "-detach", "-check-index", "0", path)
	must.Eq(t, exitError, code)
	must.StrContains(t, errOut, "Enforcing job modify index 0: job exists with conflicting job modify index")

	code, _, errOut = run(t, a, jobPlan, "/no/such/file.hcl")
	must.Eq(t, planError, code)
	must.StrContains(t, errOut, "Error")
}

// history lists every version with its diff, scale makes a version,
// revert brings an old spec back, and inspect prints {"Job": ...}.
func TestJobHistoryScaleRevertInspect(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := writeJob(t, "web", "mock_driver", `run_for = "5m"`)
	// No deployment (max_parallel = 0): during one, a scale is refused, as
	// upstream's is.
	src, err := os.ReadFile(path)
	must.NoError(t, err)
	must.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(src), `  group "web" {`, "  update {\n    max_parallel = 0\n  }\n  group \"web\" {", 1)), 0o600))
	code, _, _ := run(t, a, jobRun, "-detach", path)
	must.Eq(t, 0, code)

	code, out, errOut := run(t, a, jobScale, "-detach", "web", "3")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Job scale successful")
	code, _, errOut = run(t, a, jobScale, "-detach", "web", "nope", "3")
	must.Eq(t, exitError, code)
	must.StrContains(t, errOut, `task group "nope" specified for scaling does not exist`)

	code, out, _ = run(t, a, jobHistory, "-p", "web")
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Version     = 1\nStable      = false\n")
	must.StrContains(t, out, "Version     = 0\n")
	must.StrContains(t, out, `+/- Count: "1" => "3"`)

	code, out, _ = run(t, a, jobHistory, "-json", "web")
	must.Eq(t, 0, code)
	var list []struct{ Version uint64 }
	must.NoError(t, json.Unmarshal([]byte(out), &list))
	must.Eq(t, []struct{ Version uint64 }{{1}, {0}}, list)

	code, out, _ = run(t, a, jobHistory, "-version", "0", "web")
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Version     = 0")
	must.StrNotContains(t, out, "Version     = 1")

	code, _, errOut = run(t, a, jobRevert, "-detach", "web", "0")
	must.Eq(t, 0, code, must.Sprint(errOut))
	code, _, errOut = run(t, a, jobRevert, "-detach", "web", "2")
	must.Eq(t, exitError, code)
	must.StrContains(t, errOut, "can't revert to current version")

	code, out, _ = run(t, a, jobInspect, "web")
	must.Eq(t, 0, code)
	var doc struct {
		Job struct {
			ID         string
			Version    uint64
			TaskGroups []struct{ Count int }
		}
	}
	must.NoError(t, json.Unmarshal([]byte(out), &doc))
	must.Eq(t, "web", doc.Job.ID)
	must.Eq(t, 2, doc.Job.Version)
	must.Eq(t, 1, doc.Job.TaskGroups[0].Count, must.Sprint("the revert brought count 1 back"))

	code, out, _ = run(t, a, jobInspect, "-version", "1", "web")
	must.Eq(t, 0, code)
	must.NoError(t, json.Unmarshal([]byte(out), &doc))
	must.Eq(t, 3, doc.Job.TaskGroups[0].Count)
}
