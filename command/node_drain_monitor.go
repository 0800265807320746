package command

import (
	"fmt"
	"time"

	"github.com/hashicorp/cli"

	"github.com/nomad-edge/nomad/api"
)

// drainMonitorWait is how long one blocking read of the node waits; the
// node's allocations are read after each, so their changes show at most
// this late.
const drainMonitorWait = time.Second

// drainMonitor follows a node's drain until it ends, printing each
// allocation's move as it happens.
type drainMonitor struct {
	ui     cli.Ui
	client *api.Client
	now    func() time.Time
	seen   map[string]string
}

func newDrainMonitor(ui cli.Ui, client *api.Client) *drainMonitor {
	return &drainMonitor{ui: ui, client: client, now: time.Now, seen: map[string]string{}}
}

func (m *drainMonitor) say(format string, args ...any) {
	m.ui.Output(fmt.Sprintf("%s: %s", formatTime(m.now()), fmt.Sprintf(format, args...)))
}

// monitor returns once the node's drain ends: 0 when it completed or was
// canceled, 1 when the node cannot be read.
func (m *drainMonitor) monitor(nodeID string, index uint64) int {
	m.say("Ctrl-C to stop monitoring: will not cancel the node drain")
	for {
		node, qm, err := m.client.Nodes().Info(nodeID, &api.QueryOptions{WaitIndex: index, WaitTime: drainMonitorWait})
		if err != nil {
			m.ui.Error(fmt.Sprintf("Error monitoring node: %v", err))
			return exitError
		}
		index = qm.LastIndex
		if err := m.allocs(nodeID); err != nil {
			m.ui.Error(fmt.Sprintf("Error monitoring allocations: %v", err))
			return exitError
		}
		if node.DrainStrategy != nil {
			continue
		}
		switch {
		case node.LastDrain != nil && node.LastDrain.Status == api.DrainStatusComplete:
			m.say("Node %q drain complete", nodeID)
		case node.LastDrain != nil && node.LastDrain.Status == api.DrainStatusCanceled:
			m.say("Node %q drain canceled", nodeID)
		default:
			m.say("Node %q is not draining", nodeID)
		}
		return exitOK
	}
}

// allocs prints what changed for the node's allocations since the last
// look: marked for migration, stopped by the servers, finished.
func (m *drainMonitor) allocs(nodeID string) error {
	allocs, _, err := m.client.Nodes().Allocations(nodeID, nil)
	if err != nil {
		return err
	}
	for _, a := range allocs {
		state := drainAllocState(a)
		prev, known := m.seen[a.ID]
		m.seen[a.ID] = state
		// What finished before the monitor started is not news.
		if state == prev || (!known && (state == "" || state == "stopped")) {
			continue
		}
		switch state {
		case "marked":
			m.say("Alloc %q marked for migration", a.ID)
		case "stopping":
			m.say("Alloc %q draining", a.ID)
		case "stopped":
			m.say("Alloc %q status %s", a.ID, a.ClientStatus)
		}
	}
	return nil
}

// drainAllocState is where an allocation is in its move off the node.
func drainAllocState(a *api.Allocation) string {
	switch {
	case a.ClientTerminalStatus():
		return "stopped"
	case a.ServerTerminalStatus():
		return "stopping"
	case a.DesiredTransition.Migrate != nil && *a.DesiredTransition.Migrate:
		return "marked"
	}
	return ""
}
