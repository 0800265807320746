package command

import (
	"fmt"

	"github.com/nomad-edge/nomad/api"
)

// formatReconnectDecision is the "Reconnect Decision" section of alloc
// status: which rule kept which copy when the allocation's node (or its
// replacement's) came back, so that either copy answers why it runs or
// not. Empty when the allocation took part in no reconnect.
func formatReconnectDecision(a *api.Allocation, v view) string {
	d := a.ReconnectDecision
	if d == nil {
		return ""
	}
	copyOf := func(id string, score float64) string {
		if id == "" {
			return "<none>"
		}
		s := fmt.Sprintf("%s (placement score %.3f)", v.id(id), score)
		if id == a.ID {
			s += ", this allocation"
		}
		return s
	}
	return "Reconnect Decision\n" + formatKV([]string{
		"Rule|" + d.Rule,
		"Strategy|" + d.Strategy,
		"Kept|" + copyOf(d.KeptAllocID, d.KeptScore),
		"Stopped|" + copyOf(d.StoppedAllocID, d.StoppedScore),
		"Evaluation|" + v.id(d.EvalID),
		"Decided|" + v.age(d.Time),
	})
}
