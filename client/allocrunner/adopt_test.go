package allocrunner

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestAdoptedStart checks which start time a task found running after the
// client lost its state reports: the servers' record when it names the run
// that was found (a derived start is truncated to the kernel's tick and
// would differ), the derived one when the record is of another run or of
// none, so that a re-attached task keeps exactly the StartedAt it had.
func TestAdoptedStart(t *testing.T) {
	recorded := time.Date(2026, 12, 1, 23, 45, 11, 570145255, time.UTC)
	running := func(at time.Time) *structs.TaskState {
		return &structs.TaskState{State: structs.TaskStateRunning, StartedAt: at}
	}
	cases := []struct {
		name  string
		found time.Time
		known *structs.TaskState
		want  time.Time
	}{
		{"no record", recorded.Add(-9 * time.Millisecond), nil, recorded.Add(-9 * time.Millisecond)},
		{"record of a task not running", recorded.Add(-9 * time.Millisecond),
			&structs.TaskState{State: structs.TaskStatePending}, recorded.Add(-9 * time.Millisecond)},
		{"record without a start", recorded, running(time.Time{}), recorded},
		{"the recorded run, truncated to the tick", recorded.Add(-9 * time.Millisecond), running(recorded), recorded},
		{"the recorded run, started slowly", recorded.Add(-20 * time.Second), running(recorded), recorded},
		{"the recorded run, within the clocks' slack", recorded.Add(5 * time.Millisecond), running(recorded), recorded},
		{"a later run than the record", recorded.Add(15 * time.Second), running(recorded), recorded.Add(15 * time.Second)},
		{"a run long before the record", recorded.Add(-2 * time.Hour), running(recorded), recorded.Add(-2 * time.Hour)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			must.True(t, adoptedStart(tc.found, tc.known).Equal(tc.want))
		})
	}
}
