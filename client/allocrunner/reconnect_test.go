package allocrunner

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// newDisconnect decides when a runner reports a return (Reconnected event
// and the true state): once per disconnect, including the second and later
// ones of the same allocation, whose earlier unknown copy the client still
// holds because its own reports do not move AllocModifyIndex.
func TestNewDisconnect(t *testing.T) {
	t1, t2 := time.Unix(100, 0), time.Unix(200, 0)
	alloc := func(status string, unknownAt ...time.Time) *structs.Allocation {
		a := &structs.Allocation{ClientStatus: status}
		for _, at := range unknownAt {
			a.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, at)
		}
		return a
	}
	running, unknown := structs.AllocClientStatusRunning, structs.AllocClientStatusUnknown
	cases := []struct {
		name      string
		old, next *structs.Allocation
		want      bool
	}{
		{"first disconnect", alloc(running), alloc(unknown, t1), true},
		{"the server changes it again before the report", alloc(unknown, t1), alloc(unknown, t1), false},
		{"a second disconnect", alloc(unknown, t1), alloc(unknown, t1, t2), true},
		{"not unknown", alloc(unknown, t1), alloc(running, t1), false},
		{"unknown without a history, from a running copy", alloc(running), alloc(unknown), true},
		{"unknown without a history, from an unknown copy", alloc(unknown), alloc(unknown), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.Eq(t, tc.want, newDisconnect(tc.old, tc.next))
		})
	}
}
