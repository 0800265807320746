package scheduler_test

import (
	"fmt"
	"slices"
	"time"

	"testing"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// policyCheck holds what TestProperty_ChainFollowsReschedulePolicy checks
// after every evaluation, for one group's reschedule policy.
type policyCheck struct {
	t      *rapid.T
	f      *fleet
	policy *structs.ReschedulePolicy
}

// check is the fleet's afterEval: every placement that stands in for a
// failed or unknown allocation, or that goes on a chain with an unknown
// member, is a reschedule carrying its predecessor's history, so that
// the policy sees every attempt of the chain; and no tracker holds more
// attempts in an interval than the policy allows.
func (c *policyCheck) check(before map[string]*structs.Allocation, plans []*structs.Plan) {
	t, f := c.t, c.f
	after := map[string]*structs.Allocation{}
	for _, a := range f.h.JobAllocs(f.job) {
		after[a.ID] = a
	}
	for _, plan := range plans {
		for _, p := range schedtest.PlacedAllocs(plan) {
			prev, was := after[p.PreviousAllocation], before[p.PreviousAllocation]
			if prev == nil || was == nil {
				continue // a new instance
			}
			if !c.mustReschedule(p, was, prev, after) {
				continue
			}
			tr := p.RescheduleTracker
			must.NotNil(t, tr, must.Sprintf("%.8s replaced %s %.8s with no reschedule:%s", p.ID, was.ClientStatus, prev.ID, describeAllocs(f.h.JobAllocs(f.job))))
			last := tr.Events[len(tr.Events)-1]
			must.Eq(t, prev.ID, last.PrevAllocID)
			must.Eq(t, prev.NodeID, last.PrevNodeID)
			if was.RescheduleTracker == nil || c.policy.Unlimited {
				continue
			}
			floor := f.h.Now.Add(-c.policy.Interval).UnixNano()
			for _, e := range was.RescheduleTracker.Events {
				if e.RescheduleTime >= floor {
					must.True(t, slices.ContainsFunc(tr.Events, func(x *structs.RescheduleEvent) bool {
						return x.PrevAllocID == e.PrevAllocID && x.RescheduleTime == e.RescheduleTime
					}), must.Sprintf("%.8s dropped the attempt that replaced %.8s", p.ID, e.PrevAllocID))
				}
			}
		}
	}
	if c.policy.Unlimited {
		return
	}
	// Per name: the placements made as reschedules (their newest attempt
	// replaced their predecessor when they were created; a kept original
	// carries its chain's attempts but made none) never exceed the attempts
	// of any interval.
	byName := map[string][]int64{}
	for _, a := range after {
		tr := a.RescheduleTracker
		if tr == nil || len(tr.Events) == 0 || a.PreviousAllocation == "" {
			continue
		}
		if last := tr.Events[len(tr.Events)-1]; last.PrevAllocID == a.PreviousAllocation && last.RescheduleTime == a.CreateTime {
			byName[a.Name] = append(byName[a.Name], a.CreateTime)
		}
	}
	for name, times := range byName {
		slices.Sort(times)
		for i := range times {
			n := 0
			for _, t2 := range times[i:] {
				if t2-times[i] < c.policy.Interval.Nanoseconds() {
					n++
				}
			}
			must.True(t, n <= c.policy.Attempts, must.Sprintf("%s: %d reschedules within %s, policy allows %d:%s", name, n, c.policy.Interval, c.policy.Attempts, describeAllocs(f.h.JobAllocs(f.job))))
		}
	}
	for _, a := range after {
		tr := a.RescheduleTracker
		if tr == nil || len(tr.Events) == 0 {
			continue
		}
		floor := tr.Events[len(tr.Events)-1].RescheduleTime - c.policy.Interval.Nanoseconds()
		n := 0
		for _, e := range tr.Events {
			if e.RescheduleTime >= floor {
				n++
			}
		}
		must.True(t, n <= c.policy.Attempts, must.Sprintf("%.8s: %d attempts in an interval, policy allows %d:%s%s", a.ID, n, c.policy.Attempts,
			describeTracker(tr), describeAllocs(f.h.JobAllocs(f.job))))
	}
}

// mustReschedule reports whether placement p, which names prev (was before
// the evaluation), is governed by the reschedule policy: prev failed, or
// was unknown (or marked so now), or another member of the chain is still
// unknown (a lost replacement of an unknown original). A plain lost
// replacement (an expired window, a node gone, with nothing unknown left)
// is not.
func (c *policyCheck) mustReschedule(p, was, prev *structs.Allocation, after map[string]*structs.Allocation) bool {
	if was.ClientStatus == structs.AllocClientStatusFailed || prev.ClientStatus == structs.AllocClientStatusUnknown && !prev.ServerTerminalStatus() {
		return true
	}
	root := rootOf(p, after)
	for _, a := range after {
		if a.ID != p.ID && a.ClientStatus == structs.AllocClientStatusUnknown && !a.ServerTerminalStatus() && rootOf(a, after) == root {
			return true
		}
	}
	return false
}

// For any sequence of cuts, task failures (on reachable nodes, or on cut
// ones, reported when they return), returns and time passing, under any
// reschedule policy: the placements that stand in for failed or unknown
// allocations follow the policy along the chain (each a reschedule carrying
// its predecessor's attempts, none beyond the attempts of an interval), and
// once everything has healed and settled at most one copy of each name is
// desired run. This is the crash loop of issue 18: a failing replacement of
// an unknown allocation was replaced afresh, nine times a minute.
func TestProperty_ChainFollowsReschedulePolicy(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := schedtest.NewHarness(rt)
		f := &fleet{t: rt, h: h, cut: map[string]bool{}, failed: map[string]bool{}}
		for range rapid.IntRange(3, 5).Draw(rt, "nodes") {
			n := mock.Node()
			f.nodes = append(f.nodes, n)
			h.UpsertNodes(n)
		}
		job := mock.Job()
		tg := job.TaskGroups[0]
		tg.Count = rapid.IntRange(1, 3).Draw(rt, "count")
		tg.Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
		replace := rapid.Float64Range(0, 1).Draw(rt, "replace") < 0.8
		tg.Disconnect = &structs.DisconnectStrategy{
			LostAfter: time.Hour, Replace: &replace,
			Reconcile: rapid.SampledFrom([]string{
				structs.ReconcileOptionBestScore, structs.ReconcileOptionKeepOriginal,
				structs.ReconcileOptionKeepReplacement, structs.ReconcileOptionLongestRunning,
			}).Draw(rt, "reconcile"),
		}
		policy := &structs.ReschedulePolicy{
			Attempts:      rapid.IntRange(0, 3).Draw(rt, "attempts"),
			Interval:      rapid.SampledFrom([]time.Duration{10 * time.Minute, time.Hour}).Draw(rt, "interval"),
			Delay:         rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 2 * time.Minute}).Draw(rt, "delay"),
			DelayFunction: rapid.SampledFrom([]string{structs.DelayFunctionConstant, structs.DelayFunctionExponential, structs.DelayFunctionFibonacci}).Draw(rt, "function"),
			MaxDelay:      10 * time.Minute,
			Unlimited:     rapid.Float64Range(0, 1).Draw(rt, "unlimited") < 0.15,
		}
		tg.ReschedulePolicy = policy
		f.job = h.UpsertJob(job)
		c := &policyCheck{t: rt, f: f, policy: policy}
		f.afterEval = c.check
		f.process(structs.EvalTriggerJobRegister)

		for range rapid.IntRange(1, 30).Draw(rt, "steps") {
			var up, down []string
			for _, n := range f.nodes {
				if f.cut[n.ID] {
					down = append(down, n.ID)
				} else {
					up = append(up, n.ID)
				}
			}
			switch rapid.SampledFrom([]string{"cut", "cut", "return", "fail", "fail", "fail-cut", "time"}).Draw(rt, "action") {
			case "cut":
				if len(up) > 0 {
					f.partition(rapid.SampledFrom(up).Draw(rt, "node"))
				}
			case "return":
				if len(down) > 0 {
					f.heal(rapid.SampledFrom(down).Draw(rt, "node"))
				}
			case "fail":
				if a := c.pick(rt, false); a != nil {
					c.fail(a)
				}
			case "fail-cut":
				if a := c.pick(rt, true); a != nil {
					f.failed[a.ID] = true
				}
			case "time":
				f.pass(rapid.SampledFrom([]time.Duration{10 * time.Second, 45 * time.Second, 3 * time.Minute, 20 * time.Minute, 2 * time.Hour}).Draw(rt, "advance"))
			}
		}

		f.settle()
		desired := map[string]int{}
		for _, a := range f.h.JobAllocs(f.job) {
			if a.DesiredStatus == structs.AllocDesiredStatusRun {
				desired[a.Name]++
				must.True(rt, desired[a.Name] <= 1, must.Sprintf("two copies of %s desired run:%s", a.Name, describeAllocs(f.h.JobAllocs(f.job))))
			}
		}
	})
}

// pick draws an allocation whose task may exit: desired run and running
// (or pending) on a node that is cut or not, as asked; nil when none is.
func (c *policyCheck) pick(rt *rapid.T, cut bool) *structs.Allocation {
	var out []*structs.Allocation
	for _, a := range c.f.h.JobAllocs(c.f.job) {
		if a.DesiredStatus != structs.AllocDesiredStatusRun || c.f.cut[a.NodeID] != cut || c.f.failed[a.ID] {
			continue
		}
		switch a.ClientStatus {
		case structs.AllocClientStatusRunning, structs.AllocClientStatusPending:
		case structs.AllocClientStatusUnknown:
			if !cut {
				continue
			}
		default:
			continue
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil
	}
	return rapid.SampledFrom(out).Draw(rt, "alloc")
}

// fail has a's client report its task exited, and the server evaluate the
// job as it does on a failed allocation.
func (c *policyCheck) fail(a *structs.Allocation) {
	u := a.Copy()
	u.AllocStates = nil
	u.ClientStatus = structs.AllocClientStatusFailed
	u.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateDead, Failed: true, FinishedAt: c.f.h.Now}}
	must.NoError(c.t, c.f.h.State.UpdateAllocsFromClient(c.f.h.NextIndex(), []*structs.Allocation{u}))
	c.f.process(structs.EvalTriggerRetryFailedAlloc)
}

func describeTracker(tr *structs.RescheduleTracker) string {
	s := ""
	for _, e := range tr.Events {
		s += fmt.Sprintf("\n  attempt at %s replaced %.8s (delay %s)", time.Unix(0, e.RescheduleTime).UTC().Format(time.TimeOnly), e.PrevAllocID, e.Delay)
	}
	return s
}
