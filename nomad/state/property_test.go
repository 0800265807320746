package state

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var allClientStatuses = []string{
	structs.AllocClientStatusPending,
	structs.AllocClientStatusRunning,
	structs.AllocClientStatusComplete,
	structs.AllocClientStatusFailed,
	structs.AllocClientStatusLost,
	structs.AllocClientStatusUnknown,
}

// After any sequence of placements, client reports, unknown markings, lost
// and plain stops and queue updates, in any order:
//
//   - every group's counts equal a recount of the allocations table, so a
//     dashboard never shows an allocation twice or not at all;
//   - each allocation's client status is what a simple model of the
//     ownership rules predicts (terminal statuses are final);
//   - unknown is never terminal: an unknown allocation that is still
//     desired-run is among its node's live allocations and keeps its job
//     running.
func TestProperty_SummaryMatchesRecount(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := testStateStore(t)
		job := mock.Job()
		job.TaskGroups = append(job.TaskGroups, job.TaskGroups[0].Copy())
		job.TaskGroups[1].Name = "cache"
		groups := []string{"web", "cache"}
		nodes := []string{"n1", "n2", "n3"}
		must.NoError(t, s.UpsertJob(1, 0, job))

		index := uint64(1)
		next := func() uint64 { index++; return index }
		model := map[string]string{} // alloc ID → expected client status
		stopped := map[string]bool{} // alloc ID → desired stop
		var allocIDs []string

		steps := rapid.IntRange(1, 40).Draw(t, "steps")
		for range steps {
			action := rapid.SampledFrom([]string{"place", "client", "unknown", "lost", "stop", "queue"}).Draw(t, "action")
			if len(allocIDs) == 0 && action != "queue" {
				action = "place"
			}
			switch action {
			case "place":
				a := mock.Alloc()
				a.Job, a.JobID = nil, job.ID
				a.TaskGroup = rapid.SampledFrom(groups).Draw(t, "group")
				a.NodeID = rapid.SampledFrom(nodes).Draw(t, "node")
				a.ClientStatus = structs.AllocClientStatusPending
				must.NoError(t, s.UpsertPlanResults(next(), &structs.ApplyPlanResultsRequest{
					Job: job, AllocsUpdated: []*structs.Allocation{a}, UpdatedAt: int64(index),
				}))
				allocIDs = append(allocIDs, a.ID)
				model[a.ID] = structs.AllocClientStatusPending

			case "client":
				id := rapid.SampledFrom(allocIDs).Draw(t, "alloc")
				status := rapid.SampledFrom(allClientStatuses).Draw(t, "status")
				must.NoError(t, s.UpdateAllocsFromClient(next(), []*structs.Allocation{clientUpdate(id, status)}))
				if modelClientMayChange(model[id], stopped[id], status) {
					model[id] = status
				}

			case "unknown":
				id := rapid.SampledFrom(allocIDs).Draw(t, "alloc")
				u := allocByID(t, s, id).CopySkipJob()
				u.ClientStatus = structs.AllocClientStatusUnknown
				u.AppendState(structs.AllocStateFieldClientStatus, u.ClientStatus, time.Unix(int64(index), 0))
				must.NoError(t, s.UpsertPlanResults(next(), &structs.ApplyPlanResultsRequest{
					Job: job, AllocsUpdated: []*structs.Allocation{u}, UpdatedAt: int64(index),
				}))
				if modelServerMayChange(model[id], structs.AllocClientStatusUnknown) {
					model[id] = structs.AllocClientStatusUnknown
				}

			case "lost", "stop":
				id := rapid.SampledFrom(allocIDs).Draw(t, "alloc")
				plan := &structs.Plan{}
				clientStatus := ""
				if action == "lost" {
					clientStatus = structs.AllocClientStatusLost
					if modelServerMayChange(model[id], clientStatus) {
						model[id] = clientStatus
					}
				}
				stopped[id] = true
				plan.AppendStoppedAlloc(allocByID(t, s, id), structs.AllocNotNeeded, clientStatus, "")
				var stops []*structs.Allocation
				for _, st := range plan.NodeUpdate {
					stops = append(stops, st...)
				}
				must.NoError(t, s.UpsertPlanResults(next(), &structs.ApplyPlanResultsRequest{
					Job: job, AllocsStopped: stops, UpdatedAt: int64(index),
				}))

			case "queue":
				e := evalFor(job, structs.EvalStatusComplete)
				e.QueuedAllocations = map[string]int{
					rapid.SampledFrom(groups).Draw(t, "group"): rapid.IntRange(0, 5).Draw(t, "queued"),
				}
				must.NoError(t, s.UpsertEvals(next(), []*structs.Evaluation{e}))
			}
			checkSummaryInvariants(t, s, job, model)
		}
	})
}

func checkSummaryInvariants(t *rapid.T, s *StateStore, job *structs.Job, model map[string]string) {
	allocs := drain[*structs.Allocation](t, mustIter(s.Allocs(nil)))
	recount := map[string]structs.TaskGroupSummary{}
	liveUnknown := false
	for _, a := range allocs {
		must.Eq(t, model[a.ID], a.ClientStatus, must.Sprintf("alloc %s", a.ID))
		tg := recount[a.TaskGroup]
		increment(statusCount(&tg, a.ClientStatus))
		recount[a.TaskGroup] = tg

		if a.ClientStatus == structs.AllocClientStatusUnknown && !a.ServerTerminalStatus() {
			liveUnknown = true
			must.False(t, a.TerminalStatus())
			live, err := s.AllocsByNodeTerminal(nil, a.NodeID, false)
			must.NoError(t, err)
			must.SliceContains(t, ids(live), a.ID, must.Sprint("unknown allocation missing from its node's live allocations"))
		}
	}

	sum, err := s.JobSummaryByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	for _, tg := range job.TaskGroups {
		got := sum.Summary[tg.Name]
		must.NonNegative(t, got.Queued)
		got.Queued = 0
		must.Eq(t, recount[tg.Name], got, must.Sprintf("group %s", tg.Name))
	}
	if liveUnknown {
		must.Eq(t, structs.JobStatusRunning, jobStatus(t, s, job))
	}
}

// The ownership rules themselves: a server write changes the client status
// only to lost or unknown, never out of a terminal one.
func TestServerClientStatusRules(t *testing.T) {
	for _, current := range allClientStatuses {
		for _, incoming := range allClientStatuses {
			got, _ := serverClientStatus(
				&structs.Allocation{ClientStatus: current},
				&structs.Allocation{ClientStatus: incoming},
			)
			want := current
			if (incoming == structs.AllocClientStatusLost || incoming == structs.AllocClientStatusUnknown) &&
				modelServerMayChange(current, incoming) {
				want = incoming
			}
			must.Eq(t, want, got, must.Sprintf("%s ← %s", current, incoming))
		}
	}
}

// The client's side of the rules, for allocations told to run and to stop:
// its report is recorded unless it would revive an allocation the servers
// are done with (docs/concepts/disconnected-clients.md, "Reconnect": lost, or
// unknown and stopped, take only complete
// or failed).
func TestClientStatusRules(t *testing.T) {
	for _, desired := range []string{structs.AllocDesiredStatusRun, structs.AllocDesiredStatusStop} {
		for _, current := range allClientStatuses {
			for _, next := range allClientStatuses {
				existing := &structs.Allocation{ClientStatus: current, DesiredStatus: desired}
				want := modelClientMayChange(current, desired != structs.AllocDesiredStatusRun, next)
				must.Eq(t, want, clientStatusMayChange(existing, next), must.Sprintf("%s/%s ← %s", desired, current, next))
			}
		}
	}
}

// modelServerMayChange is the test's own statement of the server's rule:
// lost and unknown are written over a status that is not terminal.
func modelServerMayChange(current, next string) bool {
	switch current {
	case structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost:
		return current == next
	}
	return true
}

// modelClientMayChange is the test's own statement of the client's rule:
// an allocation the servers gave up on (lost, or unknown and stopped) takes
// only complete or failed; complete and failed change only between
// themselves (and to lost, which no real client may send); the rest take
// anything.
func modelClientMayChange(current string, stopped bool, next string) bool {
	final := next == structs.AllocClientStatusComplete || next == structs.AllocClientStatusFailed
	switch {
	case current == structs.AllocClientStatusLost:
		return final
	case current == structs.AllocClientStatusUnknown && stopped:
		return final
	case current == structs.AllocClientStatusComplete || current == structs.AllocClientStatusFailed:
		return final || next == structs.AllocClientStatusLost
	}
	return true
}
