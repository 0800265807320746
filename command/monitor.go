package command

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/cli"

	"github.com/nomad-edge/nomad/api"
)

// Exit codes of a monitored evaluation, as upstream's: 2 tells scripts the
// job was accepted but could not (fully) be scheduled.
const (
	exitOK             = 0
	exitError          = 1
	exitPlacementError = 2
)

// monitorWait bounds each blocking query on the evaluation, so that a
// monitor notices a lost agent within this time.
const monitorWait = 10 * time.Second

// evalMonitor follows one evaluation to its end, printing what happens
// to it and to the allocations it creates.
type evalMonitor struct {
	ui     cli.Ui
	client *api.Client
	length int
	now    func() time.Time

	status  string            // last status seen
	allocs  map[string]string // alloc ID → last client status seen
	started bool
}

func newEvalMonitor(ui cli.Ui, client *api.Client, v view) *evalMonitor {
	return &evalMonitor{
		ui:     ui,
		client: client,
		length: v.idLength(),
		now:    time.Now,
		// Every evaluation is created pending; reporting the first status
		// we see as a change from pending tells the user what happened even
		// when the scheduler finished before our first look.
		status: api.EvalStatusPending,
		allocs: map[string]string{},
	}
}

func (m *evalMonitor) stamp() string { return formatTime(m.now()) }

func (m *evalMonitor) info(format string, args ...any) {
	m.ui.Info(fmt.Sprintf("    %s: %s", m.stamp(), fmt.Sprintf(format, args...)))
}

// monitor follows evalID and returns the exit code: 0 when the evaluation
// completed and placed everything, 2 when it failed or could not place
// some allocations, 1 on errors.
func (m *evalMonitor) monitor(evalID string) int {
	m.ui.Info(fmt.Sprintf("==> %s: Monitoring evaluation %q", m.stamp(), limit(evalID, m.length)))
	var index uint64
	for {
		eval, meta, err := m.client.Evaluations().Info(evalID, &api.QueryOptions{WaitIndex: index, WaitTime: monitorWait})
		if err != nil {
			var ure *api.UnexpectedResponseError
			if errors.As(err, &ure) && ure.IsNotFound() {
				m.ui.Error(fmt.Sprintf("No evaluation with id %q found", evalID))
			} else {
				m.ui.Error(fmt.Sprintf("Error reading evaluation: %v", err))
			}
			return exitError
		}
		index = meta.LastIndex
		m.update(eval)
		if terminalEval(eval.Status) {
			return m.finish(eval)
		}
	}
}

// update prints what changed since the last look.
func (m *evalMonitor) update(eval *api.Evaluation) {
	if !m.started {
		m.started = true
		switch {
		case eval.NodeID != "":
			m.info("Evaluation triggered by node %q", limit(eval.NodeID, m.length))
		case eval.JobID != "":
			m.info("Evaluation triggered by job %q", eval.JobID)
		}
	}
	m.updateAllocs(eval)
	if eval.Status != m.status {
		m.info("Evaluation status changed: %q -> %q", m.status, eval.Status)
		m.status = eval.Status
	}
}

// updateAllocs reports allocations the evaluation created or modified and
// their client status changes.
func (m *evalMonitor) updateAllocs(eval *api.Evaluation) {
	evalID := eval.ID
	allocs, _, err := m.client.Evaluations().Allocations(evalID, nil)
	if err != nil {
		m.ui.Error(fmt.Sprintf("Error reading allocations of evaluation %q: %v", limit(evalID, m.length), err))
		return
	}
	// Oldest first, so creations read in the order they happened.
	for i := len(allocs) - 1; i >= 0; i-- {
		a := allocs[i]
		last, seen := m.allocs[a.ID]
		m.allocs[a.ID] = a.ClientStatus
		switch {
		case !seen && a.CreateIndex < eval.CreateIndex:
			// An existing allocation this evaluation updated in place.
			m.info("Allocation %q modified: node %q, group %q", limit(a.ID, m.length), limit(a.NodeID, m.length), a.TaskGroup)
		case !seen:
			m.info("Allocation %q created: node %q, group %q", limit(a.ID, m.length), limit(a.NodeID, m.length), a.TaskGroup)
		case last != a.ClientStatus:
			desc := a.ClientDescription
			if desc == "" {
				desc = "no description"
			}
			m.info("Allocation %q status changed: %q -> %q (%s)", limit(a.ID, m.length), last, a.ClientStatus, desc)
		}
	}
}

// finish prints the outcome of a terminal evaluation.
func (m *evalMonitor) finish(eval *api.Evaluation) int {
	short := limit(eval.ID, m.length)
	if len(eval.FailedTGAllocs) == 0 {
		m.ui.Info(fmt.Sprintf("==> %s: Evaluation %q finished with status %q", m.stamp(), short, eval.Status))
		if eval.Status != api.EvalStatusComplete {
			if eval.StatusDescription != "" {
				m.ui.Error(fmt.Sprintf("Evaluation %q: %s", short, eval.StatusDescription))
			}
			return exitPlacementError
		}
		return exitOK
	}
	m.ui.Info(fmt.Sprintf("==> %s: Evaluation %q finished with status %q but failed to place all allocations:",
		m.stamp(), short, eval.Status))
	m.ui.Info(formatPlacementFailures(eval.FailedTGAllocs, "    "+m.stamp()+": ", "      "))
	if eval.BlockedEval != "" {
		m.info("Evaluation %q waiting for additional capacity to place remainder", limit(eval.BlockedEval, m.length))
	}
	return exitPlacementError
}

func terminalEval(status string) bool {
	switch status {
	case api.EvalStatusComplete, api.EvalStatusFailed, api.EvalStatusCancelled:
		return true
	}
	return false
}
