package structs

import "time"

// StatusAfterMiss is the rule of "Heartbeats and node status"
// (docs/concepts/disconnected-clients.md): a node that missed its
// heartbeat is disconnected while it hosts an allocation desired run that
// is running or unknown, in a group with a lost window that has not run
// out at now; otherwise it is down. For a disconnected node, until is when
// the last such window runs out: then the rule must be applied again.
// Pending, complete and failed allocations never hold a node disconnected.
// It is pure, so that the servers and the client's test double
// (clienttest.FakeServer) apply the one rule.
func StatusAfterMiss(node *Node, allocs []*Allocation, now time.Time) (status string, until time.Time) {
	for _, a := range allocs {
		if a.DesiredStatus != AllocDesiredStatusRun {
			continue
		}
		var end time.Time
		switch a.ClientStatus {
		case AllocClientStatusRunning:
			// Not yet marked unknown by the scheduler: its window runs
			// from the moment the node was found disconnected.
			window := a.DisconnectPolicy().LostAfter
			if window <= 0 {
				continue
			}
			from := now
			if node.Status == NodeStatusDisconnected {
				from = time.Unix(node.StatusUpdatedAt, 0)
			}
			end = from.Add(window)
		case AllocClientStatusUnknown:
			t, ok := a.DisconnectTimeout()
			if !ok {
				continue
			}
			end = t
		default:
			continue
		}
		if now.Before(end) && end.After(until) {
			until = end
		}
	}
	if until.IsZero() {
		return NodeStatusDown, time.Time{}
	}
	return NodeStatusDisconnected, until
}
