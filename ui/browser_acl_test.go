package ui_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// With ACLs on, the UI says the agent refused an anonymous visitor and
// how to fix it; a token typed into the token field is kept in the
// browser, sent as X-Nomad-Token, and shows the jobs and follows the
// event stream. Clearing it goes back to the refusal.
func TestUI_BrowserACLToken(t *testing.T) {
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
	job := nomadapi.NewServiceJob("acl-web", "acl-web", "global", 50)
	job.AddTaskGroup(nomadapi.NewTaskGroup("web", 1).AddTask(
		nomadapi.NewTask("web", "mock_driver").SetConfig("run_for", "5m")))
	_, _, err = authed.Jobs().Register(job, nil)
	must.NoError(t, err)

	page := tab(t, b, a.HTTPAddr+"/ui/jobs")
	waitFor(t, page, 20*time.Second, "the refusal of an anonymous visitor", "#error-page")
	must.StrContains(t, textOf(t, page, "#error-page"), "403")
	must.StrContains(t, textOf(t, page, "#error-page"), "set an ACL token")

	must.NoError(t, chromedp.Do(page, chromedp.SendKeys(chromedp.CSS("#token-input"), mgmt.SecretID)))
	click(t, page, "#token-save")
	waitFor(t, page, 20*time.Second, "the job listed with the token", `#jobs-page tr[data-job="acl-web"]`)
	waitFor(t, page, 20*time.Second, "the event stream followed with the token", `#live[data-state="live"]`)
	// A link is followed in the page, the token going along.
	click(t, page, `#jobs-page tr[data-job="acl-web"] a`)
	waitFor(t, page, 20*time.Second, "the job page", `#job-page[data-job="acl-web"] tr[data-group="web"]`)
	stored, err := chromedp.Run(page, chromedp.Evaluate[string](`window.localStorage.getItem('nomad.token')`))
	must.NoError(t, err)
	must.Eq(t, mgmt.SecretID, stored)

	click(t, page, "#token-clear")
	waitFor(t, page, 20*time.Second, "the refusal once the token is cleared", "#error-page")
}
