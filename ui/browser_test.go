package ui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/chromedp/chromedp"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
)

// screenshotsEnv names a directory; when set, the browser test saves the
// job and node pages there (the docs' images come from it).
const screenshotsEnv = "NOMAD_UI_SCREENSHOTS"

// findChromium returns the browser the test drives: $NOMAD_UI_CHROMIUM,
// or Debian's chromium (or another Chrome) on the PATH.
func findChromium() string {
	if p := os.Getenv("NOMAD_UI_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser starts a headless Chromium for the test and returns a context
// for its first tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := findChromium()
	if path == "" {
		t.Skip("no chromium binary found (apt-get install chromium, or set NOMAD_UI_CHROMIUM): the UI browser test cannot run")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancel)
	must.NoError(t, chromedp.Do(ctx), must.Sprint("starting chromium at ", path))
	return ctx
}

// tab opens url in a new tab of the browser. The test fails at its end if
// the page threw an uncaught exception (an unhandled rejection included)
// or logged with console.error: a page that breaks in a way its DOM does
// not show is still broken.
func tab(t *testing.T, browser context.Context, url string) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	messages := chromedp.Console(ctx) // subscribed before the page loads, so nothing is missed
	var mu sync.Mutex
	var jsErrors []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			// The browser's own log (Source set: a refused request the
			// ACL test provokes) is not the page's error.
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source == "") {
				mu.Lock()
				jsErrors = append(jsErrors, m.String())
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range jsErrors {
			t.Errorf("JavaScript error on %s: %s", url, e)
		}
	})
	must.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url)), must.Sprint("opening ", url))
	return ctx
}

// waitFor waits until selector matches an element of the tab's page, the
// page updating itself (no reload): a DOM condition polled with a
// deadline, failing with what the page last showed.
func waitFor(t *testing.T, tab context.Context, within time.Duration, what, selector string) {
	t.Helper()
	probe := fmt.Sprintf(`document.querySelector(%q) ? "" : "page shows:\n" + document.getElementById("app").innerText`, selector)
	pollPage(t, tab, within, fmt.Sprintf("%s (%s)", what, selector), probe)
}

// pollPage waits until the JavaScript expression js evaluates to "" on
// the page; otherwise it says what the page shows, printed on timeout.
// The one DOM poll of these tests.
func pollPage(t *testing.T, page context.Context, within time.Duration, what, js string) {
	t.Helper()
	wait.Poll(t, within, what, func() (bool, string) {
		seen, err := chromedp.Run(page, chromedp.Evaluate[string](js))
		if err != nil {
			return false, err.Error()
		}
		return seen == "", lastLines(seen, 40)
	})
}

// textOf is the text of the element at selector, once there is one. It
// is read in the page, in one evaluation: chromedp's Text finds the node
// first and reads it after, and a page that rendered again in between
// (when its event stream connects) gave an empty text or no node at all.
func textOf(t *testing.T, tab context.Context, selector string) string {
	t.Helper()
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); return el ? [true, el.innerText] : [false, ''] })()`, selector)
	var text string
	wait.Poll(t, 10*time.Second, "reading "+selector, func() (bool, string) {
		got, err := chromedp.Run(tab, chromedp.Evaluate[[]any](js))
		if err != nil {
			return false, err.Error()
		}
		if len(got) != 2 || got[0] != true {
			return false, "no element " + selector
		}
		text, _ = got[1].(string)
		return true, ""
	})
	return text
}

func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	dir := os.Getenv(screenshotsEnv)
	if dir == "" {
		return
	}
	buf, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	must.NoError(t, err)
	must.NoError(t, os.MkdirAll(dir, 0o755))
	must.NoError(t, os.WriteFile(filepath.Join(dir, name), buf, 0o644))
}

// The UI in a real browser: a job page and a node page, opened while the
// edge client is connected, turn by themselves (from the event stream)
// to show the node disconnected and its allocation unknown when the
// client's link is cut, with the time the node was last heard from, and
// back to ready and running when it heals.
func TestUI_BrowserShowsDisconnect(t *testing.T) {
	b := browser(t)
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Client.Enabled = false
		c.Server.MinHeartbeatTTL = 300 * time.Millisecond
		c.Server.HeartbeatGrace = 300 * time.Millisecond
	})
	link := testutil.NewFaultableRPC(a.Server())
	dir := t.TempDir()
	cl, err := client.NewClient(&client.Config{
		RPCHandler: link, StateDir: dir, AllocDir: dir + "/alloc", NodeName: "edge-1", NodePool: "edge",
	})
	must.NoError(t, err)
	t.Cleanup(func() { _ = cl.Destroy() })
	select {
	case <-cl.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("client did not register within 30s")
	}

	job := edgeJob()
	var reg structs.JobRegisterResponse
	must.NoError(t, a.Server().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	var allocID string
	wait.Poll(t, 20*time.Second, "the allocation running", func() (bool, string) {
		allocs, err := a.Server().State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		if len(allocs) != 1 || allocs[0].ClientStatus != structs.AllocClientStatusRunning {
			return false, fmt.Sprint(len(allocs), " allocs")
		}
		allocID = allocs[0].ID
		return true, ""
	})

	row := fmt.Sprintf(`tr[data-alloc-id=%q]`, allocID)
	jobTab := tab(t, b, a.HTTPAddr+"/ui/jobs/"+job.ID)
	waitFor(t, jobTab, 20*time.Second, "the running allocation on the job page", row+`[data-status="running"]`)
	waitFor(t, jobTab, 20*time.Second, "the event stream followed", `#live[data-state="live"]`)
	must.StrContains(t, textOf(t, jobTab, `tr[data-group="app"]`), "app")

	nodeTab := tab(t, b, a.HTTPAddr+"/ui/clients/"+cl.NodeID())
	waitFor(t, nodeTab, 20*time.Second, "the ready node page", `#node-page[data-status="ready"]`)
	waitFor(t, nodeTab, 20*time.Second, "the event stream followed", `#live[data-state="live"]`)
	waitFor(t, nodeTab, 20*time.Second, "the node's allocation", row+`[data-status="running"]`)

	link.Cut(fault.Reset)
	waitFor(t, nodeTab, 30*time.Second, "the node disconnected", `#node-page[data-status="disconnected"] [data-node-status="disconnected"]`)
	waitFor(t, nodeTab, 30*time.Second, "the allocation unknown on the node page", row+`[data-status="unknown"]`)
	waitFor(t, jobTab, 30*time.Second, "the allocation unknown on the job page", row+`[data-status="unknown"] [data-node-heard="disconnected"]`)
	waitFor(t, jobTab, 30*time.Second, "the group's Unknown count", `tr[data-group="app"] td.count-unknown[data-col="Unknown"]`)
	must.StrContains(t, textOf(t, jobTab, row), "last heard from before")
	must.StrContains(t, textOf(t, nodeTab, "h1"), "for ")

	// The list pages show the same.
	listTab := tab(t, b, a.HTTPAddr+"/ui/clients")
	waitFor(t, listTab, 20*time.Second, "the node disconnected in the list", fmt.Sprintf(`tr[data-node-id=%q][data-status="disconnected"]`, cl.NodeID()))
	jobsTab := tab(t, b, a.HTTPAddr+"/ui/")
	waitFor(t, jobsTab, 20*time.Second, "the unknown count in the jobs list", fmt.Sprintf(`tr[data-job=%q] td.count-unknown[data-col="Unknown"]`, job.ID))

	screenshot(t, jobTab, "ui-job-disconnected.png")
	screenshot(t, nodeTab, "ui-node-disconnected.png")
	screenshot(t, jobsTab, "ui-jobs.png")
	screenshot(t, listTab, "ui-clients.png")

	link.Heal()
	waitFor(t, nodeTab, 30*time.Second, "the node ready again", `#node-page[data-status="ready"]`)
	waitFor(t, nodeTab, 30*time.Second, "the allocation running on the node page", row+`[data-status="running"]`)
	waitFor(t, jobTab, 30*time.Second, "the allocation running on the job page", row+`[data-status="running"]`)
	waitFor(t, listTab, 30*time.Second, "the node ready in the list", fmt.Sprintf(`tr[data-node-id=%q][data-status="ready"]`, cl.NodeID()))

	allocTab := tab(t, b, a.HTTPAddr+"/ui/allocations/"+allocID)
	waitFor(t, allocTab, 20*time.Second, "the allocation page", fmt.Sprintf(`#alloc-page[data-alloc-id=%q] .task[data-task="app"]`, allocID))
	must.StrContains(t, textOf(t, allocTab, `.task[data-task="app"]`), "Started")
	screenshot(t, allocTab, "ui-allocation.png")

	missing := tab(t, b, a.HTTPAddr+"/ui/jobs/no-such-job")
	waitFor(t, missing, 20*time.Second, "the page of a job that does not exist", "#error-page")
	must.StrContains(t, textOf(t, missing, "#error-page"), "Nothing by that ID")
}

// edgeJob is one mock task in a group that may stay disconnected for an
// hour, keeping its original on reconnect.
func edgeJob() *structs.Job {
	replace := false
	job := &structs.Job{
		ID: "edge-app", Datacenters: []string{"dc1"}, NodePool: "edge",
		TaskGroups: []*structs.TaskGroup{{
			Name: "app", Count: 1,
			Disconnect: &structs.DisconnectStrategy{
				LostAfter: time.Hour, Replace: &replace, Reconcile: structs.ReconcileOptionKeepOriginal,
			},
			Tasks: []*structs.Task{{
				Name: "app", Driver: "mock_driver",
				Config:    map[string]any{"run_for": "1h"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// waitForText waits until the text of the element selector contains
// want, the page updating itself: waitFor for what an attribute cannot
// say (a log line), failing with the element's last text.
func waitForText(t *testing.T, tab context.Context, within time.Duration, what, selector, want string) {
	t.Helper()
	probe := fmt.Sprintf(`(() => { const el = document.querySelector(%q);
	  if (!el) return "(no element)\npage shows:\n" + document.getElementById("app").innerText;
	  return el.innerText.includes(%q) ? "" : el.innerText; })()`, selector, want)
	pollPage(t, tab, within, fmt.Sprintf("%s (%q in %s)", what, want, selector), probe)
}

// lastLines is the end of s, for a failure message about a long text.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
