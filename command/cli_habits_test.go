package command

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// cmdOf adapts a command value to run's constructor form.
func cmdOf[C cli.Command](mk func(Meta) C) func(Meta) cli.Command {
	return func(m Meta) cli.Command { return mk(m) }
}

// startJob runs a sleeping mock job and waits for its allocation.
func startJob(t *testing.T, a *agenttest.Agent, id string) *api.AllocationListStub {
	t.Helper()
	code, out, errOut := run(t, a, jobRun, writeJob(t, id, "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprintf("stdout:\n%s\nstderr:\n%s", out, errOut))
	return waitRunning(t, a, id, 1)[0]
}

// Every read command prints what it read as JSON with -json and through a
// Go template with -t: the data scripts want, without parsing tables.
func TestReadCommands_JSONAndTemplate(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	alloc := startJob(t, a, "web")

	for _, tc := range []struct {
		name string
		cmd  func(Meta) cli.Command
		args []string
		tmpl string
		want string
		// key is a JSON field the -json output must hold.
		key string
	}{
		{"job status list", jobStatusCmd, nil, `{{range .}}{{.ID}}{{end}}`, "web", "Status"},
		{"job status", jobStatusCmd, []string{"web"}, `{{.Name}}`, "web", "TaskGroups"},
		{"alloc status", allocStatus, []string{alloc.ID[:8]}, `{{.JobID}}`, "web", "ClientStatus"},
		{"node status list", nodeStatus, nil, `{{range .}}{{.Status}}{{end}}`, "ready", "Datacenter"},
		{"node status", nodeStatus, []string{alloc.NodeID[:8]}, `{{.Status}}`, "ready", "Attributes"},
		{"eval status", evalStatus, []string{alloc.EvalID[:8]}, `{{.TriggeredBy}}`, "job-register", "Priority"},
		{"eval list", cmdOf(func(m Meta) *EvalListCommand { return &EvalListCommand{Meta: m} }), nil, `{{range .}}{{.JobID}}{{end}}`, "web", "TriggeredBy"},
		{"job allocs", cmdOf(func(m Meta) *JobAllocsCommand { return &JobAllocsCommand{Meta: m} }), []string{"web"}, `{{range .}}{{.ClientStatus}}{{end}}`, "running", "TaskGroup"},
		{"server members", cmdOf(func(m Meta) *ServerMembersCommand { return &ServerMembersCommand{Meta: m} }), nil, `{{range .}}{{.Status}}{{end}}`, "alive", "Addr"},
		{"namespace list", cmdOf(func(m Meta) *NamespaceListCommand { return &NamespaceListCommand{Meta: m} }), nil, `{{range .}}{{.Name}}{{end}}`, "default", "Description"},
		{"namespace status", cmdOf(func(m Meta) *NamespaceStatusCommand { return &NamespaceStatusCommand{Meta: m} }), []string{"default"}, `{{.Name}}`, "default", "Description"},
		{"job history", cmdOf(func(m Meta) *JobHistoryCommand { return &JobHistoryCommand{Meta: m} }), []string{"web"}, `{{range .}}{{.Version}}{{end}}`, "0", "Version"},
		{"agent-info", cmdOf(func(m Meta) *AgentInfoCommand { return &AgentInfoCommand{Meta: m} }), nil, `{{.Member.Status}}`, "alive", "stats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, a, tc.cmd, append([]string{"-json"}, tc.args...)...)
			must.Eq(t, 0, code, must.Sprint(errOut))
			var v any
			must.NoError(t, json.Unmarshal([]byte(out), &v), must.Sprint(out))
			must.StrContains(t, out, `"`+tc.key+`"`)

			code, out, errOut = run(t, a, tc.cmd, append([]string{"-t", tc.tmpl}, tc.args...)...)
			must.Eq(t, 0, code, must.Sprint(errOut))
			must.Eq(t, tc.want, strings.TrimSpace(out))
		})
	}

	// Both at once, or a template that does not parse, is an error.
	code, _, errOut := run(t, a, jobStatusCmd, "-json", "-t", "{{.ID}}")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Both json and template formatting are not allowed")
	code, _, errOut = run(t, a, jobStatusCmd, "-t", "{{.ID")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "Error parsing the template")
}

// `nomad status` without an argument lists jobs; with a prefix it shows
// whatever the prefix names; a prefix naming several objects lists them.
func TestStatus_ResolvesPrefix(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	alloc := startJob(t, a, "web")
	status := cmdOf(func(m Meta) *StatusCommand { return &StatusCommand{Meta: m} })

	code, out, errOut := run(t, a, status)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "web")
	must.StrContains(t, out, "running")

	code, out, errOut = run(t, a, status, "web")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Summary")

	code, out, errOut = run(t, a, status, alloc.ID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "ID                  = "+alloc.ID[:8])
	must.StrContains(t, out, "Client Status")

	code, out, errOut = run(t, a, status, "-json", alloc.NodeID)
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, `"ID": "`+alloc.NodeID+`"`)

	code, out, errOut = run(t, a, status, "-verbose", "default")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Name        = default")

	code, _, errOut = run(t, a, status, "no-such-thing")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `No matches found for "no-such-thing"`)

	// "de" names the default namespace, and the job "de-1" too.
	startJob(t, a, "de-1")
	code, _, errOut = run(t, a, status, "de")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Prefix "de" matched multiple resources`)
	must.StrContains(t, errOut, "Jobs:\n  de-1")
	must.StrContains(t, errOut, "Namespaces:\n  default")
}

// `eval list` shows upstream's columns, narrows by -job and -filter and
// pages with -per-page, printing the command for the next page.
func TestEvalList(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	startJob(t, a, "one")
	startJob(t, a, "two")
	evalList := cmdOf(func(m Meta) *EvalListCommand { return &EvalListCommand{Meta: m} })

	code, out, errOut := run(t, a, evalList)
	must.Eq(t, 0, code, must.Sprint(errOut))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must.Eq(t, []string{"ID", "Priority", "Triggered By", "Job ID", "Namespace", "Node ID", "Status", "Placement Failures"}, columns(lines[0]))
	must.Len(t, 3, lines)

	code, out, _ = run(t, a, evalList, "-job", "two")
	must.Eq(t, 0, code)
	must.StrContains(t, out, "two")
	must.StrNotContains(t, out, " one ")

	code, out, _ = run(t, a, evalList, "-filter", `JobID == "one"`)
	must.Eq(t, 0, code)
	must.Len(t, 2, strings.Split(strings.TrimSpace(out), "\n"))

	code, out, _ = run(t, a, evalList, "-per-page", "1")
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Results have been paginated. To get the next page run:")
	token := out[strings.LastIndex(out, "-page-token ")+len("-page-token "):]
	code, out, _ = run(t, a, evalList, "-page-token", strings.TrimSpace(token))
	must.Eq(t, 0, code)
	must.Len(t, 2, strings.Split(strings.TrimSpace(out), "\n"))

	code, _, errOut = run(t, a, evalList, "-filter", "JobID ==")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "filter expression")

	code, out, _ = run(t, a, evalList, "-status", "failed")
	must.Eq(t, 0, code)
	must.Eq(t, "No evals found", strings.TrimSpace(out))
}

// `job allocs` lists a job's allocations by a prefix of its ID.
func TestJobAllocs(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	alloc := startJob(t, a, "web")
	jobAllocs := cmdOf(func(m Meta) *JobAllocsCommand { return &JobAllocsCommand{Meta: m} })
	code, out, errOut := run(t, a, jobAllocs, "we")
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, alloc.ID[:8])
	must.StrContains(t, out, "running")
	code, _, errOut = run(t, a, jobAllocs, "nope")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `No job(s) with prefix or id "nope" found`)
}

// `agent-info` prints the agent's stats by section; `monitor` streams its
// log at a level below the agent's own until it is stopped.
func TestAgentInfoAndMonitor(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	code, out, errOut := run(t, a, cmdOf(func(m Meta) *AgentInfoCommand { return &AgentInfoCommand{Meta: m} }))
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "\n  ")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ui := cli.NewMockUi()
	mon := &MonitorCommand{Meta: Meta{Ui: ui}, ctx: ctx}
	done := make(chan int, 1)
	go func() { done <- mon.Run([]string{"-address=" + a.HTTPAddr, "-log-level=debug"}) }()
	client := apiClient(t, a)
	wait.Poll(t, 10*time.Second, "a monitored log line", func() (bool, string) {
		// Each miss logs "request rejected" at debug level.
		_, _, _ = client.Jobs().Info("missing-job", nil)
		return strings.Contains(ui.OutputWriter.String(), "missing-job"), ui.ErrorWriter.String()
	})
	cancel()
	must.Eq(t, 0, <-done)

	code, _, errOut = run(t, a, cmdOf(func(m Meta) *MonitorCommand { return &MonitorCommand{Meta: m} }), "-log-level=loud")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `Unknown log_level "loud"`)
}

// An unknown command is an error naming it with exit 1, not a help screen.
func TestRunWithUi_UnknownCommand(t *testing.T) {
	ui := cli.NewMockUi()
	must.Eq(t, 1, RunWithUi([]string{"stauts"}, ui))
	must.StrContains(t, ui.ErrorWriter.String(), `"stauts" is not a nomad command.`)

	ui = cli.NewMockUi()
	must.Eq(t, 1, RunWithUi([]string{"eval", "lst"}, ui))
	must.StrContains(t, ui.ErrorWriter.String(), `"lst" is not a subcommand of "nomad eval".`)
}

// -eval-priority on job run and job stop sets the priority of the
// evaluation each creates; the job keeps its own.
func TestJobRunStop_EvalPriority(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	client := apiClient(t, a)
	code, out, errOut := run(t, a, jobRun, "-detach", "-eval-priority=80", writeJob(t, "web", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprint(errOut))
	evalID := strings.TrimSpace(out[strings.Index(out, "Evaluation ID: ")+len("Evaluation ID: "):])
	eval, _, err := client.Evaluations().Info(evalID, nil)
	must.NoError(t, err)
	must.Eq(t, 80, eval.Priority)

	code, _, errOut = run(t, a, jobStop, "-detach", "-eval-priority=70", "web")
	must.Eq(t, 0, code, must.Sprint(errOut))
	evals, _, err := client.Evaluations().List(&api.QueryOptions{Filter: `TriggeredBy == "job-deregister"`})
	must.NoError(t, err)
	must.Len(t, 1, evals)
	must.Eq(t, 70, evals[0].Priority)

	code, _, errOut = run(t, a, jobRun, "-detach", "-eval-priority=101", writeJob(t, "web", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "eval priority must be between 1 and 100")
}

// Every parent command names a subcommand it does not have.
func TestParents_UnknownSubcommand(t *testing.T) {
	for _, args := range [][]string{{"acl", "polcy"}, {"acl", "policy", "lst"}, {"acl", "token", "lst"}, {"system", "gcc"}} {
		ui := cli.NewMockUi()
		must.Eq(t, 1, RunWithUi(args, ui), must.Sprint(args))
		must.StrContains(t, ui.ErrorWriter.String(), `"`+args[len(args)-1]+`" is not a subcommand of "nomad `+strings.Join(args[:len(args)-1], " ")+`".`)
	}
}
