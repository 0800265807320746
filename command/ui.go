package command

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// UiCommand is `nomad ui [identifier]`: the web UI in the default
// browser, at the page of a job, allocation or node when one is named.
type UiCommand struct {
	Meta
	// Open launches a browser on a URL; nil uses the platform's opener
	// (xdg-open, open). Tests replace it.
	Open func(url string) error
}

// Synopsis implements cli.Command.
func (c *UiCommand) Synopsis() string { return "Open the Nomad Web UI" }

// Help implements cli.Command.
func (c *UiCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad ui [options] [<identifier>]

  Open the agent's web UI in the default browser. With an identifier, open
  the page of the job of that ID, or else of the allocation or node whose
  ID or unique prefix it is (jobs first, then allocations, then nodes).

  When no browser can be started (on Linux: no DISPLAY or WAYLAND_DISPLAY,
  as over SSH), the URL is printed instead and the command still succeeds.

      $ nomad ui
      $ nomad ui redis
      $ nomad ui -show-url d4005969

  The UI asks for an ACL token in its header when ACLs are enabled; the
  command passes no token to the browser.

` + generalOptions() + `

UI Options:

  -show-url
    Print the URL instead of opening it in a browser.
`)
}

// Run implements cli.Command.
func (c *UiCommand) Run(args []string) int {
	var showURL bool
	flags := c.FlagSet("ui")
	flags.BoolVar(&showURL, "show-url", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() > 1 {
		return c.argsError("This command takes at most one argument: a job, allocation or node ID", "ui")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	page := "/ui/"
	if flags.NArg() == 1 {
		var ok bool
		if page, ok = c.pageOf(client, flags.Arg(0)); !ok {
			return exitError
		}
	}
	u := strings.TrimSuffix(client.Address(), "/") + page
	if showURL {
		c.Ui.Output(fmt.Sprintf("URL for web UI: %s", u))
		return 0
	}
	open := c.Open
	if open == nil {
		open = openBrowser
	}
	if err := open(u); err != nil {
		// Not a failure: the operator may be on a host with no desktop
		// and will paste the URL into a browser elsewhere.
		c.Ui.Output(fmt.Sprintf("Could not open a browser (%v); the web UI is at:\n%s", err, u))
		return 0
	}
	c.Ui.Output(fmt.Sprintf("Opening URL %q", u))
	return 0
}

// pageOf finds the UI page of what id names, saying why not when nothing
// or several things match.
func (c *UiCommand) pageOf(client *api.Client, id string) (string, bool) {
	job, _, err := client.Jobs().Info(id, nil)
	if err == nil {
		p := "/ui/jobs/" + url.PathEscape(deref(job.ID))
		if ns := deref(job.Namespace); ns != "" && ns != "default" {
			p += "?namespace=" + url.QueryEscape(ns)
		}
		return p, true
	}
	if !isNotFound(err) {
		c.Ui.Error(fmt.Sprintf("Error looking up job %q: %v", id, err))
		return "", false
	}
	if len(id) < minPrefixLength {
		c.Ui.Error(fmt.Sprintf("No job with ID %q found, and an allocation or node prefix needs at least %d characters", id, minPrefixLength))
		return "", false
	}
	allocs, _, err := client.Allocations().List(&api.QueryOptions{Prefix: id})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying allocations: %v", err))
		return "", false
	}
	if len(allocs) > 0 {
		a, ok := c.resolveAlloc(client, id, view{now: time.Now()})
		if !ok {
			return "", false
		}
		return "/ui/allocations/" + url.PathEscape(a.ID), true
	}
	nodes, _, err := client.Nodes().List(&api.QueryOptions{Prefix: id})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying nodes: %v", err))
		return "", false
	}
	if len(nodes) > 0 {
		n, ok := c.resolveNode(client, id)
		if !ok {
			return "", false
		}
		return "/ui/clients/" + url.PathEscape(n.ID), true
	}
	c.Ui.Error(fmt.Sprintf("No job, allocation or node with ID or prefix %q found", id))
	return "", false
}

func isNotFound(err error) bool {
	var ure *api.UnexpectedResponseError
	return errors.As(err, &ure) && ure.IsNotFound()
}

// openBrowser starts the platform's URL opener and waits for it: xdg-open
// fails when it finds no browser, which the caller turns into printing
// the URL.
func openBrowser(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		// Over SSH to a server there is no desktop; xdg-open would fall
		// back to a text browser in the operator's terminal.
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no display (DISPLAY and WAYLAND_DISPLAY are unset)")
		}
		cmd = exec.Command("xdg-open", u)
	}
	return cmd.Run()
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
