package command

import (
	"bytes"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// The status flags an operator types from habit do what upstream's do:
// alloc status -short and node status -short keep to the basics, node
// status -self finds the local client's node without its ID, and job
// status -evals and -all-allocs add their sections.
func TestStatusFlags_UpstreamHabits(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	alloc := startJob(t, a, "web")

	t.Run("alloc status -short", func(t *testing.T) {
		code, out, errOut := run(t, a, allocStatus, "-short", alloc.ID[:8])
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, "Client Status       = running")
		must.StrContains(t, out, "\nTasks\n")
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Name\s+State\s+Last Event\s+Time\s+Lifecycle$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^web\s+running\s+Started\s+\S+`), out)
		must.StrNotContains(t, out, "Recent Events")
		must.StrNotContains(t, out, "Task Resources")
	})

	t.Run("node status -self", func(t *testing.T) {
		code, out, errOut := run(t, a, nodeStatus, "-self")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+= `+alloc.NodeID+`$`), out)
		must.StrContains(t, out, "Allocations")

		code, out, errOut = run(t, a, nodeStatus, "-self", "-verbose", "-short")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+= `+alloc.NodeID+`$`), out)
		must.StrNotContains(t, out, "Allocations")
		must.StrNotContains(t, out, "Node Events")

		code, _, errOut = run(t, a, nodeStatus, "-self", alloc.NodeID)
		must.Eq(t, 1, code)
		must.StrContains(t, errOut, "With -self this command takes no argument")
	})

	t.Run("node status -allocs", func(t *testing.T) {
		code, out, errOut := run(t, a, nodeStatus, "-allocs")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+Node Pool.*\s+Status\s+Running Allocs$`), out)
		must.RegexMatch(t, regexp.MustCompile(`(?m)^`+alloc.NodeID[:8]+`\s.*\sready\s+1$`), out)
		code, out, _ = run(t, a, nodeStatus)
		must.Eq(t, 0, code)
		must.StrNotContains(t, out, "Running Allocs")
	})

	t.Run("node status -verbose", func(t *testing.T) {
		node, _, err := apiClient(t, a).Nodes().Info(alloc.NodeID, nil)
		must.NoError(t, err)
		must.MapNotEmpty(t, node.Attributes)
		k := slices.Sorted(maps.Keys(node.Attributes))[0]

		code, out, errOut := run(t, a, nodeStatus, "-verbose", alloc.NodeID[:8])
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, "\nAttributes\n")
		must.RegexMatch(t, regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(k)+`\s+= `), out)
		code, out, _ = run(t, a, nodeStatus, alloc.NodeID[:8])
		must.Eq(t, 0, code)
		must.StrNotContains(t, out, "\nAttributes\n")
	})

	t.Run("node status -short", func(t *testing.T) {
		code, out, errOut := run(t, a, nodeStatus, "-short", alloc.NodeID[:8])
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.RegexMatch(t, regexp.MustCompile(`(?m)^Status\s+= ready$`), out)
		must.StrNotContains(t, out, "Allocated Resources")
	})

	t.Run("job status -evals -all-allocs", func(t *testing.T) {
		code, out, errOut := run(t, a, jobStatusCmd, "web")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrNotContains(t, out, "\nEvaluations\n")

		code, out, errOut = run(t, a, jobStatusCmd, "-evals", "-all-allocs", "web")
		must.Eq(t, 0, code, must.Sprint(errOut))
		must.StrContains(t, out, "\nEvaluations\n")
		must.StrContains(t, out, alloc.EvalID[:8])
		must.StrContains(t, out, "job-register")
		must.True(t, strings.Index(out, "Evaluations") < strings.Index(out, "Allocations"))
		must.StrContains(t, out, alloc.ID[:8])
	})
}

// With -namespace=* the job list names each job's namespace, a job found
// in one namespace is shown and acted on there, and an ID that two
// namespaces hold is refused as ambiguous rather than picked at random.
func TestJobCommands_AllNamespaces(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	_, err := apiClient(t, a).Namespaces().Register(&api.Namespace{Name: "fleet"}, nil)
	must.NoError(t, err)
	for _, run1 := range [][]string{
		{"-detach", writeJob(t, "web", "mock_driver", `run_for = "5m"`)},
		{"-detach", "-namespace=fleet", writeJob(t, "web", "mock_driver", `run_for = "5m"`)},
		{"-detach", "-namespace=fleet", writeJob(t, "solo", "mock_driver", `run_for = "5m"`)},
	} {
		code, _, errOut := run(t, a, jobRun, run1...)
		must.Eq(t, 0, code, must.Sprint(errOut))
	}

	code, out, errOut := run(t, a, jobStatusCmd, "-namespace=*")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+Namespace\s+Type\s+Priority\s+Status\s+Submit Date$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^solo\s+fleet\s+service`), out)
	code, out, errOut = run(t, a, jobStatusCmd)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrNotContains(t, out, "Namespace")

	code, out, errOut = run(t, a, jobStatusCmd, "-namespace=*", "so")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^Namespace\s+= fleet$`), out)
	must.StrContains(t, out, "\nSummary\n")
	code, out, errOut = run(t, a, cmdOf(func(m Meta) *JobInspectCommand { return &JobInspectCommand{Meta: m} }),
		"-namespace=*", "-t", "{{.Namespace}}", "solo")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "fleet", strings.TrimSpace(out))

	code, _, errOut = run(t, a, jobStatusCmd, "-namespace=*", "web")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Prefix matched multiple jobs")
	must.RegexMatch(t, regexp.MustCompile(`(?m)^web\s+default\s+`), errOut)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^web\s+fleet\s+`), errOut)

	code, _, errOut = run(t, a, jobStop, "-namespace=*", "-detach", "solo")
	must.Eq(t, 0, code, must.Sprint(errOut))
	job, _, err := apiClient(t, a).Jobs().Info("solo", &api.QueryOptions{Namespace: "fleet"})
	must.NoError(t, err)
	must.True(t, *job.Stop)
}

// job run -output prints the register request's body without submitting
// it, and eval status -monitor follows an evaluation with job run's exit
// codes; -monitor with -json is refused by name.
func TestJobRunOutput_EvalMonitor(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	path := writeJob(t, "web", "mock_driver", `run_for = "5m"`)
	code, out, errOut := run(t, a, jobRun, "-output", path)
	must.Eq(t, 0, code, must.Sprint(errOut))
	var body struct{ Job *api.Job }
	must.NoError(t, json.Unmarshal([]byte(out), &body), must.Sprint(out))
	must.Eq(t, "web", *body.Job.ID)
	jobs, _, err := apiClient(t, a).Jobs().List(nil)
	must.NoError(t, err)
	must.SliceEmpty(t, jobs, must.Sprint("-output submits nothing"))

	alloc := startJob(t, a, "web")
	code, out, errOut = run(t, a, evalStatus, "-monitor", alloc.EvalID[:8])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, `Monitoring evaluation "`+alloc.EvalID[:8]+`"`)
	must.StrContains(t, out, `finished with status "complete"`)

	code, _, errOut = run(t, a, evalStatus, "-monitor", "-json", alloc.EvalID[:8])
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "-monitor flag cannot be used with -json or -t")
}

// job deployments lists a job's deployments (or, with -latest, shows its
// newest), and the deployment commands print JSON and templates like the
// other read commands.
func TestJobDeployments(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	startJob(t, a, "web")
	deps, _, err := apiClient(t, a).Jobs().Deployments("web", nil)
	must.NoError(t, err)
	must.Len(t, 1, deps)
	dep := deps[0]
	jobDeps := cmdOf(func(m Meta) *JobDeploymentsCommand { return &JobDeploymentsCommand{Meta: m} })

	code, out, errOut := run(t, a, jobDeps, "we")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.RegexMatch(t, regexp.MustCompile(`(?m)^ID\s+Job ID\s+Job Version\s+Status\s+Description$`), out)
	must.RegexMatch(t, regexp.MustCompile(`(?m)^`+dep.ID[:8]+`\s+web\s+0\s`), out)

	code, out, errOut = run(t, a, jobDeps, "-latest", "-verbose", "web")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "ID          = "+dep.ID)

	code, out, errOut = run(t, a, jobDeps, "-t", "{{range .}}{{.ID}}{{end}}", "web")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, dep.ID, strings.TrimSpace(out))

	code, _, errOut = run(t, a, jobDeps)
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "This command takes one argument: <job>")

	status := cmdOf(func(m Meta) *StatusCommand { return &StatusCommand{Meta: m} })
	code, out, errOut = run(t, a, status, dep.ID[:8])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "ID          = "+dep.ID[:8])
	must.StrContains(t, out, "Job Version = 0")

	depList := cmdOf(func(m Meta) *DeploymentListCommand { return &DeploymentListCommand{Meta: m} })
	code, out, errOut = run(t, a, depList, "-json")
	must.Eq(t, 0, code, must.Sprint(errOut))
	var list []*api.Deployment
	must.NoError(t, json.Unmarshal([]byte(out), &list), must.Sprint(out))
	must.Len(t, 1, list)
	depStatus := cmdOf(func(m Meta) *DeploymentStatusCommand { return &DeploymentStatusCommand{Meta: m} })
	code, out, errOut = run(t, a, depStatus, "-t", "{{.JobID}}", dep.ID[:8])
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, "web", strings.TrimSpace(out))
}

// job promote promotes the canaries of the job's newest deployment, as
// deployment promote does given its ID; an unknown job, or one whose
// deployment is finished, is refused with the reason.
func TestJobPromote(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	id := canaryAwaitingPromotion(t, a, "can")
	client := apiClient(t, a)
	jobPromote := func(m Meta) cli.Command { return newJobPromote(m) }
	code, out, errOut := run(t, a, jobPromote, "-detach", "ca")
	must.Eq(t, exitOK, code, must.Sprint(errOut))
	must.StrContains(t, out, `Deployment "`+id[:8]+`" promoted`)
	wait.Poll(t, 30*time.Second, "deployment successful", func() (bool, string) {
		d, _, err := client.Deployments().Info(id, nil)
		must.NoError(t, err)
		return d.Status == "successful", d.Status + " " + d.StatusDescription
	})

	code, _, errOut = run(t, a, jobPromote, "can")
	must.Eq(t, exitError, code)
	must.StrContains(t, errOut, "Error promoting deployment")
	must.StrContains(t, errOut, "can't promote terminal deployment")

	code, _, errOut = run(t, a, jobPromote, "nope")
	must.Eq(t, exitError, code)
	must.StrContains(t, errOut, `No job(s) with prefix or id "nope" found`)
}

// -job makes alloc fs (and alloc logs and alloc exec) act on the job's
// running allocation, for an operator who knows the job and not the
// allocation; a job with nothing running is refused by name.
func TestAllocCommands_Job(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	alloc := startJob(t, a, "web")
	var listing bytes.Buffer
	allocFS := cmdOf(func(m Meta) *AllocFSCommand { return &AllocFSCommand{Meta: m, stdout: &listing} })

	code, _, errOut := run(t, a, allocFS, "-job", "we")
	must.Eq(t, 0, code, must.Sprint(errOut))
	out := listing.String()
	must.StrContains(t, out, "alloc/")
	listing.Reset()
	code, _, _ = run(t, a, allocFS, alloc.ID[:8])
	must.Eq(t, 0, code)
	must.Eq(t, listing.String(), out, must.Sprint("-job lists the running allocation's directory"))

	code, _, errOut = run(t, a, jobStop, "-yes", "web")
	must.Eq(t, 0, code, must.Sprint(errOut))
	wait.Poll(t, 30*time.Second, "the allocation stopped", func() (bool, string) {
		got, _, err := apiClient(t, a).Allocations().Info(alloc.ID, nil)
		must.NoError(t, err)
		return got.ClientStatus != api.AllocClientStatusRunning, got.ClientStatus
	})
	code, _, errOut = run(t, a, allocFS, "-job", "web")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Job "web" has no running allocations`)
}
