package command

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/cli"

	"github.com/nomad-edge/nomad/api"
)

// deploymentMonitor follows a deployment to its end, as `nomad job run`
// does after its evaluation: on a terminal the group table is redrawn in
// place; otherwise (a pipe, a CI log) each change is printed as plain
// lines, so the log reads as a history.
type deploymentMonitor struct {
	ui     cli.Ui
	client *api.Client
	v      view
	now    func() time.Time
	// tty, when set, is the terminal the live table is drawn on.
	tty   io.Writer
	drawn int // lines of the live table on the terminal
	last  string
}

func newDeploymentMonitor(ui cli.Ui, client *api.Client, v view) *deploymentMonitor {
	m := &deploymentMonitor{ui: ui, client: client, v: v, now: time.Now}
	if isTerminal(os.Stdout) {
		m.tty = os.Stdout
	}
	return m
}

// followJob follows the deployment of the job version registered at
// jobModifyIndex; without one (no update block, a batch job) it returns
// exitOK at once.
func (m *deploymentMonitor) followJob(jobID string, jobModifyIndex uint64) int {
	d, _, err := m.client.Jobs().LatestDeployment(jobID, nil)
	if err != nil {
		m.ui.Error(fmt.Sprintf("Error fetching deployment: %v", err))
		return exitError
	}
	if d == nil || d.JobSpecModifyIndex != jobModifyIndex {
		return exitOK
	}
	return m.follow(d)
}

// follow watches d with blocking queries until it is terminal. The exit
// code is 0 when it succeeds and 1 when it fails or is cancelled.
func (m *deploymentMonitor) follow(d *api.Deployment) int {
	m.ui.Info(fmt.Sprintf("==> %s: Monitoring deployment %q", formatTime(m.now()), m.v.id(d.ID)))
	var index uint64
	for {
		m.show(d)
		switch d.Status {
		case api.DeploymentStatusSuccessful:
			m.finish(d, "✓")
			return exitOK
		case api.DeploymentStatusFailed, api.DeploymentStatusCancelled:
			m.finish(d, "!")
			return exitError
		}
		next, meta, err := m.client.Deployments().Info(d.ID, &api.QueryOptions{WaitIndex: index, WaitTime: monitorWait})
		if err != nil {
			m.ui.Error(fmt.Sprintf("Error fetching deployment: %v", err))
			return exitError
		}
		index, d = meta.LastIndex, next
	}
}

// show prints the deployment's state when it changed since the last look.
func (m *deploymentMonitor) show(d *api.Deployment) {
	text := fmt.Sprintf("%s: %s\n%s", d.Status, d.StatusDescription, formatDeploymentGroups(d))
	if text == m.last {
		return
	}
	m.last = text
	if m.tty == nil {
		m.ui.Info(fmt.Sprintf("    %s: Deployment %q %s: %s", formatTime(m.now()), m.v.id(d.ID), d.Status, d.StatusDescription))
		m.ui.Info(indent(formatDeploymentGroups(d), "      "))
		return
	}
	// Move up over the previous drawing, clear it, draw again.
	if m.drawn > 0 {
		fmt.Fprintf(m.tty, "\x1b[%dA\x1b[J", m.drawn)
	}
	out := indent(fmt.Sprintf("%s\n%s", formatTime(m.now()), formatDeployment(d, m.v)), "    ") + "\n"
	fmt.Fprint(m.tty, out)
	m.drawn = strings.Count(out, "\n")
}

func (m *deploymentMonitor) finish(d *api.Deployment, mark string) {
	m.ui.Info(fmt.Sprintf("  %s Deployment %q %s", mark, m.v.id(d.ID), d.Status))
	if m.tty == nil {
		m.ui.Info("")
		m.ui.Info(indent(fmt.Sprintf("%s\n%s", formatTime(m.now()), formatDeployment(d, m.v)), "    "))
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
