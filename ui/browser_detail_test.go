package ui_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// registerJob registers job on the dev agent's servers and returns its
// evaluation's ID.
func registerJob(t *testing.T, a *agenttest.Agent, job *structs.Job) string {
	t.Helper()
	job.Canonicalize()
	var reg structs.JobRegisterResponse
	must.NoError(t, a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	return reg.EvalID
}

// runningAllocsOf are the job's allocations that run and are meant to.
func runningAllocsOf(t *testing.T, a *agenttest.Agent, ns, jobID string) []*structs.Allocation {
	t.Helper()
	allocs, err := a.Server().State().AllocsByJob(nil, ns, jobID, true)
	must.NoError(t, err)
	var running []*structs.Allocation
	for _, al := range allocs {
		if al.ClientStatus == structs.AllocClientStatusRunning && al.DesiredStatus == structs.AllocDesiredStatusRun {
			running = append(running, al)
		}
	}
	return running
}

// waitAllocsRunning waits until n allocations of job run and returns them.
func waitAllocsRunning(t *testing.T, a *agenttest.Agent, job *structs.Job, n int) []*structs.Allocation {
	t.Helper()
	var running []*structs.Allocation
	wait.Poll(t, 30*time.Second, fmt.Sprintf("%d allocations of %s running", n, job.ID), func() (bool, string) {
		running = runningAllocsOf(t, a, job.Namespace, job.ID)
		return len(running) == n, fmt.Sprint(len(running), " running")
	})
	return running
}

// The logs page follows a task's output as `nomad alloc logs -f` does
// (issue 29 item 2): reached from the allocation page, it shows what the
// task wrote, then each new line as it is written without a reload, and
// its stderr at the switch, so an operator can watch a task from the
// browser.
func TestUI_BrowserTaskLogs(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, nil)
	job := &structs.Job{
		ID: "chatty", Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "app", Count: 1,
			Tasks: []*structs.Task{{
				Name: "talker", Driver: "raw_exec",
				Config: map[string]any{"command": "/bin/sh", "args": []any{"-c",
					`i=0; while :; do i=$((i+1)); echo "out line $i"; echo "err line $i" >&2; sleep 0.3; done`}},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	registerJob(t, a, job)
	allocID := waitAllocsRunning(t, a, job, 1)[0].ID

	start := time.Now()
	page := tab(t, b, a.HTTPAddr+"/ui/allocations/"+allocID)
	logsLink := fmt.Sprintf(`.task[data-task="talker"] a[href="/ui/allocations/%s/logs/talker"]`, allocID)
	waitFor(t, page, 20*time.Second, "the task's logs link on the allocation page", logsLink)
	click(t, page, logsLink)
	waitFor(t, page, 20*time.Second, "the logs page, following", `#logs-page #logs-output[data-type="stdout"][data-state="following"]`)
	waitForText(t, page, 20*time.Second, "the task's stdout", "#logs-output", "out line ")

	// Follow: a line written after the page opened shows up in it.
	text := textOf(t, page, "#logs-output")
	last := lastNumbered(text, "out line ")
	must.Positive(t, last, must.Sprint("a numbered line in:\n", lastLines(text, 5)))
	waitForText(t, page, 20*time.Second, "a new stdout line, followed", "#logs-output", fmt.Sprintf("out line %d\n", last+2))
	must.StrNotContains(t, textOf(t, page, "#logs-output"), "err line")
	screenshot(t, page, "ui-task-logs.png")

	click(t, page, `.switch button[data-type="stderr"]`)
	waitFor(t, page, 10*time.Second, "the stderr view", `#logs-output[data-type="stderr"][data-state="following"]`)
	waitForText(t, page, 20*time.Second, "the task's stderr", "#logs-output", "err line ")
	must.StrNotContains(t, textOf(t, page, "#logs-output"), "out line")

	// Follow off closes the stream and keeps the text.
	click(t, page, "#logs-follow")
	waitFor(t, page, 10*time.Second, "the stream closed", `#logs-output[data-state="paused"]`)
	must.StrContains(t, textOf(t, page, "#logs-output"), "err line ")
	t.Logf("logs page: opened, followed and switched in %v", time.Since(start).Round(time.Millisecond))
}

// lastNumbered is the highest n of the lines "<prefix>n" in text.
func lastNumbered(text, prefix string) int {
	best := 0
	for _, m := range regexp.MustCompile(regexp.QuoteMeta(prefix)+`(\d+)`).FindAllStringSubmatch(text, -1) {
		if n, _ := strconv.Atoi(m[1]); n > best {
			best = n
		}
	}
	return best
}

// The evaluation page explains why a job could not be placed in the same
// words as `nomad eval status` (the CLI is the one wording source, and
// the test reads it from the CLI itself): a constraint no node meets and
// a group larger than the node, reached from the job page's evaluation
// link, with the blocked evaluation linked.
func TestUI_BrowserEvalPlacementFailures(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, nil)
	job := &structs.Job{
		ID: "unplaceable", Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{
			{
				Name: "windows", Count: 1,
				Constraints: []*structs.Constraint{{LTarget: "${attr.kernel.name}", RTarget: "windows", Operand: "="}},
				Tasks: []*structs.Task{{
					Name: "app", Driver: "mock_driver", Config: map[string]any{"run_for": "1h"},
					Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
				}},
			},
			{
				Name: "huge", Count: 2,
				Tasks: []*structs.Task{{
					Name: "app", Driver: "mock_driver", Config: map[string]any{"run_for": "1h"},
					Resources: &structs.Resources{CPU: 100, MemoryMB: 64 << 20},
				}},
			},
		},
	}
	evalID := registerJob(t, a, job)
	var blocked string
	wait.Poll(t, 20*time.Second, "the evaluation complete with its placement failures", func() (bool, string) {
		e, err := a.Server().State().EvalByID(nil, evalID)
		must.NoError(t, err)
		if e == nil || e.Status != structs.EvalStatusComplete {
			return false, fmt.Sprint("eval ", e)
		}
		blocked = e.BlockedEval
		return len(e.FailedTGAllocs) == 2, fmt.Sprint(len(e.FailedTGAllocs), " groups failed")
	})

	// What the CLI prints for it: the heading of each group and its reasons.
	ui := cli.NewMockUi()
	must.Zero(t, command.RunWithUi([]string{"eval", "status", "-address=" + a.HTTPAddr, evalID}, ui), must.Sprint(ui.ErrorWriter.String()))
	cliOut := ui.OutputWriter.String()
	headings, reasons := cliPlacementFailures(cliOut)
	must.SliceLen(t, 2, headings, must.Sprint("two groups in the CLI's output:\n", cliOut))
	must.SliceContains(t, reasons, `Constraint "${attr.kernel.name} = windows": 1 nodes excluded by filter`, must.Sprint(cliOut))
	must.SliceContains(t, reasons, `Dimension "memory" exhausted on 1 nodes`, must.Sprint(cliOut))
	must.SliceContains(t, reasons, `Resources exhausted on 1 nodes`, must.Sprint(cliOut))

	jobTab := tab(t, b, a.HTTPAddr+"/ui/jobs/"+job.ID)
	evalLink := fmt.Sprintf(`table.evals tr[data-eval-id=%q] a[href="/ui/evaluations/%s"]`, evalID, evalID)
	waitFor(t, jobTab, 20*time.Second, "the evaluation linked from the job page", evalLink)
	click(t, jobTab, evalLink)
	waitFor(t, jobTab, 20*time.Second, "the evaluation page with both groups' failures",
		`#eval-page[data-failures="true"] .placement-failure[data-group="huge"] ~ .placement-failure[data-group="windows"]`)

	// Page and CLI say the same, line for line.
	pageHeadings, err := chromedp.Run(jobTab, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.placement-failure h3')].map((e) => e.innerText)`))
	must.NoError(t, err)
	pageReasons, err := chromedp.Run(jobTab, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.placement-failure li')].map((e) => e.innerText)`))
	must.NoError(t, err)
	must.Eq(t, headings, pageHeadings, must.Sprint("the CLI printed:\n", cliOut))
	must.Eq(t, reasons, pageReasons, must.Sprint("the CLI printed:\n", cliOut))

	// Waited for, not read once: the page renders again when its event
	// stream connects, and a read in between saw an empty table (ci4).
	waitForText(t, jobTab, 10*time.Second, "the evaluation's trigger", "#eval-page .kv", "job-register")
	must.NotEq(t, "", blocked, must.Sprint("a blocked evaluation for the remainder"))
	waitFor(t, jobTab, 5*time.Second, "the blocked evaluation linked", fmt.Sprintf(`#eval-page .blocked-note a[href="/ui/evaluations/%s"]`, blocked))
	screenshot(t, jobTab, "ui-evaluation.png")

	// The blocked evaluation's own page names the evaluation before it.
	click(t, jobTab, fmt.Sprintf(`#eval-page .blocked-note a[href="/ui/evaluations/%s"]`, blocked))
	waitFor(t, jobTab, 20*time.Second, "the blocked evaluation's page", fmt.Sprintf(`#eval-page[data-eval-id=%q][data-status="blocked"] a[href="/ui/evaluations/%s"]`, blocked, evalID))
}

// cliPlacementFailures picks out of `nomad eval status` output the
// "Task Group ..." headings and the "* ..." reasons under them.
func cliPlacementFailures(out string) (headings, reasons []string) {
	_, failures, ok := strings.Cut(out, "==> Failed Placements\n")
	if !ok {
		return nil, nil
	}
	for _, l := range strings.Split(failures, "\n") {
		switch {
		case strings.HasPrefix(l, "Task Group "):
			headings = append(headings, l)
		case strings.HasPrefix(strings.TrimSpace(l), "* "):
			reasons = append(reasons, strings.TrimPrefix(strings.TrimSpace(l), "* "))
		}
	}
	return headings, reasons
}

// The job page shows a service job's deployments (issue 29 item 2): the
// first one's groups placed and healthy, then an update with a canary
// waiting for promotion, with the place for its promote button; the
// deployment's own page shows the same counts.
func TestUI_BrowserDeployments(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, nil)
	job := &structs.Job{
		ID: "deployed", Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "web", Count: 2,
			Update: &structs.UpdateStrategy{
				MaxParallel: 2, HealthCheck: structs.UpdateHealthCheckTaskStates,
				MinHealthyTime: 200 * time.Millisecond, HealthyDeadline: 30 * time.Second, ProgressDeadline: 10 * time.Minute,
			},
			Tasks: []*structs.Task{{
				Name: "app", Driver: "mock_driver", Config: map[string]any{"run_for": "1h"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	registerJob(t, a, job.Copy())
	page := tab(t, b, a.HTTPAddr+"/ui/jobs/"+job.ID)
	// The servers first: a page that lags them is the UI's fault, one
	// they never reach is not.
	wait.Poll(t, 30*time.Second, "the servers' deployment successful", func() (bool, string) {
		d, err := a.Server().State().LatestDeploymentByJobID(nil, structs.DefaultNamespace, job.ID)
		must.NoError(t, err)
		if d == nil {
			return false, "no deployment"
		}
		s := d.TaskGroups["web"]
		return d.Status == structs.DeploymentStatusSuccessful, fmt.Sprintf("%s (%s), web %+v", d.Status, d.StatusDescription, s)
	})
	first := `#job-deployments table.deployment-groups tr[data-group="web"][data-desired="2"][data-placed="2"][data-healthy="2"][data-unhealthy="0"]`
	waitFor(t, page, 30*time.Second, "the deployment's group placed and healthy on the job page", first)
	waitFor(t, page, 30*time.Second, "the deployment successful", `#job-deployments [data-status="successful"]`)

	// An update with a canary waits for promotion.
	v1 := job.Copy()
	v1.TaskGroups[0].Update.Canary = 1
	v1.TaskGroups[0].Tasks[0].Env = map[string]string{"VERSION": "1"}
	registerJob(t, a, v1)
	canary := `#job-deployments table.deployment-groups tr[data-group="web"][data-canaries="1"][data-promoted="false"][data-healthy="1"]`
	waitFor(t, page, 30*time.Second, "the canary placed and healthy, not promoted", canary)
	waitFor(t, page, 5*time.Second, "the place for the deployment's buttons", `#job-deployments #deployment-actions[data-status="running"]`)
	waitFor(t, page, 5*time.Second, "both deployments listed", `#job-deployments table.deployments tr[data-status="successful"] ~ tr, #job-deployments table.deployments tr ~ tr[data-status="successful"]`)
	must.StrContains(t, textOf(t, page, "#job-deployments .deployment-description"), "promotion")
	screenshot(t, page, "ui-job-deployments.png")

	depID, err := chromedp.Run(page, chromedp.Evaluate[string](`document.querySelector('#deployment-actions').dataset.deploymentId`))
	must.NoError(t, err)
	click(t, page, fmt.Sprintf(`#job-deployments h3 a[href="/ui/deployments/%s"]`, depID))
	waitFor(t, page, 20*time.Second, "the deployment page",
		fmt.Sprintf(`#deployment-page[data-deployment-id=%q][data-status="running"] #deployment-actions`, depID))
	waitFor(t, page, 5*time.Second, "its group's counts", `#deployment-page table.deployment-groups tr[data-group="web"][data-desired="2"][data-canaries="1"][data-promoted="false"]`)
	row := textOf(t, page, `#deployment-page table.deployment-groups tr[data-group="web"]`)
	must.StrContains(t, row, "1 of 1 placed")
	must.StrContains(t, row, "in 9m") // the progress deadline: 10m after the last progress
	screenshot(t, page, "ui-deployment.png")
}

// The node page shows a drain prominently (issue 29 item 2): draining,
// its deadline, the node ineligible, and the place for the node's
// buttons, updated live when the drain is set.
func TestUI_BrowserNodeDrain(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, nil)
	// The drainer leaves a batch allocation until the drain's deadline,
	// so the drain stays in progress for the test.
	job := &structs.Job{
		ID: "batch-holds-drain", Type: structs.JobTypeBatch, Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name: "app", Count: 1,
			Tasks: []*structs.Task{{
				Name: "app", Driver: "mock_driver", Config: map[string]any{"run_for": "1h"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	registerJob(t, a, job)
	waitAllocsRunning(t, a, job, 1)
	nodeID := a.Client().NodeID()

	page := tab(t, b, a.HTTPAddr+"/ui/clients/"+nodeID)
	waitFor(t, page, 20*time.Second, "the node eligible and not draining", `#node-page #node-drain[data-drain="false"][data-eligibility="eligible"] #node-actions`)
	waitFor(t, page, 20*time.Second, "the event stream followed", `#live[data-state="live"]`)

	var resp structs.NodeDrainUpdateResponse
	must.NoError(t, a.Server().RPC("Node.UpdateDrain", &structs.NodeUpdateDrainRequest{
		NodeID:        nodeID,
		DrainStrategy: &structs.DrainStrategy{DrainSpec: structs.DrainSpec{Deadline: time.Hour, IgnoreSystemJobs: true}},
	}, &resp))
	waitFor(t, page, 20*time.Second, "the node draining and ineligible, without a reload",
		`#node-drain.drain-alert[data-drain="true"][data-eligibility="ineligible"] #node-actions`)
	drain := textOf(t, page, "#node-drain")
	must.StrContains(t, drain, "deadline in 59m")
	must.StrContains(t, drain, "ignoring system jobs")
	// Prominent: the block comes right under the heading.
	order, err := chromedp.Run(page, chromedp.Evaluate[[]string](`[...document.querySelector('#node-page').children].slice(0, 3).map((e) => e.id || e.tagName)`))
	must.NoError(t, err)
	must.SliceContains(t, order, "node-drain", must.Sprint("the page's first elements: ", order))
	screenshot(t, page, "ui-node-drain.png")
}
