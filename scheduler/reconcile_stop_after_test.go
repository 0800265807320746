package scheduler

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// stopAfterJob returns a service job of count 3 whose group's client stops
// its allocations after stop, with two tasks whose largest kill_timeout is
// 20s: a replacement is due 20s after stop past the loss.
func stopAfterJob(stop time.Duration) *structs.Job {
	job := mock.Job()
	tg := job.TaskGroups[0]
	tg.Count = 3
	tg.Disconnect = &structs.DisconnectStrategy{StopOnClientAfter: &stop}
	tg.Tasks[0].KillTimeout = 10 * time.Second
	side := tg.Tasks[0].Copy()
	side.Name = "side"
	side.KillTimeout = 20 * time.Second
	tg.Tasks = append(tg.Tasks, side)
	return job
}

// lostAt makes a lost by the servers at t: desired stop, client status lost,
// with the follow-up evaluation evalID recorded on it.
func lostAt(a *structs.Allocation, node *structs.Node, t time.Time, evalID string) {
	a.NodeID = node.ID
	a.DesiredStatus = structs.AllocDesiredStatusStop
	a.DesiredDescription = structs.AllocLost
	a.ClientStatus = structs.AllocClientStatusLost
	a.FollowupEvalID = evalID
	a.ModifyTime = t.UnixNano()
}

// "stop_on_client_after" (docs/concepts/disconnected-clients.md) on the
// servers' side: the allocations of a group whose client stops
// them after stop_on_client_after are lost like any other when their node
// goes away, but their replacement waits until the client has surely
// stopped them (lost + stop_on_client_after + the largest kill_timeout), so
// that two copies never run at once. Each case is one rule.
func TestReconcile_StopOnClientAfter(t *testing.T) {
	down := nodeWithStatus(structs.NodeStatusDown)
	tainted := map[string]*structs.Node{down.ID: down}
	due := testNow.Add(time.Minute + 20*time.Second)

	cases := []struct {
		name  string
		setup func() ReconcilerInput
		want  summary
		check func(t *testing.T, in ReconcilerInput, r flatResults)
	}{
		{
			name: "lost on a down node: stopped as lost now, replacement waits for a follow-up",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				allocs[1].NodeID = down.ID
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: tainted, EvalID: "node-eval", EvalPriority: 50}
			},
			want: summary{stop: 1, followups: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				e := followups(r)[0]
				must.Eq(t, structs.EvalTriggerRetryFailedAlloc, e.TriggeredBy)
				must.Eq(t, due, e.WaitUntil, must.Sprint("lost + stop_on_client_after + largest kill_timeout"))
				must.Eq(t, "node-eval", e.PreviousEval)
				s := r.Stop[0]
				must.Eq(t, in.Allocs[1].ID, s.alloc.ID)
				must.Eq(t, structs.AllocClientStatusLost, s.clientStatus)
				must.Eq(t, structs.AllocLost, s.statusDescription)
				must.Eq(t, e.ID, s.followupEvalID)
				du := r.DesiredTGUpdates["web"]
				must.Eq(t, uint64(0), du.Place)
				must.Eq(t, uint64(1), du.RescheduleLater)
			},
		},
		{
			name: "the legacy spelling, on a disconnected node and pending, waits too",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				legacy := time.Minute
				job.TaskGroups[0].Disconnect = nil
				job.TaskGroups[0].StopAfterClientDisconnect = &legacy
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				disc := nodeWithStatus(structs.NodeStatusDisconnected)
				allocs[0].NodeID = disc.ID
				allocs[0].ClientStatus = structs.AllocClientStatusPending
				allocs[2].NodeID = disc.ID
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: map[string]*structs.Node{disc.ID: disc}}
			},
			// A pending allocation may have started on a client whose
			// report never arrived: it waits like a running one.
			want: summary{stop: 2, followups: 1},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, due, followups(r)[0].WaitUntil)
				must.Eq(t, r.Stop[0].followupEvalID, r.Stop[1].followupEvalID, must.Sprint("one evaluation for both"))
			},
		},
		{
			name: "an unset kill_timeout counts as the client's default",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				job.TaskGroups[0].Tasks = job.TaskGroups[0].Tasks[:1]
				job.TaskGroups[0].Tasks[0].KillTimeout = 0
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				allocs[0].NodeID = down.ID
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: tainted}
			},
			want: summary{stop: 1, followups: 1},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, testNow.Add(time.Minute+structs.DefaultKillTimeout), followups(r)[0].WaitUntil)
			},
		},
		{
			name: "even a wait shorter than the reschedule window gets its follow-up",
			setup: func() ReconcilerInput {
				job := stopAfterJob(500 * time.Millisecond)
				job.TaskGroups[0].Tasks = job.TaskGroups[0].Tasks[:1]
				job.TaskGroups[0].Tasks[0].KillTimeout = 400 * time.Millisecond
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				allocs[0].NodeID = down.ID
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: tainted}
			},
			want: summary{stop: 1, followups: 1},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, testNow.Add(900*time.Millisecond), followups(r)[0].WaitUntil)
			},
		},
		{
			// Its own follow-up may have been canceled in favour of this
			// evaluation: a spare one is made for its time.
			name: "before its time a lost allocation holds its place: nothing placed, a spare follow-up",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				lostAt(allocs[1], down, testNow.Add(-30*time.Second), "followup-1")
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: tainted, EvalID: "other-eval"}
			},
			want: summary{followups: 1},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, due.Add(-30*time.Second), followups(r)[0].WaitUntil)
				must.Eq(t, uint64(3), r.DesiredTGUpdates["web"].Ignore)
				must.Eq(t, uint64(0), r.DesiredTGUpdates["web"].Place)
			},
		},
		{
			name: "scaling up while one waits places new names, not the waiting one's",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				lostAt(allocs[1], down, testNow.Add(-30*time.Second), "followup-1")
				job.TaskGroups[0].Count = 5
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: tainted}
			},
			want: summary{place: 2, followups: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				must.Eq(t, []string{structs.AllocName(in.Job.ID, "web", 3), structs.AllocName(in.Job.ID, "web", 4)}, placeNames(r))
			},
		},
		{
			name: "at lost + stop + kill it is replaced under its name, as its successor",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				lostAt(allocs[1], down, testNow.Add(-80*time.Second), "followup-1")
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: tainted, EvalID: "other-eval"}
			},
			want: summary{place: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				p := r.Place[0]
				must.Eq(t, in.Allocs[1].ID, p.previousAlloc.ID)
				must.Eq(t, in.Allocs[1].Name, p.name)
				must.False(t, p.stopPrevious, must.Sprint("already stopped"))
				must.Eq(t, uint64(1), r.DesiredTGUpdates["web"].Place)
			},
		},
		{
			name: "a moment before its time it still waits",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				lostAt(allocs[1], down, testNow.Add(-80*time.Second+time.Millisecond), "followup-1")
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: tainted, EvalID: "other-eval"}
			},
			want: summary{followups: 1},
		},
		{
			name: "its own follow-up places it even when the clocks say a moment early",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				// The plan that made it lost landed 3s after the
				// scheduler's now that timed the follow-up.
				lostAt(allocs[1], down, testNow.Add(-77*time.Second), "followup-1")
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: tainted, EvalID: "followup-1"}
			},
			want: summary{place: 1},
		},
		{
			name: "a client that came back and reported every task dead is replaced at once",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				lostAt(allocs[1], down, testNow.Add(-10*time.Second), "followup-1")
				allocs[1].TaskStates = map[string]*structs.TaskState{
					"web": {State: structs.TaskStateDead}, "side": {State: structs.TaskStateDead},
				}
				return ReconcilerInput{Job: job, Allocs: allocs, EvalID: "reconnect-eval"}
			},
			want: summary{place: 1},
		},
		{
			name: "one task still running keeps it waiting",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				lostAt(allocs[1], down, testNow.Add(-10*time.Second), "followup-1")
				allocs[1].TaskStates = map[string]*structs.TaskState{
					"web": {State: structs.TaskStateDead}, "side": {State: structs.TaskStateRunning},
				}
				return ReconcilerInput{Job: job, Allocs: allocs}
			},
			want: summary{followups: 1},
		},
		{
			name: "already replaced: its successor counts, nothing more",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				lostAt(allocs[1], down, testNow.Add(-time.Hour), "followup-1")
				repl := allocsFor(job, 2, structs.AllocClientStatusRunning)[1]
				repl.PreviousAllocation = allocs[1].ID
				allocs[1].NextAllocation = repl.ID
				return ReconcilerInput{Job: job, Allocs: append(allocs, repl), TaintedNodes: tainted}
			},
			want: summary{},
		},
		{
			name: "lost without a follow-up (by an earlier version) gets one",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				lostAt(allocs[1], down, testNow.Add(-10*time.Second), "")
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: tainted}
			},
			want: summary{followups: 1},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, due.Add(-10*time.Second), followups(r)[0].WaitUntil)
			},
		},
		{
			name: "the allocation's own job version decides, not the newest",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				allocs[1].NodeID = down.ID
				newer := job.Copy()
				newer.Version++
				newer.JobModifyIndex++
				newer.TaskGroups[0].Disconnect = nil
				return ReconcilerInput{Job: newer, Allocs: allocs, TaintedNodes: tainted}
			},
			want: summary{stop: 1, followups: 1, inplace: 2},
		},
		{
			name: "a stopped job places nothing and waits for nothing",
			setup: func() ReconcilerInput {
				job := stopAfterJob(time.Minute)
				allocs := allocsFor(job, 3, structs.AllocClientStatusRunning)
				lostAt(allocs[1], down, testNow.Add(-30*time.Second), "followup-1")
				job = job.Copy()
				job.Stop = true
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: tainted}
			},
			want: summary{stop: 2},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.setup()
			if in.Now.IsZero() {
				in.Now = testNow
			}
			r := reconcileChecked(t, in)
			must.Eq(t, tc.want, summarize(r))
			if tc.check != nil {
				tc.check(t, in, r)
			}
		})
	}
}
