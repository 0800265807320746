package ui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// webHCL is the job the run page submits: one mock task, no deployment
// (max_parallel = 0), so the scale that follows is not refused.
const webHCL = `job "web" {
  datacenters = ["dc1"]
  update {
    max_parallel = 0
  }
  group "web" {
    count = 1
    task "web" {
      driver = "mock_driver"
      config {
        run_for = "1h"
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`

// brokenHCL misses the value of count on line 3.
const brokenHCL = "job \"web\" {\n  group \"web\" {\n    count = \n  }\n}\n"

// The acting half of the UI (issue 29 item 2), in a real browser against
// a dev agent: a job run from HCL (a parse error shown with its position,
// then the plan as nomad job plan summarises it, a confirmation, the job
// page), a group scaled from 1 to 2, an allocation restarted and one
// stopped (and replaced), the job stopped and started again. Each step
// goes through a dialog saying what will happen, and the API confirms it.
func TestUI_BrowserJobActions(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, nil)
	st := a.Server().State()

	run := tab(t, b, a.HTTPAddr+"/ui/jobs/run")
	waitFor(t, run, 20*time.Second, "the run page", "#run-page #run-hcl")
	setValue(t, run, "#run-hcl", brokenHCL)
	click(t, run, "#run-plan-button")
	waitFor(t, run, 20*time.Second, "the parse error", "#run-error:not([hidden])")
	parseErr := textOf(t, run, "#run-error")
	must.StrContains(t, parseErr, "400")
	must.StrContains(t, parseErr, "input.hcl:3:13: Invalid expression", must.Sprint("the parser's line:column in: ", parseErr))

	// The file picker fills the text area; the plan is of what it holds.
	file := filepath.Join(t.TempDir(), "web.nomad.hcl")
	must.NoError(t, os.WriteFile(file, []byte(webHCL), 0o644))
	must.NoError(t, chromedp.Do(run, chromedp.SetUploadFiles(chromedp.CSS("#run-file"), []string{file})))
	pollPage(t, run, 10*time.Second, "the file read into the text area",
		`document.getElementById('run-hcl').value.includes('mock_driver') ? '' : 'text area: ' + document.getElementById('run-hcl').value`)
	click(t, run, "#run-plan-button")
	waitFor(t, run, 20*time.Second, "the plan", "#run-plan:not([hidden]) #run-submit")
	must.StrContains(t, textOf(t, run, "#run-diff"), `+ Job: "web"`)
	must.StrContains(t, textOf(t, run, "#run-diff"), `+ Task Group: "web" (1 create)`)
	must.StrContains(t, textOf(t, run, "#run-dryrun"), "All tasks successfully allocated.")
	must.StrContains(t, textOf(t, run, "#run-index"), "Job Modify Index: 0")
	screenshot(t, run, "ui-run-plan.png")

	what := openDialog(t, run, "#run-submit")
	must.StrContains(t, what, "Run job web in namespace default as planned (web: 1 create)")
	dialogScreenshot(t, run, "ui-run-confirm.png")
	confirmDialog(t, run)
	waitFor(t, run, 20*time.Second, "the job page after the run", `#job-page[data-job="web"]`)
	waitFor(t, run, 30*time.Second, "the job's allocation running", `#job-page tr[data-alloc-id][data-status="running"]`)
	job, err := st.JobByID(nil, structs.DefaultNamespace, "web")
	must.NoError(t, err)
	must.NotNil(t, job, must.Sprint("the job registered"))

	// Scale from 1 to 2: the second allocation appears.
	jobTab := run
	waitFor(t, jobTab, 20*time.Second, "the scale button", `#job-actions button[data-action="scale"][data-group="web"]`)
	openDialog(t, jobTab, `#job-actions button[data-action="scale"][data-group="web"]`)
	setValue(t, jobTab, `#action-dialog input[name="count"]`, "2")
	must.StrContains(t, textOf(t, jobTab, "#action-dialog .action-what"), "Scale group web of job web in namespace default from 1 to 2")
	confirmDialog(t, jobTab)
	running := `#job-page tr[data-alloc-id][data-status="running"]`
	pollPage(t, jobTab, 30*time.Second, "two allocations running", countIs(running, 2))
	must.Eq(t, 2, runningAllocs(t, a, "web"), must.Sprint("the servers run 2"))

	// Restart one allocation in place, from its page.
	allocID := runningAllocIDs(t, a, "web")[0]
	allocTab := tab(t, b, a.HTTPAddr+"/ui/allocations/"+allocID)
	waitFor(t, allocTab, 20*time.Second, "the restart button", `#alloc-actions button[data-action="restart-alloc"]`)
	must.StrContains(t, openDialog(t, allocTab, `#alloc-actions button[data-action="restart-alloc"]`), "Restart every task of allocation "+allocID[:8])
	confirmDialog(t, allocTab)
	wait.Poll(t, 30*time.Second, "the task restarted (the client reports it)", func() (bool, string) {
		al, err := st.AllocByID(nil, allocID)
		must.NoError(t, err)
		ts := al.TaskStates["web"]
		if ts == nil {
			return false, "no task state"
		}
		return ts.Restarts >= 1, fmt.Sprintf("restarts %d, state %s", ts.Restarts, ts.State)
	})

	// Stop it: the servers replace it.
	waitFor(t, allocTab, 20*time.Second, "the stop button", `#alloc-actions button[data-action="stop-alloc"]`)
	must.StrContains(t, openDialog(t, allocTab, `#alloc-actions button[data-action="stop-alloc"]`), "the scheduler places a replacement")
	confirmDialog(t, allocTab)
	waitFor(t, allocTab, 30*time.Second, "the allocation stopped", `#alloc-page:not([data-status="running"])`)
	wait.Poll(t, 30*time.Second, "a replacement running", func() (bool, string) {
		ids := runningAllocIDs(t, a, "web")
		return len(ids) == 2 && !strings.Contains(strings.Join(ids, ","), allocID), fmt.Sprint("running: ", ids)
	})

	// Stop the job: the dialog names what stops.
	pollPage(t, jobTab, 30*time.Second, "two allocations running after the replacement", countIs(running, 2))
	what = openDialog(t, jobTab, `#job-actions button[data-action="stop-job"]`)
	must.StrContains(t, what, "Stop job web in namespace default: its 2 allocations stop.")
	must.StrContains(t, what, "Start registers it again")
	confirmDialog(t, jobTab)
	waitFor(t, jobTab, 30*time.Second, "the job dead", `#job-page h1 [data-status="dead"]`)
	pollPage(t, jobTab, 30*time.Second, "no allocation running", countIs(running, 0))
	job, err = st.JobByID(nil, structs.DefaultNamespace, "web")
	must.NoError(t, err)
	must.True(t, job.Stop, must.Sprint("the job is stopped"))
	stoppedVersion := job.Version

	// Start it again: the same groups, as a new version.
	waitFor(t, jobTab, 20*time.Second, "the start button", `#job-actions button[data-action="start-job"]`)
	must.StrContains(t, openDialog(t, jobTab, `#job-actions button[data-action="start-job"]`), "Start job web in namespace default again")
	confirmDialog(t, jobTab)
	pollPage(t, jobTab, 30*time.Second, "two allocations running again", countIs(running, 2))
	waitFor(t, jobTab, 30*time.Second, "the job running", `#job-page h1 [data-status="running"]`)
	job, err = st.JobByID(nil, structs.DefaultNamespace, "web")
	must.NoError(t, err)
	must.False(t, job.Stop)
	must.Greater(t, stoppedVersion, job.Version)
}

// The servers refuse to scale a group while a deployment of its job runs,
// and the dialog shows their reason rather than closing as if it worked.
func TestUI_BrowserScaleRefusedDuringDeployment(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, nil)
	job := edgeJob()
	job.ID, job.NodePool = "slow", ""
	job.TaskGroups[0].Disconnect = nil
	// Healthy only after half an hour: the deployment stays running.
	job.TaskGroups[0].Update = &structs.UpdateStrategy{
		MaxParallel: 1, HealthCheck: "task_states", MinHealthyTime: 30 * time.Minute,
		HealthyDeadline: time.Hour, ProgressDeadline: 2 * time.Hour,
	}
	job.Canonicalize()
	var reg structs.JobRegisterResponse
	must.NoError(t, a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	wait.Poll(t, 20*time.Second, "the deployment running", func() (bool, string) {
		d, err := a.Server().State().LatestDeploymentByJobID(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		if d == nil {
			return false, "no deployment"
		}
		return d.Status == structs.DeploymentStatusRunning, "deployment " + d.Status
	})

	page := tab(t, b, a.HTTPAddr+"/ui/jobs/slow")
	openDialog(t, page, `#job-actions button[data-action="scale"][data-group="app"]`)
	setValue(t, page, `#action-dialog input[name="count"]`, "2")
	msg := confirmFails(t, page)
	must.StrContains(t, msg, "job scaling blocked due to active deployment")
	must.Eq(t, 1, runningAllocs(t, a, "slow"))
	click(t, page, "#action-dialog .action-cancel")

	// The job page's latest deployment can be failed from there.
	what := openDialog(t, page, `#deployment-actions button[data-action="fail"]`)
	must.StrContains(t, what, "of job slow (version 0): the servers stop it")
	confirmDialog(t, page)
	waitFor(t, page, 30*time.Second, "the deployment failed", `#deployment-actions[data-status="failed"]`)
	d, err := a.Server().State().LatestDeploymentByJobID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, structs.DeploymentStatusFailed, d.Status)
}

// A deployment whose canary is healthy waits for promotion; the
// deployment page promotes it, and the servers go on to replace the old
// version's allocation.
func TestUI_BrowserPromoteDeployment(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, nil)
	st := a.Server().State()
	job := edgeJob()
	job.ID, job.NodePool = "canaried", ""
	job.TaskGroups[0].Disconnect = nil
	job.TaskGroups[0].Update = &structs.UpdateStrategy{
		MaxParallel: 1, Canary: 1, HealthCheck: "task_states", MinHealthyTime: 100 * time.Millisecond,
		HealthyDeadline: time.Minute, ProgressDeadline: 2 * time.Minute,
	}
	job.Canonicalize()
	var reg structs.JobRegisterResponse
	must.NoError(t, a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy()}, &reg))
	wait.Poll(t, 30*time.Second, "version 0 running", func() (bool, string) {
		n := runningAllocs(t, a, job.ID)
		return n == 1, fmt.Sprint(n, " running")
	})
	v1 := job.Copy()
	v1.TaskGroups[0].Tasks[0].Config["run_for"] = "2h"
	must.NoError(t, a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: v1}, &reg))
	var depID string
	wait.Poll(t, 30*time.Second, "the canary healthy, awaiting promotion", func() (bool, string) {
		d, err := st.LatestDeploymentByJobID(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		if d == nil || d.JobVersion != 1 {
			return false, "no deployment of version 1"
		}
		depID = d.ID
		s := d.TaskGroups["app"]
		return d.Status == structs.DeploymentStatusRunning && s.HealthyAllocs >= 1 && !s.Promoted,
			fmt.Sprintf("%s, %d healthy, promoted %v", d.Status, s.HealthyAllocs, s.Promoted)
	})

	page := tab(t, b, a.HTTPAddr+"/ui/deployments/"+depID)
	what := openDialog(t, page, `#deployment-actions button[data-action="promote"]`)
	must.StrContains(t, what, "Promote the canaries of every group of deployment "+depID[:8]+" of job canaried (version 1) (app: 1 of 1 canaries placed, 1 healthy)")
	confirmDialog(t, page)
	wait.Poll(t, 30*time.Second, "the deployment promoted", func() (bool, string) {
		d, err := st.DeploymentByID(nil, depID)
		must.NoError(t, err)
		return d.TaskGroups["app"].Promoted, "deployment " + d.Status
	})
	waitFor(t, page, 30*time.Second, "the promote button gone once promoted", `#deployment-page:not(:has(button[data-action="promote"]))`)
}

// The node page drains a node and toggles its eligibility: a batch
// allocation keeps the drain going (batch work is left to its deadline),
// so the page shows the node draining until the drain is stopped.
func TestUI_BrowserNodeDrainAndEligibility(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, nil)
	st := a.Server().State()
	nodeID := a.Client().NodeID()
	job := edgeJob()
	job.ID, job.Type, job.NodePool = "hold", structs.JobTypeBatch, ""
	job.TaskGroups[0].Disconnect = nil
	job.Canonicalize()
	var reg structs.JobRegisterResponse
	must.NoError(t, a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	wait.Poll(t, 20*time.Second, "the batch allocation running", func() (bool, string) {
		n := runningAllocs(t, a, "hold")
		return n == 1, fmt.Sprint(n, " running")
	})
	node := func() *structs.Node {
		n, err := st.NodeByID(nil, nodeID)
		must.NoError(t, err)
		return n
	}

	page := tab(t, b, a.HTTPAddr+"/ui/clients/"+nodeID)
	elig := `#node-actions button[data-action="eligibility"]`
	waitFor(t, page, 20*time.Second, "the eligibility button", elig+`[data-to="ineligible"]`)
	must.StrContains(t, openDialog(t, page, elig), "the scheduler places no new allocations on it; its 1 allocation keep running")
	confirmDialog(t, page)
	waitFor(t, page, 20*time.Second, "the node ineligible", elig+`[data-to="eligible"]`)
	waitFor(t, page, 5*time.Second, "the page saying so", `#node-page [data-eligibility="ineligible"]`)
	must.Eq(t, structs.NodeSchedulingIneligible, node().SchedulingEligibility)

	openDialog(t, page, elig)
	confirmDialog(t, page)
	waitFor(t, page, 20*time.Second, "the node eligible again", elig+`[data-to="ineligible"]`)
	must.Eq(t, structs.NodeSchedulingEligible, node().SchedulingEligibility)

	what := openDialog(t, page, `#node-actions button[data-action="drain"]`)
	must.StrContains(t, what, "its 1 allocation migrate to other nodes, those still here after 1h being stopped")
	confirmDialog(t, page)
	waitFor(t, page, 20*time.Second, "the node draining", `#node-actions button[data-action="drain-disable"]`)
	waitFor(t, page, 5*time.Second, "the page saying so", `#node-page [data-drain="true"][data-eligibility="ineligible"]`)
	n := node()
	must.NotNil(t, n.DrainStrategy, must.Sprint("the servers drain the node"))
	must.Eq(t, time.Hour, n.DrainStrategy.Deadline)
	must.Eq(t, structs.NodeSchedulingIneligible, n.SchedulingEligibility)

	openDialog(t, page, `#node-actions button[data-action="drain-disable"]`)
	confirmDialog(t, page)
	waitFor(t, page, 20*time.Second, "the drain stopped", `#node-actions button[data-action="drain"]`)
	waitFor(t, page, 20*time.Second, "the node eligible after the drain", elig+`[data-to="ineligible"]`)
	n = node()
	must.Nil(t, n.DrainStrategy)
	must.Eq(t, structs.NodeSchedulingEligible, n.SchedulingEligibility)
}

// With ACLs on, a read-only token sees the buttons, and confirming shows
// the API's refusal (403, the capability it lacks) in the dialog without
// changing anything; the management token then stops the job.
func TestUI_BrowserActionsACL(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.ACL = &agent.ACLConfig{Enabled: true}
	})
	anon, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr})
	must.NoError(t, err)
	mgmt, _, err := anon.ACLTokens().Bootstrap(nil)
	must.NoError(t, err)
	authed, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr, SecretID: mgmt.SecretID})
	must.NoError(t, err)
	_, err = authed.ACLPolicies().Upsert(&nomadapi.ACLPolicy{
		Name:  "readonly",
		Rules: `namespace "default" { policy = "read" }` + "\n" + `node { policy = "read" }`,
	}, nil)
	must.NoError(t, err)
	reader, _, err := authed.ACLTokens().Create(&nomadapi.ACLToken{Name: "reader", Type: "client", Policies: []string{"readonly"}}, nil)
	must.NoError(t, err)
	job := nomadapi.NewServiceJob("acl-web", "acl-web", "global", 50)
	job.AddTaskGroup(nomadapi.NewTaskGroup("web", 1).AddTask(
		nomadapi.NewTask("web", "mock_driver").SetConfig("run_for", "5m")))
	_, _, err = authed.Jobs().Register(job, nil)
	must.NoError(t, err)

	page := tab(t, b, a.HTTPAddr+"/ui/jobs")
	setToken(t, page, reader.SecretID)
	must.NoError(t, chromedp.Do(page, chromedp.Navigate(a.HTTPAddr+"/ui/jobs/acl-web")))
	waitFor(t, page, 30*time.Second, "the job running, read with the read-only token", `#job-page tr[data-alloc-id][data-status="running"]`)
	openDialog(t, page, `#job-actions button[data-action="stop-job"]`)
	msg := confirmFails(t, page)
	must.StrContains(t, msg, "403")
	must.StrContains(t, msg, "Permission denied: token lacks submit-job")
	stored, _, err := authed.Jobs().Info("acl-web", nil)
	must.NoError(t, err)
	must.False(t, *stored.Stop, must.Sprint("the refused stop changed nothing"))
	click(t, page, "#action-dialog .action-cancel")

	setToken(t, page, mgmt.SecretID)
	waitFor(t, page, 30*time.Second, "the job page with the management token", `#job-actions button[data-action="stop-job"]`)
	openDialog(t, page, `#job-actions button[data-action="stop-job"]`)
	confirmDialog(t, page)
	waitFor(t, page, 30*time.Second, "the job dead", `#job-page h1 [data-status="dead"]`)
	stored, _, err = authed.Jobs().Info("acl-web", nil)
	must.NoError(t, err)
	must.True(t, *stored.Stop)
}

// dialogScreenshot is screenshot for a page with a modal dialog open: the
// dialog and its backdrop cover the viewport, which a full-page capture
// would cut through, so the viewport alone is saved.
func dialogScreenshot(t *testing.T, page context.Context, name string) {
	t.Helper()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		return
	}
	buf, err := chromedp.Run(page, chromedp.CaptureScreenshot())
	must.NoError(t, err)
	must.NoError(t, os.MkdirAll(dir, 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(dir, name), buf, 0o644))
}

// setToken types secret into the header's token field and sets it (the
// page reloads with it).
func setToken(t *testing.T, page context.Context, secret string) {
	t.Helper()
	must.NoError(t, chromedp.Do(page, chromedp.SetValue(chromedp.CSS("#token-input"), secret)))
	click(t, page, "#token-save")
	pollPage(t, page, 20*time.Second, "the token stored",
		fmt.Sprintf(`window.localStorage.getItem('nomad.token') === %q ? '' : 'stored: ' + window.localStorage.getItem('nomad.token')`, secret))
}

// openDialog clicks the action button at selector and returns what the
// confirmation dialog says will happen.
func openDialog(t *testing.T, page context.Context, selector string) string {
	t.Helper()
	waitFor(t, page, 30*time.Second, "the action button", selector)
	click(t, page, selector)
	pollPage(t, page, 10*time.Second, "the confirmation dialog open",
		`document.querySelector('#action-dialog[open]') ? '' : 'no dialog open'`)
	return textOf(t, page, "#action-dialog .action-what")
}

// confirmDialog confirms the open dialog and waits for it to close, which
// it does once the API accepted the request; a refusal fails the test
// with the API's message.
func confirmDialog(t *testing.T, page context.Context) {
	t.Helper()
	click(t, page, "#action-dialog .action-confirm")
	pollPage(t, page, 30*time.Second, "the action accepted (dialog closed)",
		`(() => { const d = document.getElementById('action-dialog');
		  return d ? 'dialog ' + (d.dataset.state || 'open') + ': ' + d.querySelector('.action-error').textContent : ''; })()`)
}

// confirmFails confirms the open dialog and returns the error it shows.
func confirmFails(t *testing.T, page context.Context) string {
	t.Helper()
	click(t, page, "#action-dialog .action-confirm")
	pollPage(t, page, 30*time.Second, "the action refused",
		`(() => { const d = document.getElementById('action-dialog');
		  return d && d.dataset.state === 'failed' ? '' : (d ? 'dialog ' + (d.dataset.state || 'open') : 'dialog closed: ' + document.getElementById('action-result')?.textContent); })()`)
	return textOf(t, page, "#action-dialog .action-error")
}

// click clicks the element at selector, once there is one: found and
// clicked in the page, in one evaluation, as the page's own handlers
// see a click. chromedp's Click finds the node, then moves the mouse to
// where it was and presses: a page that rendered again in between (an
// event it was sent, or its refetch when its event stream connects)
// had replaced the node ("Could not find node with given id") or moved
// what lies under the mouse, and the click was lost (ci3, ci5).
func click(t *testing.T, page context.Context, selector string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (!el) return false; el.click(); return true; })()`, selector)
	wait.Poll(t, 10*time.Second, "clicking "+selector, func() (bool, string) {
		done, err := chromedp.Run(page, chromedp.Evaluate[bool](js))
		if err != nil {
			return false, err.Error()
		}
		return done, "no element " + selector
	})
}

// setValue sets a form field as typing would, firing its input event.
func setValue(t *testing.T, page context.Context, selector, value string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); if (!el) return 'no %s';
	  el.value = %q; el.dispatchEvent(new Event('input', { bubbles: true })); return ''; })()`, selector, selector, value)
	s, err := chromedp.Run(page, chromedp.Evaluate[string](js))
	must.NoError(t, err)
	must.Eq(t, "", s)
}

// countIs is a pollPage expression: selector matches n elements.
func countIs(selector string, n int) string {
	return fmt.Sprintf(`(() => { const k = document.querySelectorAll(%q).length;
	  return k === %d ? '' : k + ' match; page shows:\n' + document.getElementById('app').innerText; })()`, selector, n)
}

// runningAllocIDs are the IDs of the job's allocations that run and are
// meant to.
func runningAllocIDs(t *testing.T, a *agenttest.Agent, jobID string) []string {
	t.Helper()
	var ids []string
	for _, al := range runningAllocsOf(t, a, structs.DefaultNamespace, jobID) {
		ids = append(ids, al.ID)
	}
	return ids
}

func runningAllocs(t *testing.T, a *agenttest.Agent, jobID string) int {
	t.Helper()
	return len(runningAllocIDs(t, a, jobID))
}

// A click lands on a page that is rendering the element again: chromedp's
// Click, which finds the node and clicks it after, failed there 4 times
// in 5 ("Could not find node with given id"); click does both at once. The page
// replaces its button every millisecond for its first half second, then
// leaves it, and counts the clicks; the first click is sent into that.
func TestUI_ClickOnAnElementRenderedAgain(t *testing.T) {
	b := browser(t)
	page := tab(t, b, `data:text/html,<body><span id="b"></span><script>
	  window.clicks = 0;
	  const button = () => { const n = document.createElement('button'); n.id = 'b'; n.textContent = 'b';
	    n.onclick = () => { window.clicks++; }; document.getElementById('b').replaceWith(n); };
	  button();
	  const until = Date.now() + 500;
	  const churn = setInterval(() => { if (Date.now() > until) { clearInterval(churn); } button(); }, 1);
	</script></body>`)
	click(t, page, "#b")
	pollPage(t, page, 5*time.Second, "the click counted",
		`window.clicks > 0 ? '' : 'clicks: ' + window.clicks`)
}
