package command

import (
	"fmt"
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

// run runs a command against agent a and returns its exit code, standard
// output and standard error.
func run(t *testing.T, a *agenttest.Agent, cmd func(Meta) cli.Command, args ...string) (int, string, string) {
	t.Helper()
	ui := cli.NewMockUi()
	c := cmd(Meta{Ui: ui})
	code := c.Run(append([]string{"-address=" + a.HTTPAddr}, args...))
	return code, ui.OutputWriter.String(), ui.ErrorWriter.String()
}

func jobRun(m Meta) cli.Command       { return &JobRunCommand{Meta: m} }
func jobStatusCmd(m Meta) cli.Command { return &JobStatusCommand{Meta: m} }
func jobStop(m Meta) cli.Command      { return &JobStopCommand{Meta: m} }
func jobValidate(m Meta) cli.Command  { return &JobValidateCommand{Meta: m} }
func allocStatus(m Meta) cli.Command  { return &AllocStatusCommand{Meta: m} }
func nodeStatus(m Meta) cli.Command   { return &NodeStatusCommand{Meta: m} }
func evalStatus(m Meta) cli.Command   { return &EvalStatusCommand{Meta: m} }
func allocStop(m Meta) cli.Command    { return &AllocStopCommand{Meta: m} }

// writeJob writes a job file running driver with config into a temp dir.
func writeJob(t *testing.T, id, driver, config string) string {
	t.Helper()
	src := `job "` + id + `" {
  group "web" {
    count = 1
    task "web" {
      driver = "` + driver + `"
      config {
` + config + `
      }
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

func apiClient(t *testing.T, a *agenttest.Agent) *api.Client {
	t.Helper()
	c, err := api.NewClient(&api.Config{Address: a.HTTPAddr})
	must.NoError(t, err)
	return c
}

// waitRunning waits until the job's allocations are all running and
// returns them.
func waitRunning(t *testing.T, a *agenttest.Agent, jobID string, count int) []*api.AllocationListStub {
	t.Helper()
	c := apiClient(t, a)
	var allocs []*api.AllocationListStub
	wait.Poll(t, 30*time.Second, "the job's allocations to run", func() (bool, string) {
		var err error
		allocs, _, err = c.Jobs().Allocations(jobID, false, nil)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		running := 0
		for _, al := range allocs {
			seen = append(seen, al.ID[:8]+"="+al.ClientStatus)
			if al.ClientStatus == api.AllocClientStatusRunning {
				running++
			}
		}
		return running == count && len(allocs) == count, strings.Join(seen, ", ")
	})
	return allocs
}

var multiSpace = regexp.MustCompile(`\s{2,}`)

// columns splits a table row on its column gaps.
func columns(line string) []string { return multiSpace.Split(strings.TrimSpace(line), -1) }

// `job run` of a mock_driver job follows its evaluation to the end,
// reporting the allocation it created, and exits 0.
func TestJobRun_MonitorsEvaluation(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := writeJob(t, "web", "mock_driver", `run_for = "5m"`)

	code, out, errOut := run(t, a, jobRun, path)
	must.Eq(t, 0, code, must.Sprintf("stdout:\n%s\nstderr:\n%s", out, errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^==> \S+: Monitoring evaluation "[0-9a-f]{8}"$`), out)
	must.StrContains(t, out, `: Evaluation triggered by job "web"`)
	must.RegexMatch(t, regexp.MustCompile(`Allocation "[0-9a-f]{8}" created: node "[0-9a-f]{8}", group "web"`), out)
	must.StrContains(t, out, `: Evaluation status changed: "pending" -> "complete"`)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^==> \S+: Evaluation "[0-9a-f]{8}" finished with status "complete"$`), out)

	// -detach returns at once with the evaluation's ID.
	code, out, _ = run(t, a, jobRun, "-detach", path)
	must.Eq(t, 0, code)
	must.RegexMatch(t, regexp.MustCompile(`Evaluation ID: [0-9a-f-]{36}`), out)
}

// A job no node can run exits 2 and says why, group by group: the
// operator must not have to dig through evaluations to learn it.
func TestJobRun_PlacementFailure(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := writeJob(t, "needs-docker", "docker", `image = "redis"`)

	code, out, errOut := run(t, a, jobRun, path)
	must.Eq(t, 2, code, must.Sprintf("stdout:\n%s\nstderr:\n%s", out, errOut))
	must.StrContains(t, out, `finished with status "complete" but failed to place all allocations:`)
	must.StrContains(t, out, `Task Group "web" (failed to place 1 allocation):`)
	must.StrContains(t, out, `      * Constraint "missing drivers": 1 nodes excluded by filter`)
	must.StrContains(t, out, `waiting for additional capacity to place remainder`)

	// eval status explains the same failure, found by a short prefix.
	evals, _, err := apiClient(t, a).Jobs().Evaluations("needs-docker", nil)
	must.NoError(t, err)
	var failed *api.Evaluation
	for _, e := range evals {
		if len(e.FailedTGAllocs) > 0 {
			failed = e
		}
	}
	must.NotNil(t, failed)
	code, out, errOut = run(t, a, evalStatus, failed.ID[:6])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "ID                 = "+failed.ID[:8])
	must.StrContains(t, out, "Placement Failures = true")
	must.StrContains(t, out, "TriggeredBy        = job-register")
	must.StrContains(t, out, "==> Failed Placements")
	must.StrContains(t, out, `  * Constraint "missing drivers": 1 nodes excluded by filter`)

	// job status shows the outstanding failure too.
	code, out, _ = run(t, a, jobStatusCmd, "needs-docker")
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Placement Failure\nTask Group \"web\" (failed to place 1 allocation):")
}

// job status lists jobs, and for one job shows the header, the summary
// with the Unknown column (allocations on disconnected nodes) and the
// allocations.
func TestJobStatus(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	code, out, errOut := run(t, a, jobRun, writeJob(t, "web", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	allocs := waitRunning(t, a, "web", 1)

	code, out, _ = run(t, a, jobStatusCmd)
	must.Eq(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.Eq(t, []string{"ID", "Type", "Priority", "Status", "Submit Date"}, columns(lines[0]))
	row := columns(lines[1])
	must.Eq(t, []string{"web", "service", "50", "running"}, row[:4])

	code, out, _ = run(t, a, jobStatusCmd, "we")
	must.Eq(t, 0, code)
	for _, kv := range [][2]string{
		{"ID", "web"}, {"Name", "web"}, {"Type", "service"}, {"Priority", "50"}, {"Datacenters", "*"},
		{"Namespace", "default"}, {"Node Pool", "default"}, {"Status", "running"},
		{"Submit Date", time.Now().Format("2006-01-02")}, {"Periodic", "false"}, {"Parameterized", "false"},
	} {
		must.StrContains(t, out, fmt.Sprintf("%-13s = %s", kv[0], kv[1]))
	}
	summary := regexp.MustCompile(`(?m)^Summary\n(.*)\n(.*)$`).FindStringSubmatch(out)
	must.SliceLen(t, 3, summary, must.Sprint(out))
	must.Eq(t, []string{"Task Group", "Queued", "Starting", "Running", "Failed", "Complete", "Lost", "Unknown"}, columns(summary[1]))
	must.Eq(t, []string{"web", "0", "0", "1", "0", "0", "0", "0"}, columns(summary[2]))
	table := regexp.MustCompile(`(?m)^Allocations\n(.*)\n(.*)$`).FindStringSubmatch(out)
	must.SliceLen(t, 3, table, must.Sprint(out))
	must.Eq(t, []string{"ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Created", "Modified"}, columns(table[1]))
	row = columns(table[2])
	must.Eq(t, allocs[0].ID[:8], row[0])
	must.Eq(t, []string{"web", "0", "run", "running"}, row[2:6])
	must.StrHasSuffix(t, " ago", row[6])

	code, out, _ = run(t, a, jobStatusCmd, "-short", "web")
	must.Eq(t, 0, code)
	must.StrNotContains(t, out, "Summary")

	code, _, errOut = run(t, a, jobStatusCmd, "nope")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `No job(s) with prefix or id "nope" found`)
}

// alloc status resolves a short prefix and shows the allocation, its
// tasks and events; -verbose adds the recorded placement scores.
func TestAllocStatus_ByPrefix(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	code, out, errOut := run(t, a, jobRun, writeJob(t, "web", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	alloc := waitRunning(t, a, "web", 1)[0]

	code, out, errOut = run(t, a, allocStatus, alloc.ID[:5])
	must.Eq(t, 0, code, must.Sprint(errOut))
	for _, want := range []string{
		"ID                  = " + alloc.ID[:8],
		"Eval ID             = " + alloc.EvalID[:8],
		"Name                = web.web[0]",
		"Node ID             = " + alloc.NodeID[:8],
		"Job ID              = web",
		"Job Version         = 0",
		"Client Status       = running",
		"Desired Status      = run",
		"Desired Description = <none>",
		`Task "web" is "running"`,
		"Task Resources:",
		"100 MHz  64 MiB",
		"Recent Events:",
		"Started",
	} {
		must.StrContains(t, out, want)
	}
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Created\s+= \d+s ago$`), out)
	must.StrNotContains(t, out, "Placement Metrics")

	code, out, _ = run(t, a, allocStatus, "-verbose", alloc.ID[:5])
	must.Eq(t, 0, code)
	must.StrContains(t, out, "ID                  = "+alloc.ID)
	must.StrContains(t, out, "Placement Metrics")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Node\s+.*final score$`), out)
	must.StrContains(t, out, alloc.NodeID)

	code, _, errOut = run(t, a, allocStatus, "0000")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `No allocation(s) with prefix or id "0000" found`)
	code, _, errOut = run(t, a, allocStatus, "a")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "at least 2 characters")
}

// node status lists the nodes with upstream's columns and shows one node
// with its allocations.
func TestNodeStatus(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	nodeID := a.Client().NodeID()

	code, out, errOut := run(t, a, nodeStatus)
	must.Eq(t, 0, code, must.Sprint(errOut))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.SliceLen(t, 2, lines)
	must.Eq(t, []string{"ID", "Node Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status"}, columns(lines[0]))
	must.Eq(t, []string{nodeID[:8], "default", "dc1", a.Config().NodeName, "<none>", "false", "eligible", "ready"}, columns(lines[1]))

	// Without -address, NOMAD_ADDR names the agent.
	t.Setenv("NOMAD_ADDR", a.HTTPAddr)
	ui := cli.NewMockUi()
	must.Eq(t, 0, (&NodeStatusCommand{Meta: Meta{Ui: ui}}).Run(nil), must.Sprint(ui.ErrorWriter.String()))
	must.StrContains(t, ui.OutputWriter.String(), nodeID[:8])

	code, out, _ = run(t, a, jobRun, writeJob(t, "web", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprint(out))
	alloc := waitRunning(t, a, "web", 1)[0]

	code, out, errOut = run(t, a, nodeStatus, nodeID[:4])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+= `+nodeID+`$`), out, must.Sprint("the whole ID, as upstream"))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Status\s+= ready$`), out)
	must.StrContains(t, out, "mock_driver")
	must.StrContains(t, out, "Allocated Resources")
	must.StrContains(t, out, "100/")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^`+alloc.ID[:8]+`\s+`+nodeID[:8]+`\s+web\s+0\s+run\s+running`), out)
}

// job validate reports parse errors with file:line:column, the server's
// validation errors all at once, and success plainly.
func TestJobValidate(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)

	code, out, errOut := run(t, a, jobValidate, writeJob(t, "ok", "mock_driver", `run_for = "1s"`))
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Job validation successful")

	bad := filepath.Join(t.TempDir(), "bad.nomad.hcl")
	must.NoError(t, os.WriteFile(bad, []byte(`job "bad" {
  group "g" {
    consul {
      namespace = "x"
    }
  }
}
`), 0o600))
	code, _, errOut = run(t, a, jobValidate, bad)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, bad+":3:5")

	invalid := filepath.Join(t.TempDir(), "invalid.nomad.hcl")
	must.NoError(t, os.WriteFile(invalid, []byte(`job "invalid" {
  priority = 500
  group "g" {
    count = -2
    task "t" {
      driver = "mock_driver"
    }
  }
}
`), 0o600))
	code, _, errOut = run(t, a, jobValidate, invalid)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Job validation errors:")
	must.StrContains(t, errOut, "priority")
	must.StrContains(t, errOut, "count can't be negative")
}

// job stop stops the job's allocations, following the stop evaluation,
// and job status then shows the job stopped.
func TestJobStop(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	code, out, errOut := run(t, a, jobRun, writeJob(t, "web", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	waitRunning(t, a, "web", 1)

	code, out, errOut = run(t, a, jobStop, "web")
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	must.StrContains(t, out, `Evaluation triggered by job "web"`)
	must.RegexMatch(t, regexp.MustCompile(`finished with status "complete"`), out)

	c := apiClient(t, a)
	wait.Poll(t, 30*time.Second, "the allocation to stop", func() (bool, string) {
		allocs, _, err := c.Jobs().Allocations("web", false, nil)
		if err != nil || len(allocs) != 1 {
			return false, "allocations: " + describe(allocs, err)
		}
		return allocs[0].DesiredStatus == "stop" && allocs[0].ClientStatus == "complete", describe(allocs, nil)
	})
	code, out, _ = run(t, a, jobStatusCmd, "web")
	must.Eq(t, 0, code)
	must.StrContains(t, out, "(stopped)")

	code, _, errOut = run(t, a, jobStop, "nope")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `No job(s) with prefix or id "nope" found`)
}

func describe(allocs []*api.AllocationListStub, err error) string {
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, a := range allocs {
		parts = append(parts, a.ID[:8]+" desired="+a.DesiredStatus+" client="+a.ClientStatus)
	}
	return strings.Join(parts, "; ")
}

// Unknown flags print the problem and the usage and exit 1, like
// upstream's CLI, for every command but `job plan`, whose errors are 255
// (its 1 means "the plan changes allocations").
func TestCommands_UnknownFlag(t *testing.T) {
	for name := range Commands(Meta{Ui: cli.NewMockUi()}) {
		switch name {
		case "job", "alloc", "node", "eval", "server", "operator", "operator raft", "operator scheduler", "system", "version",
			"tls", "tls ca", "tls cert", "operator gossip", "operator gossip keyring", "acl", "acl policy", "acl token", "namespace", "node pool", "node meta", "node intro", "deployment", "job periodic",
			"var", "operator root", "operator root keyring", "operator tls", "operator tls ca", "service", "operator autopilot", "operator snapshot",
			"scaling", "scaling policy":
			continue // parents show help; version takes nothing
		}
		ui := cli.NewMockUi()
		cmd, err := Commands(Meta{Ui: ui})[name]()
		must.NoError(t, err)
		want := 1
		if name == "job plan" {
			want = planError
		}
		must.Eq(t, want, cmd.Run([]string{"-bogus"}), must.Sprint(name))
		must.StrContains(t, ui.ErrorWriter.String(), "flag provided but not defined: -bogus", must.Sprint(name))
		must.StrContains(t, ui.ErrorWriter.String(), "Usage: nomad ", must.Sprint(name))
	}
}

// The top-level CLI dispatches subcommands and prints the version.
func TestRunWithUi_Version(t *testing.T) {
	ui := cli.NewMockUi()
	must.Eq(t, 0, RunWithUi([]string{"version"}, ui))
	must.StrContains(t, ui.OutputWriter.String(), "Nomad v0.1.0")
	must.StrContains(t, ui.OutputWriter.String(), "nomad-edge")

	ui = cli.NewMockUi()
	must.Eq(t, 1, RunWithUi([]string{"job", "run"}, ui))
	must.StrContains(t, ui.ErrorWriter.String(), "This command takes one argument: <path>")
}

// alloc stop stops the allocation and the group gets a replacement, so its
// count holds; the command follows the evaluation like job run.
func TestAllocStop_Replaces(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := writeJob(t, "stopme", "mock_driver", `run_for = "1h"`)
	code, _, stderr := run(t, a, jobRun, path)
	must.Eq(t, exitOK, code, must.Sprint(stderr))
	allocs := waitRunning(t, a, "stopme", 1)
	old := allocs[0].ID

	code, stdout, stderr := run(t, a, allocStop, old[:8])
	must.Eq(t, exitOK, code, must.Sprint(stderr))
	must.StrContains(t, stdout, "created")
	must.StrContains(t, stdout, `finished with status "complete"`)

	c := apiClient(t, a)
	wait.Poll(t, 30*time.Second, "the stopped allocation replaced", func() (bool, string) {
		list, _, err := c.Jobs().Allocations("stopme", false, nil)
		if err != nil {
			return false, err.Error()
		}
		stopped, running := false, 0
		for _, al := range list {
			if al.ID == old && al.DesiredStatus == api.AllocDesiredStatusStop {
				stopped = true
			}
			if al.ID != old && al.ClientStatus == api.AllocClientStatusRunning {
				running++
			}
		}
		return stopped && running == 1, describe(list, nil)
	})

	code, _, stderr = run(t, a, allocStop, "ffffffff")
	must.Eq(t, exitError, code)
	must.StrContains(t, stderr, "No allocation(s) with prefix or id")
}
