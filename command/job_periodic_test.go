package command

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func jobPeriodicForce(m Meta) cli.Command { return &JobPeriodicForceCommand{Meta: m} }

// writeParentJob writes a batch job file with the given job-level block
// (periodic or parameterized) and task-level extra lines.
func writeParentJob(t *testing.T, id, block, taskExtra string) string {
	t.Helper()
	src := `job "` + id + `" {
  type = "batch"
` + block + `
  group "web" {
    task "web" {
      driver = "mock_driver"
      config {
        run_for = "100ms"
      }
` + taskExtra + `
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`
	path := filepath.Join(t.TempDir(), id+".nomad.hcl")
	must.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	return path
}

// A periodic job runs nothing at registration and says when it will;
// `job periodic force` launches a child, and `job status` of the parent
// shows the next launch, the children counts and the children instead of
// allocations.
func TestJobPeriodicForce_AndStatus(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := writeParentJob(t, "nightly", `  periodic {
    crons     = ["0 3 * * *"]
    time_zone = "Europe/Berlin"
  }`, "")

	code, out, errOut := run(t, a, jobRun, path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Job registration successful")
	must.RegexMatch(t, regexp.MustCompile(`Approximate next launch time: \S+ \(\S+ from now\)`), out)

	code, out, errOut = run(t, a, jobPeriodicForce, "-detach", "nightly")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Force periodic successful\nEvaluation ID: ")

	c := apiClient(t, a)
	var child string
	wait.Poll(t, 30*time.Second, "the forced child to finish", func() (bool, string) {
		jobs, _, err := c.Jobs().List(&api.QueryOptions{Prefix: "nightly/"})
		if err != nil || len(jobs) != 1 {
			return false, describeStubsOf(jobs, err)
		}
		child = jobs[0].ID
		return jobs[0].Status == "dead", describeStubsOf(jobs, err)
	})
	must.StrHasPrefix(t, "nightly/periodic-", child)

	code, out, errOut = run(t, a, jobStatusCmd, "nightly")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Periodic             = true")
	must.StrContains(t, out, "Parameterized        = false")
	must.RegexMatch(t, regexp.MustCompile(`Next Periodic Launch = \S+ \(\S+ from now\)`), out)
	must.StrContains(t, out, "Children Job Summary\nPending  Running  Dead\n0        0        1")
	must.StrContains(t, out, "Previously Launched Jobs\nID")
	must.StrContains(t, out, child)
	must.StrNotContains(t, out, "Allocations")

	_, out, _ = run(t, a, jobStatusCmd)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^nightly\s+batch/periodic\s+50\s+running`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^nightly/periodic-\d+\s+batch\s+50\s+dead`), out)

	code, _, errOut = run(t, a, jobPeriodicForce, "-detach", "nightly/")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "can't force launch non-periodic job")
}

func describeStubsOf(jobs []*api.JobListStub, err error) string {
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, j := range jobs {
		parts = append(parts, j.ID+"="+j.Status)
	}
	return strings.Join(parts, ", ")
}

// `job dispatch` reads the payload from a file or standard input, passes
// -meta, prints the dispatched job's ID, and a refused dispatch names the
// missing key; the parent's status lists what was dispatched.
func TestJobDispatch(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := writeParentJob(t, "ingest", `  parameterized {
    payload       = "required"
    meta_required = ["site"]
  }`, `      dispatch_payload {
        file = "input.txt"
      }`)
	code, _, errOut := run(t, a, jobRun, path)
	must.Eq(t, 0, code, must.Sprint(errOut))

	dispatch := func(stdin string, args ...string) (int, string, string) {
		ui := cli.NewMockUi()
		c := &JobDispatchCommand{Meta: Meta{Ui: ui}, stdin: strings.NewReader(stdin)}
		code := c.Run(append([]string{"-address=" + a.HTTPAddr}, args...))
		return code, ui.OutputWriter.String(), ui.ErrorWriter.String()
	}

	code, _, errOut = dispatch("hello", "-detach", "ingest", "-")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Dispatch did not provide required meta keys: site")

	code, _, errOut = dispatch("", "-meta", "site", "ingest")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Error parsing meta "site": must be of the form <key>=<value>`)

	code, out, errOut := dispatch("hello", "-detach", "-meta", "site=berlin", "ingest", "-")
	must.Eq(t, 0, code, must.Sprint(errOut))
	m := regexp.MustCompile(`Dispatched Job ID = (ingest/dispatch-\d+-[0-9a-f]{8})\nEvaluation ID     = [0-9a-f]{8}`).FindStringSubmatch(out)
	must.SliceLen(t, 2, m, must.Sprint(out))

	file := filepath.Join(t.TempDir(), "payload")
	must.NoError(t, os.WriteFile(file, []byte("from a file"), 0o600))
	code, _, errOut = dispatch("", "-detach", "-meta", "site=paris", "ingest", file)
	must.Eq(t, 0, code, must.Sprint(errOut))
	got, _, err := apiClient(t, a).Jobs().Info(m[1], nil)
	must.NoError(t, err)
	must.Eq(t, "hello", string(got.Payload))

	code, out, errOut = run(t, a, jobStatusCmd, "ingest")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Parameterized = true")
	must.StrContains(t, out, "Parameterized Job\nPayload           = required\nRequired Metadata = site")
	must.StrContains(t, out, "Parameterized Job Summary\nPending  Running  Dead")
	must.StrContains(t, out, "Dispatched Jobs\nID")
	must.StrContains(t, out, m[1])
}
