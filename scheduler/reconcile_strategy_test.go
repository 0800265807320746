package scheduler

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Every strategy of "Reconnect" (docs/concepts/disconnected-clients.md), pairwise: a newer job version always wins
// (either way), best_score needs a strictly higher score and the
// replacement running or the original not, longest_running keeps the
// earlier start and falls back to best_score when neither started.
func TestReplacementWins(t *testing.T) {
	type side struct {
		version uint64
		score   float64
		status  string
		started time.Duration // before testNow; 0 = not started
	}
	run := structs.AllocClientStatusRunning
	pend := structs.AllocClientStatusPending
	cases := []struct {
		name     string
		strategy string
		o, rep   side
		want     bool
	}{
		{"best_score: higher and running wins", structs.ReconcileOptionBestScore, side{0, 0.2, run, 0}, side{0, 0.5, run, 0}, true},
		{"best_score: higher but pending loses to a running original", structs.ReconcileOptionBestScore, side{0, 0.2, run, 0}, side{0, 0.5, pend, 0}, false},
		{"best_score: higher and pending wins over a pending original", structs.ReconcileOptionBestScore, side{0, 0.2, pend, 0}, side{0, 0.5, pend, 0}, true},
		{"best_score: higher and running wins over a pending original", structs.ReconcileOptionBestScore, side{0, 0.2, pend, 0}, side{0, 0.5, run, 0}, true},
		{"best_score: lower loses even running", structs.ReconcileOptionBestScore, side{0, 0.5, pend, 0}, side{0, 0.2, run, 0}, false},
		{"best_score: a tie keeps the original", structs.ReconcileOptionBestScore, side{0, 0.5, run, 0}, side{0, 0.5, run, 0}, false},
		{"keep_original", structs.ReconcileOptionKeepOriginal, side{0, 0.1, run, 0}, side{0, 0.9, run, 0}, false},
		{"keep_replacement", structs.ReconcileOptionKeepReplacement, side{0, 0.9, run, 0}, side{0, 0.1, run, 0}, true},
		{"longest_running: the original started first", structs.ReconcileOptionLongestRunning, side{0, 0.1, run, 2 * time.Hour}, side{0, 0.9, run, time.Hour}, false},
		{"longest_running: the original restarted later", structs.ReconcileOptionLongestRunning, side{0, 0.9, run, time.Minute}, side{0, 0.1, run, time.Hour}, true},
		{"longest_running: only the replacement started", structs.ReconcileOptionLongestRunning, side{0, 0.9, pend, 0}, side{0, 0.1, run, time.Hour}, true},
		{"longest_running: only the original started", structs.ReconcileOptionLongestRunning, side{0, 0.1, run, time.Hour}, side{0, 0.9, pend, 0}, false},
		{"longest_running: neither started, best_score decides", structs.ReconcileOptionLongestRunning, side{0, 0.1, pend, 0}, side{0, 0.9, pend, 0}, true},
		{"a newer replacement wins under keep_original", structs.ReconcileOptionKeepOriginal, side{0, 0.9, run, 0}, side{1, 0.1, pend, 0}, true},
		{"a newer original wins under keep_replacement", structs.ReconcileOptionKeepReplacement, side{1, 0.1, pend, 0}, side{0, 0.9, run, 0}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mk := func(s side) *structs.Allocation {
				job := mock.Job()
				job.Version = s.version
				job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Reconcile: tc.strategy}
				a := allocsFor(job, 1, s.status)[0]
				a.Metrics.ScoreMetaData = []*structs.NodeScoreMeta{{NodeID: a.NodeID, NormScore: s.score}}
				if s.started > 0 {
					a.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: testNow.Add(-s.started)}}
				}
				return a
			}
			must.Eq(t, tc.want, replacementWins(mk(tc.o), mk(tc.rep)))
		})
	}
}
