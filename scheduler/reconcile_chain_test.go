package scheduler

import (
	"math/rand"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// chainInput: a group of one; O and R1 came back (reported running after
// being unknown), R2 runs; each on its own ready node.
func chainInput(strategy string) (ReconcilerInput, []*structs.Allocation) {
	job := withWindow(mock.Job(), time.Hour)
	job.TaskGroups[0].Count = 1
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Reconcile: strategy}
	members := allocsFor(job, 3, structs.AllocClientStatusRunning)
	for i, a := range members {
		a.Name = members[0].Name
		a.CreateIndex = uint64(100 + i)
		if i > 0 {
			a.PreviousAllocation = members[i-1].ID
			members[i-1].NextAllocation = a.ID
		}
	}
	for _, a := range members[:2] {
		a.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: testNow.Add(-10 * time.Minute)}}
	}
	return ReconcilerInput{Job: job, Allocs: append([]*structs.Allocation(nil), members...), Now: testNow}, members
}

// Two members of a chain back in one evaluation are compared with each
// other and with the running one: exactly one survives, the same whatever
// the order the allocations are listed in (the seed's answer depended on
// it).
func TestReconcile_ChainMembersBackTogether(t *testing.T) {
	for strategy, survivor := range map[string]int{
		structs.ReconcileOptionKeepOriginal:    0,
		structs.ReconcileOptionKeepReplacement: 2,
		structs.ReconcileOptionBestScore:       0, // equal scores keep the oldest
	} {
		t.Run(strategy, func(t *testing.T) {
			in, members := chainInput(strategy)
			rng := rand.New(rand.NewSource(1))
			for range 20 {
				rng.Shuffle(len(in.Allocs), func(i, j int) { in.Allocs[i], in.Allocs[j] = in.Allocs[j], in.Allocs[i] })
				r := reconcileChecked(t, in)
				must.Len(t, 2, r.Stop)
				must.SliceEmpty(t, r.Place)
				stopped := map[string]string{}
				for _, s := range r.Stop {
					stopped[s.alloc.ID] = s.statusDescription
				}
				for i, a := range members {
					if i == survivor {
						must.MapNotContainsKey(t, stopped, a.ID)
						continue
					}
					want := structs.AllocNotNeeded // came back and lost
					if i == 2 {
						want = structs.AllocReconnected // a replacement that lost
					}
					must.Eq(t, want, stopped[a.ID])
				}
				if survivor < 2 {
					must.MapContainsKey(t, r.ReconnectUpdates, members[survivor].ID)
				}
			}
		})
	}
}

// The chain's middle member still unknown while the original returns: it
// takes no part, is not stopped, and does not count, so the running copy
// the comparison keeps is not stopped as excess (the seed's bug).
func TestReconcile_ChainMiddleStillUnknown(t *testing.T) {
	in, m := chainInput(structs.ReconcileOptionKeepOriginal)
	node := nodeWithStatus(structs.NodeStatusDisconnected)
	unknownSinceT(m[1], node, testNow.Add(-5*time.Minute))
	in.TaintedNodes = map[string]*structs.Node{node.ID: node}

	r := reconcileChecked(t, in)
	must.Eq(t, summary{stop: 1, reconnect: 1}, summarize(r))
	must.Eq(t, m[2].ID, r.Stop[0].alloc.ID)
	must.Eq(t, structs.AllocReconnected, r.Stop[0].statusDescription)

	// The next evaluation, with O kept: R1 still waits, nothing changes.
	kept := r.ReconnectUpdates[m[0].ID]
	m2 := m[2].Copy()
	m2.DesiredStatus = structs.AllocDesiredStatusStop
	in.Allocs = []*structs.Allocation{kept, m[1], m2}
	must.Eq(t, summary{}, summarize(reconcileChecked(t, in)))
}

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

// A reconnecting original older than the current job loses to a
// replacement of the current version whatever the strategy says.
func TestReconcile_OlderOriginalLosesToNewerReplacement(t *testing.T) {
	in, o, rep := reconnectFixture(structs.ReconcileOptionKeepOriginal)
	newer := in.Job.Copy()
	newer.Version++
	newer.JobModifyIndex++
	rep.Job = newer
	in.Job = newer

	r := reconcileChecked(t, in)
	must.Eq(t, summary{stop: 1}, summarize(r))
	must.Eq(t, o.ID, r.Stop[0].alloc.ID)
	must.Eq(t, structs.AllocNotNeeded, r.Stop[0].statusDescription)
}

// alloc stop of an unknown allocation that nothing replaces yet: stopped
// at once, as an operator's stop, and a replacement asked for that does
// not hold the stop back (see docs/concepts/disconnected-clients.md, "Operator actions").
func TestReconcile_AllocStopUnknown(t *testing.T) {
	job := withWindow(mock.Job(), time.Hour)
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Replace: new(bool)}
	allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
	node := nodeWithStatus(structs.NodeStatusDisconnected)
	unknownSinceT(allocs[0], node, testNow.Add(-10*time.Minute))
	yes := true
	allocs[0].DesiredTransition.Migrate = &yes

	r := reconcileChecked(t, ReconcilerInput{Job: job, Allocs: allocs, Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}})
	must.Eq(t, summary{stop: 1, place: 1}, summarize(r))
	must.Eq(t, allocs[0].ID, r.Stop[0].alloc.ID)
	must.Eq(t, structs.AllocStopped, r.Stop[0].statusDescription)
	must.Eq(t, "", r.Stop[0].clientStatus, must.Sprint("stays unknown until its client reports"))
	p := r.Place[0]
	must.Eq(t, allocs[0].Name, p.name)
	must.Eq(t, allocs[0].ID, p.previousAlloc.ID)
	must.False(t, p.stopPrevious)
	must.False(t, p.keepPrevious)
}
