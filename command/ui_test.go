package command

import (
	"errors"
	"runtime"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// uiCmd returns a `nomad ui` whose browser launches are recorded in
// opened; fail makes every launch fail as on a host without a desktop.
func uiCmd(opened *[]string, fail bool) func(Meta) cli.Command {
	return func(m Meta) cli.Command {
		return &UiCommand{Meta: m, Open: func(u string) error {
			if fail {
				return errors.New("xdg-open: no method available")
			}
			*opened = append(*opened, u)
			return nil
		}}
	}
}

// `nomad ui` opens the UI's home page, or the page of the job,
// allocation or node an ID (or unique prefix) names; -show-url only
// prints it; with no browser to start it prints the URL and succeeds.
func TestUiCommand(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	code, out, errOut := run(t, a, jobRun, writeJob(t, "web", "mock_driver", `run_for = "5m"`))
	must.Eq(t, 0, code, must.Sprint(out, errOut))
	alloc := waitRunning(t, a, "web", 1)[0]

	var opened []string
	code, out, errOut = run(t, a, uiCmd(&opened, false))
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.Eq(t, []string{a.HTTPAddr + "/ui/"}, opened)
	must.StrContains(t, out, `Opening URL "`+a.HTTPAddr+`/ui/"`)

	for arg, want := range map[string]string{
		"web":            a.HTTPAddr + "/ui/jobs/web",
		alloc.ID[:6]:     a.HTTPAddr + "/ui/allocations/" + alloc.ID,
		alloc.NodeID[:6]: a.HTTPAddr + "/ui/clients/" + alloc.NodeID,
		alloc.NodeID:     a.HTTPAddr + "/ui/clients/" + alloc.NodeID,
	} {
		opened = nil
		code, _, errOut = run(t, a, uiCmd(&opened, false), arg)
		must.Eq(t, 0, code, must.Sprint(arg, errOut))
		must.Eq(t, []string{want}, opened, must.Sprint(arg))
	}

	opened = nil
	code, out, _ = run(t, a, uiCmd(&opened, false), "-show-url", "web")
	must.Eq(t, 0, code)
	must.Eq(t, "URL for web UI: "+a.HTTPAddr+"/ui/jobs/web\n", out)
	must.SliceEmpty(t, opened)

	code, out, _ = run(t, a, uiCmd(&opened, true), "web")
	must.Eq(t, 0, code)
	must.StrContains(t, out, "Could not open a browser")
	must.StrContains(t, out, a.HTTPAddr+"/ui/jobs/web")

	code, _, errOut = run(t, a, uiCmd(&opened, false), "zz-nothing")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, `No job, allocation or node with ID or prefix "zz-nothing" found`)

	code, _, errOut = run(t, a, uiCmd(&opened, false), "a", "b")
	must.Eq(t, 1, code)
	must.StrContains(t, errOut, "at most one argument")
}

// On a host without a display (a server reached over SSH) the real
// opener starts nothing; the command prints the URL and succeeds.
func TestUiCommand_NoDisplay(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("the display check is for X11 and Wayland hosts")
	}
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.Client.Enabled = false })
	code, out, errOut := run(t, a, func(m Meta) cli.Command { return &UiCommand{Meta: m} })
	must.Eq(t, 0, code, must.Sprint(errOut))
	must.StrContains(t, out, "Could not open a browser (no display")
	must.StrContains(t, out, a.HTTPAddr+"/ui/")
}
