package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// failChain is the crash loop of issue 18: O's node is cut and O becomes
// unknown, its replacement R1 is placed, and R1's task exits. Three ready
// nodes, so a retry has somewhere other than the node R1 failed on.
type failChain struct {
	*chainFixture
	nodes []*structs.Node
}

func newFailChain(t *testing.T, policy *structs.ReschedulePolicy) *failChain {
	t.Helper()
	h := schedtest.NewHarness(t)
	nodes := []*structs.Node{mock.Node(), mock.Node(), mock.Node()}
	h.UpsertNodes(nodes...)
	job := mock.Job()
	tg := job.TaskGroups[0]
	tg.Count = 1
	tg.Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour}
	tg.ReschedulePolicy = policy
	f := &failChain{chainFixture: &chainFixture{h: h, job: h.UpsertJob(job)}, nodes: nodes}
	process(t, h, f.job, structs.EvalTriggerJobRegister)
	setRunning(t, h, f.job)
	f.o = f.only(t, "O placed")
	return f
}

// cutOriginal cuts O's node and runs evaluations until R1 replaces O, as
// the reschedule policy's delay allows; R1 then runs.
func (f *failChain) cutOriginal(t *testing.T) *structs.Allocation {
	t.Helper()
	f.h.SetNodeStatus(f.o.NodeID, structs.NodeStatusDisconnected)
	process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	if f.get(t, f.o.ID).NextAllocation == "" {
		e := f.followup(t, structs.EvalTriggerRetryFailedAlloc)
		must.NotNil(t, e, must.Sprint("a follow-up for O's replacement"))
		f.h.Now = e.WaitUntil
		f.run(t, e)
	}
	o := f.get(t, f.o.ID)
	must.Eq(t, structs.AllocClientStatusUnknown, o.ClientStatus)
	must.NotEq(t, "", o.NextAllocation, must.Sprint("O replaced"))
	f.h.Now = f.h.Now.Add(time.Second)
	setRunning(t, f.h, f.job)
	return f.get(t, o.NextAllocation)
}

// fail has a's client report its task exited with an error, as the server
// then evaluates the job (alloc-failure).
func (f *failChain) fail(t *testing.T, a *structs.Allocation) {
	t.Helper()
	f.h.Now = f.h.Now.Add(10 * time.Second)
	u := f.get(t, a.ID).Copy()
	u.ClientStatus = structs.AllocClientStatusFailed
	u.TaskStates = map[string]*structs.TaskState{"web": {
		State: structs.TaskStateDead, Failed: true, StartedAt: f.h.Now.Add(-10 * time.Second), FinishedAt: f.h.Now,
	}}
	must.NoError(t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), []*structs.Allocation{u}))
	process(t, f.h, f.job, structs.EvalTriggerRetryFailedAlloc)
}

func (f *failChain) run(t *testing.T, e *structs.Evaluation) {
	t.Helper()
	must.NoError(t, f.h.Process(scheduler.NewServiceScheduler, e))
	must.Eq(t, structs.EvalStatusComplete, f.h.LastEval().Status)
}

// followup returns the newest follow-up evaluation with the trigger that
// the scheduler created, or nil.
func (f *failChain) followup(t *testing.T, trigger string) *structs.Evaluation {
	t.Helper()
	for i := len(f.h.CreateEvals) - 1; i >= 0; i-- {
		if e := f.h.CreateEvals[i]; e.TriggeredBy == trigger && !e.WaitUntil.IsZero() {
			return e
		}
	}
	return nil
}

// A failed replacement of an unknown original is rescheduled by the
// group's reschedule policy, as any failed allocation: after the delay the
// policy gives (through an alloc-failure follow-up with WaitUntil), on a
// node other than the one it failed on, as the successor of the failed one
// with the tracker carried along the chain (O → R1 → R2), and never once
// the attempts are used up; the failed one is never stopped as not needed
// and O is never replaced afresh beside it. The seed stopped R1 as not
// needed and replaced O again on the same node, in a loop.
func TestServiceSched_FailedReplacementOfUnknownFollowsReschedulePolicy(t *testing.T) {
	f := newFailChain(t, &structs.ReschedulePolicy{
		Attempts: 3, Interval: time.Hour, Delay: 30 * time.Second, DelayFunction: structs.DelayFunctionExponential, MaxDelay: time.Hour,
	})
	r1 := f.cutOriginal(t)
	must.Eq(t, f.o.ID, r1.PreviousAllocation)
	must.Len(t, 1, r1.RescheduleTracker.Events)

	chain := []*structs.Allocation{f.o, r1}
	for attempt := 2; attempt <= 3; attempt++ {
		prev := chain[len(chain)-1]
		plans := f.placed()
		f.fail(t, prev)
		must.Eq(t, plans, f.placed(), must.Sprintf("attempt %d: nothing before the delay:%s", attempt, describeAllocs(f.h.JobAllocs(f.job))))
		failed := f.get(t, prev.ID)
		must.Eq(t, structs.AllocDesiredStatusRun, failed.DesiredStatus, must.Sprintf("%q", failed.DesiredDescription))
		o := f.get(t, f.o.ID)
		must.Eq(t, structs.AllocDesiredStatusRun, o.DesiredStatus)
		must.Eq(t, r1.ID, o.NextAllocation, must.Sprint("O is not replaced afresh"))

		// The delay doubles with each attempt of the chain: 30 s, 60 s, 120 s.
		e := f.followup(t, structs.EvalTriggerRetryFailedAlloc)
		must.NotNil(t, e)
		wantDelay := 30 * time.Second << (attempt - 1)
		must.Eq(t, f.h.Now.Add(wantDelay), e.WaitUntil, must.Sprintf("attempt %d", attempt))
		must.Eq(t, e.ID, failed.FollowupEvalID)

		f.h.Now = e.WaitUntil
		f.run(t, e)
		must.Eq(t, plans+1, f.placed(), must.Sprintf("attempt %d:%s", attempt, describeAllocs(f.h.JobAllocs(f.job))))
		failed = f.get(t, prev.ID)
		must.Eq(t, structs.AllocDesiredStatusStop, failed.DesiredStatus)
		must.Eq(t, structs.AllocRescheduled, failed.DesiredDescription)
		next := f.get(t, failed.NextAllocation)
		must.Eq(t, prev.ID, next.PreviousAllocation)
		must.Eq(t, f.o.Name, next.Name)
		must.Len(t, attempt, next.RescheduleTracker.Events)
		for i, ev := range next.RescheduleTracker.Events {
			must.Eq(t, chain[i].ID, ev.PrevAllocID)
			must.Eq(t, chain[i].NodeID, ev.PrevNodeID)
		}
		must.Eq(t, wantDelay, next.RescheduleTracker.Events[attempt-1].Delay)
		if attempt == 3 {
			// Three nodes: R3 can avoid only the cut one; R1's and R2's
			// are penalised alike.
			must.NotEq(t, f.o.NodeID, next.NodeID)
		} else {
			for _, c := range chain {
				must.NotEq(t, c.NodeID, next.NodeID, must.Sprintf("attempt %d placed where the chain failed or is cut", attempt))
			}
		}
		f.h.Now = f.h.Now.Add(time.Second)
		setRunning(t, f.h, f.job)
		chain = append(chain, next)
	}

	// R3 fails too: the three attempts of the hour are used up.
	plans, evals := f.placed(), len(f.h.CreateEvals)
	f.fail(t, chain[len(chain)-1])
	f.h.Now = f.h.Now.Add(10 * time.Minute)
	process(t, f.h, f.job, structs.EvalTriggerRetryFailedAlloc)
	must.Eq(t, plans, f.placed(), must.Sprint(describeAllocs(f.h.JobAllocs(f.job))))
	must.Eq(t, evals, len(f.h.CreateEvals), must.Sprint("no follow-up once the attempts are used up"))
	must.Eq(t, structs.AllocDesiredStatusRun, f.get(t, chain[len(chain)-1].ID).DesiredStatus)
}

// With attempts = 1 in an hour, R1 used the only attempt: when it fails
// nothing more is placed, in that evaluation or any later one within the
// interval, nothing is stopped, and O keeps waiting for its node (the
// issue's cluster placed a second replacement at once).
func TestServiceSched_FailedReplacementOfUnknownAttemptsUsedUp(t *testing.T) {
	f := newFailChain(t, &structs.ReschedulePolicy{
		Attempts: 1, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant,
	})
	r1 := f.cutOriginal(t)
	placed := f.placed()
	f.fail(t, r1)
	for _, d := range []time.Duration{0, 30 * time.Second, 5 * time.Minute, 20 * time.Minute} {
		f.h.Now = f.h.Now.Add(d)
		process(t, f.h, f.job, structs.EvalTriggerRetryFailedAlloc)
		process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
		must.Eq(t, placed, f.placed(), must.Sprintf("after %s:%s", d, describeAllocs(f.h.JobAllocs(f.job))))
		for _, a := range f.h.JobAllocs(f.job) {
			must.Eq(t, structs.AllocDesiredStatusRun, a.DesiredStatus, must.Sprintf("%.8s %q", a.ID, a.DesiredDescription))
		}
	}
	must.Eq(t, structs.AllocClientStatusUnknown, f.get(t, f.o.ID).ClientStatus)
	must.Eq(t, r1.ID, f.get(t, f.o.ID).NextAllocation)
}

// reportBack brings O's node back and has its client report O running, as
// after a partition heals, then runs the reconnect evaluation.
func (f *failChain) reportBack(t *testing.T) {
	t.Helper()
	f.reconnect(t, f.o)
}

// O returns while its replacement R1 has failed with its attempts used up:
// O is kept and R1, still desired run, gives way as a replacement does
// (alloc not needed due to disconnected client reconnect, with a decision
// record naming the rule), never as "not needed due to job update"; nothing
// new is placed. The seed stopped R1 as a scale-down excess.
func TestServiceSched_ReconnectOverFailedReplacement(t *testing.T) {
	f := newFailChain(t, &structs.ReschedulePolicy{
		Attempts: 1, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant,
	})
	r1 := f.cutOriginal(t)
	f.fail(t, r1)
	placed := f.placed()

	f.reportBack(t)
	must.Eq(t, placed, f.placed())
	o := f.get(t, f.o.ID)
	must.Eq(t, structs.AllocDesiredStatusRun, o.DesiredStatus)
	must.Eq(t, structs.AllocClientStatusRunning, o.ClientStatus)
	must.False(t, o.NeedsToReconnect())
	got := f.get(t, r1.ID)
	must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	must.Eq(t, structs.AllocReconnected, got.DesiredDescription)
	must.Eq(t, structs.AllocClientStatusFailed, got.ClientStatus)
	must.NotNil(t, got.ReconnectDecision)
	must.Eq(t, structs.ReconnectRuleFailedReplacement, got.ReconnectDecision.Rule)
	must.Eq(t, o.ID, got.ReconnectDecision.KeptAllocID)
	must.Eq(t, o.ID, f.only(t, "O alone").ID)
}

// The reconnect rules of "Reconnect" hold when a member of the chain failed
// rather than disconnected: O → R1 (failed, rescheduled) → R2 running; O
// returns and is compared with R2, the live member, by the strategy, while
// R1, already stopped, takes no part; nothing new is placed.
func TestServiceSched_ReconnectChainWithFailedMember(t *testing.T) {
	for strategy, wantO := range map[string]bool{
		structs.ReconcileOptionKeepOriginal:    true,
		structs.ReconcileOptionKeepReplacement: false,
	} {
		t.Run(strategy, func(t *testing.T) {
			f := newFailChain(t, &structs.ReschedulePolicy{
				Attempts: 2, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant,
			})
			f.job.TaskGroups[0].Disconnect.Reconcile = strategy
			f.job = f.h.UpsertJob(f.job.Copy())
			r1 := f.cutOriginal(t)
			f.fail(t, r1)
			e := f.followup(t, structs.EvalTriggerRetryFailedAlloc)
			f.h.Now = e.WaitUntil
			f.run(t, e)
			r2 := f.get(t, f.get(t, r1.ID).NextAllocation)
			f.h.Now = f.h.Now.Add(time.Second)
			setRunning(t, f.h, f.job)
			placed := f.placed()

			f.reportBack(t)
			must.Eq(t, placed, f.placed())
			survivor := f.only(t, "one survivor"+describeAllocs(f.h.JobAllocs(f.job)))
			got1 := f.get(t, r1.ID)
			must.Eq(t, structs.AllocRescheduled, got1.DesiredDescription, must.Sprint("R1 untouched"))
			if wantO {
				must.Eq(t, f.o.ID, survivor.ID)
				must.Eq(t, structs.AllocReconnected, f.get(t, r2.ID).DesiredDescription)
			} else {
				must.Eq(t, r2.ID, survivor.ID)
				must.Eq(t, structs.AllocNotNeeded, f.get(t, f.o.ID).DesiredDescription)
			}
		})
	}
}

// placeReplacement cuts O's node and runs evaluations until R1 replaces O;
// R1 is left pending, as before its client starts it.
func (f *failChain) placeReplacement(t *testing.T) *structs.Allocation {
	t.Helper()
	f.h.SetNodeStatus(f.o.NodeID, structs.NodeStatusDisconnected)
	process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	if f.get(t, f.o.ID).NextAllocation == "" {
		e := f.followup(t, structs.EvalTriggerRetryFailedAlloc)
		must.NotNil(t, e)
		f.h.Now = e.WaitUntil
		f.run(t, e)
	}
	return f.get(t, f.get(t, f.o.ID).NextAllocation)
}

// A replacement lost before it started (its node dropped while it was
// pending) is rescheduled by the policy like a failed one (see
// docs/concepts/disconnected-clients.md, "A replacement that fails"): after
// the delay, through a follow-up recorded on the lost one, as its
// successor with the tracker carried (O → R1 → R2). The seed replaced O
// afresh at once, naming O again and counting no attempt.
func TestServiceSched_LostReplacementOfUnknownFollowsReschedulePolicy(t *testing.T) {
	f := newFailChain(t, &structs.ReschedulePolicy{
		Attempts: 2, Interval: time.Hour, Delay: 30 * time.Second, DelayFunction: structs.DelayFunctionConstant,
	})
	r1 := f.placeReplacement(t)
	placed := f.placed()
	f.h.Now = f.h.Now.Add(5 * time.Second)
	f.h.SetNodeStatus(r1.NodeID, structs.NodeStatusDisconnected)
	process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)

	lost := f.get(t, r1.ID)
	must.Eq(t, structs.AllocClientStatusLost, lost.ClientStatus)
	must.Eq(t, placed, f.placed(), must.Sprintf("nothing before the delay:%s", describeAllocs(f.h.JobAllocs(f.job))))
	e := f.followup(t, structs.EvalTriggerRetryFailedAlloc)
	must.NotNil(t, e)
	must.Eq(t, f.h.Now.Add(30*time.Second), e.WaitUntil)
	must.Eq(t, e.ID, lost.FollowupEvalID)

	// Another evaluation meanwhile neither places nor replaces O afresh.
	f.h.Now = f.h.Now.Add(10 * time.Second)
	process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	must.Eq(t, placed, f.placed())

	f.h.Now = e.WaitUntil
	f.run(t, e)
	must.Eq(t, placed+1, f.placed(), must.Sprint(describeAllocs(f.h.JobAllocs(f.job))))
	r2 := f.get(t, f.get(t, r1.ID).NextAllocation)
	must.Eq(t, r1.ID, r2.PreviousAllocation)
	must.Len(t, 2, r2.RescheduleTracker.Events)
	must.Eq(t, r1.ID, r2.RescheduleTracker.Events[1].PrevAllocID)
	must.Eq(t, r1.ID, f.get(t, f.o.ID).NextAllocation, must.Sprint("O is not replaced afresh"))
	must.Eq(t, structs.AllocDesiredStatusRun, f.get(t, f.o.ID).DesiredStatus)
}

// With the only attempt used by R1, R1's loss places nothing: O, still
// unknown, stands for the instance again until it returns or expires.
func TestServiceSched_LostReplacementOfUnknownAttemptsUsedUp(t *testing.T) {
	f := newFailChain(t, &structs.ReschedulePolicy{
		Attempts: 1, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant,
	})
	r1 := f.placeReplacement(t)
	placed := f.placed()
	f.h.SetNodeStatus(r1.NodeID, structs.NodeStatusDisconnected)
	for range 3 {
		process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
		process(t, f.h, f.job, structs.EvalTriggerRetryFailedAlloc)
		f.h.Now = f.h.Now.Add(5 * time.Minute)
	}
	must.Eq(t, placed, f.placed(), must.Sprint(describeAllocs(f.h.JobAllocs(f.job))))
	must.Eq(t, structs.AllocClientStatusLost, f.get(t, r1.ID).ClientStatus)
	o := f.get(t, f.o.ID)
	must.Eq(t, structs.AllocDesiredStatusRun, o.DesiredStatus)
	must.Eq(t, structs.AllocClientStatusUnknown, o.ClientStatus)
}

// An original that comes back failed with no replacement (attempts = 0: the
// policy allows none) is kept as any failed allocation whose attempts are
// used up, desired run and counted, and nothing is placed for it; with an
// attempt left and its delay not passed, it waits for an alloc-failure
// follow-up and is rescheduled then, as its successor. The seed placed a
// new copy at every such return, whatever the policy.
func TestServiceSched_OriginalBackFailedFollowsReschedulePolicy(t *testing.T) {
	for _, attempts := range []int{0, 1} {
		t.Run(fmt.Sprint("attempts=", attempts), func(t *testing.T) {
			f := newFailChain(t, &structs.ReschedulePolicy{
				Attempts: attempts, Interval: time.Hour, Delay: time.Minute, DelayFunction: structs.DelayFunctionConstant,
			})
			f.h.SetNodeStatus(f.o.NodeID, structs.NodeStatusDisconnected)
			process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
			placed, evals := f.placed(), len(f.h.CreateEvals)

			// Back at once, its task having failed meanwhile.
			f.h.Now = f.h.Now.Add(10 * time.Second)
			f.h.SetNodeStatus(f.o.NodeID, structs.NodeStatusReady)
			back := f.get(t, f.o.ID).Copy()
			back.ClientStatus = structs.AllocClientStatusFailed
			back.AllocStates = nil
			back.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateDead, Failed: true, FinishedAt: f.h.Now}}
			must.NoError(t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), []*structs.Allocation{back}))
			process(t, f.h, f.job, structs.EvalTriggerReconnect)

			must.Eq(t, placed, f.placed(), must.Sprint(describeAllocs(f.h.JobAllocs(f.job))))
			o := f.get(t, f.o.ID)
			must.Eq(t, structs.AllocDesiredStatusRun, o.DesiredStatus)
			must.False(t, o.NeedsToReconnect())
			if attempts == 0 {
				must.Eq(t, evals, len(f.h.CreateEvals), must.Sprint("no follow-up"))
				f.h.Now = f.h.Now.Add(2 * time.Hour)
				process(t, f.h, f.job, structs.EvalTriggerRetryFailedAlloc)
				must.Eq(t, placed, f.placed())
				return
			}
			e := f.followup(t, structs.EvalTriggerRetryFailedAlloc)
			must.Greater(t, evals, len(f.h.CreateEvals))
			must.Eq(t, e.ID, o.FollowupEvalID)
			must.Eq(t, f.h.Now.Add(time.Minute), e.WaitUntil)
			f.h.Now = e.WaitUntil
			f.run(t, e)
			must.Eq(t, placed+1, f.placed())
			o = f.get(t, f.o.ID)
			must.Eq(t, structs.AllocRescheduled, o.DesiredDescription)
			next := f.get(t, o.NextAllocation)
			must.Eq(t, o.ID, next.PreviousAllocation)
			must.Len(t, 1, next.RescheduleTracker.Events)
		})
	}
}

// A kept original carries its chain's reschedule history: O cut, R1
// replaces it (the only attempt of the hour), O returns and is kept, O is
// cut again within the hour: no second replacement. Each return starting
// the count afresh would let a flapping link place a copy per flap.
func TestServiceSched_KeptOriginalCarriesChainTracker(t *testing.T) {
	f := newFailChain(t, &structs.ReschedulePolicy{
		Attempts: 1, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant,
	})
	f.job.TaskGroups[0].Disconnect.Reconcile = structs.ReconcileOptionKeepOriginal
	f.job = f.h.UpsertJob(f.job.Copy())
	r1 := f.cutOriginal(t)
	f.reportBack(t)
	o := f.get(t, f.o.ID)
	must.Eq(t, structs.AllocDesiredStatusRun, o.DesiredStatus)
	must.Eq(t, structs.AllocReconnected, f.get(t, r1.ID).DesiredDescription)
	must.NotNil(t, o.RescheduleTracker)
	must.Eq(t, r1.RescheduleTracker.Events, o.RescheduleTracker.Events)

	placed := f.placed()
	f.h.Now = f.h.Now.Add(time.Minute)
	f.h.SetNodeStatus(f.o.NodeID, structs.NodeStatusDisconnected)
	process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	f.h.Now = f.h.Now.Add(10 * time.Minute)
	process(t, f.h, f.job, structs.EvalTriggerRetryFailedAlloc)
	must.Eq(t, placed, f.placed(), must.Sprint(describeAllocs(f.h.JobAllocs(f.job))))
	must.Eq(t, structs.AllocClientStatusUnknown, f.get(t, f.o.ID).ClientStatus)
}

// A job update replaces a failed allocation whose reschedule attempts are
// used up, here the failed replacement of an unknown original: a new version
// is how an operator gets past a policy that allows no more attempts. The
// seed left it failed and counted, so nothing was ever placed again.
func TestServiceSched_JobUpdateReplacesFailedAttemptsUsedUp(t *testing.T) {
	f := newFailChain(t, &structs.ReschedulePolicy{
		Attempts: 1, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant,
	})
	r1 := f.cutOriginal(t)
	f.fail(t, r1)
	placed := f.placed()

	job := f.job.Copy()
	job.TaskGroups[0].Meta = map[string]string{"rev": "2"} // an in-place change for a live copy
	f.job = f.h.UpsertJob(job)
	process(t, f.h, f.job, structs.EvalTriggerJobRegister)

	must.Eq(t, placed+1, f.placed(), must.Sprint(describeAllocs(f.h.JobAllocs(f.job))))
	got := f.get(t, r1.ID)
	must.Eq(t, structs.AllocDesiredStatusStop, got.DesiredStatus)
	next := f.get(t, got.NextAllocation)
	must.Eq(t, f.job.Version, next.Job.Version)
	must.Eq(t, r1.Name, next.Name)
	// O, unknown, waits on standby; when it returns, it runs an older version and loses.
	o := f.get(t, f.o.ID)
	must.Eq(t, structs.AllocDesiredStatusRun, o.DesiredStatus)
	must.Eq(t, structs.AllocClientStatusUnknown, o.ClientStatus)
}

// An original back failed whose replacement finds no node stays failed and
// desired run, so that the evaluation that finds one reschedules it, its
// attempt counted on its chain: O's node returns ineligible, the others are
// down. The seed stopped O as rescheduled and, when a node came back,
// placed a fresh copy with no history, one more attempt than the policy
// allows each time (found by TestProperty_ChainFollowsReschedulePolicy).
func TestServiceSched_OriginalBackFailedNoNodeKeepsChain(t *testing.T) {
	f := newFailChain(t, &structs.ReschedulePolicy{
		Attempts: 1, Interval: time.Hour, DelayFunction: structs.DelayFunctionConstant,
	})
	var other *structs.Node
	for _, n := range f.nodes {
		if n.ID != f.o.NodeID {
			f.h.SetNodeStatus(n.ID, structs.NodeStatusDown)
			other = n
		}
	}
	f.h.SetNodeStatus(f.o.NodeID, structs.NodeStatusDisconnected)
	process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	must.Eq(t, 0, f.placed()-1, must.Sprint("nowhere to replace O"))

	f.h.Now = f.h.Now.Add(10 * time.Second)
	must.NoError(t, f.h.State.UpdateNodeEligibility(f.h.NextIndex(), f.o.NodeID, structs.NodeSchedulingIneligible, nil))
	f.h.SetNodeStatus(f.o.NodeID, structs.NodeStatusReady)
	back := f.get(t, f.o.ID).Copy()
	back.ClientStatus = structs.AllocClientStatusFailed
	back.AllocStates = nil
	back.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateDead, Failed: true, FinishedAt: f.h.Now}}
	must.NoError(t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), []*structs.Allocation{back}))
	process(t, f.h, f.job, structs.EvalTriggerReconnect)
	o := f.get(t, f.o.ID)
	must.Eq(t, structs.AllocDesiredStatusRun, o.DesiredStatus, must.Sprint("not stopped for a replacement that was not placed", describeAllocs(f.h.JobAllocs(f.job))))
	must.Eq(t, structs.AllocClientStatusFailed, o.ClientStatus)

	f.h.Now = f.h.Now.Add(10 * time.Second)
	f.h.SetNodeStatus(other.ID, structs.NodeStatusReady)
	process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	o = f.get(t, f.o.ID)
	must.Eq(t, structs.AllocRescheduled, o.DesiredDescription, must.Sprint(describeAllocs(f.h.JobAllocs(f.job))))
	next := f.get(t, o.NextAllocation)
	must.Eq(t, o.ID, next.PreviousAllocation)
	must.Eq(t, other.ID, next.NodeID)
	must.Len(t, 1, next.RescheduleTracker.Events)
	must.Eq(t, o.ID, next.RescheduleTracker.Events[0].PrevAllocID)
}
