package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// chainFixture builds the double disconnect of "Reconnect" (docs/concepts/disconnected-clients.md): O's node drops and
// R1 replaces O at once; R1's node drops too and R2 replaces R1. O and R1
// are unknown, R2 runs. Four nodes, so there is always room for an R3 that
// must never come.
type chainFixture struct {
	h         *schedtest.Harness
	job       *structs.Job
	o, r1, r2 *structs.Allocation
}

func newChainFixture(t *testing.T, strategy string) *chainFixture {
	t.Helper()
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node(), mock.Node(), mock.Node(), mock.Node())
	job := mock.Job()
	tg := job.TaskGroups[0]
	tg.Count = 1
	tg.Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour, Reconcile: strategy}
	tg.ReschedulePolicy = &structs.ReschedulePolicy{DelayFunction: structs.DelayFunctionConstant, Unlimited: true}
	f := &chainFixture{h: h, job: h.UpsertJob(job)}

	process(t, h, f.job, structs.EvalTriggerJobRegister)
	setRunning(t, h, f.job)
	f.o = f.only(t, "O placed")

	f.r1 = f.disconnectAndReplace(t, f.o)
	f.r2 = f.disconnectAndReplace(t, f.r1)
	must.Eq(t, 3, f.placed())
	return f
}

// disconnectAndReplace drops a's node and returns a's replacement, running.
func (f *chainFixture) disconnectAndReplace(t *testing.T, a *structs.Allocation) *structs.Allocation {
	t.Helper()
	f.h.Now = f.h.Now.Add(time.Minute)
	f.h.SetNodeStatus(a.NodeID, structs.NodeStatusDisconnected)
	process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	f.h.Now = f.h.Now.Add(time.Minute)
	setRunning(t, f.h, f.job)
	got := f.get(t, a.ID)
	must.Eq(t, structs.AllocClientStatusUnknown, got.ClientStatus)
	must.NotEq(t, "", got.NextAllocation, must.Sprint("replaced at once"))
	return f.get(t, got.NextAllocation)
}

// reconnect brings the nodes of allocs back and has their clients report
// them running, as after a partition heals, then runs the reconnect
// evaluation.
func (f *chainFixture) reconnect(t *testing.T, allocs ...*structs.Allocation) {
	t.Helper()
	f.h.Now = f.h.Now.Add(time.Minute)
	var reports []*structs.Allocation
	for _, a := range allocs {
		f.h.SetNodeStatus(a.NodeID, structs.NodeStatusReady)
		back := f.get(t, a.ID).Copy()
		back.ClientStatus = structs.AllocClientStatusRunning
		back.AllocStates = nil
		reports = append(reports, back)
	}
	must.NoError(t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), reports))
	process(t, f.h, f.job, structs.EvalTriggerReconnect)
}

func (f *chainFixture) get(t *testing.T, id string) *structs.Allocation {
	t.Helper()
	a, err := f.h.State.AllocByID(nil, id)
	must.NoError(t, err)
	must.NotNil(t, a)
	return a
}

func (f *chainFixture) placed() int {
	n := 0
	for _, p := range f.h.Plans {
		n += len(schedtest.PlacedAllocs(p))
	}
	return n
}

// desiredRun returns the allocations the servers want running.
func (f *chainFixture) desiredRun() []*structs.Allocation {
	var out []*structs.Allocation
	for _, a := range f.h.JobAllocs(f.job) {
		if a.DesiredStatus == structs.AllocDesiredStatusRun && !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

func (f *chainFixture) only(t *testing.T, what string) *structs.Allocation {
	t.Helper()
	run := f.desiredRun()
	must.Len(t, 1, run, must.Sprint(what))
	return run[0]
}

func describeAllocs(allocs []*structs.Allocation) string {
	s := ""
	for _, a := range allocs {
		s += fmt.Sprintf("\n  %s prev=%.8s desired=%s client=%s %q", a.ID[:8], a.PreviousAllocation, a.DesiredStatus, a.ClientStatus, a.DesiredDescription)
	}
	return s
}

// The double-disconnect chain of "Reconnect" (docs/concepts/disconnected-clients.md) resolved in every return order
// and under every strategy: exactly one of O, R1, R2 runs at the end, the
// one the strategy names, nothing new is ever placed, and a member that is
// still unknown is neither stopped nor counted when another returns. This
// is the sequence an LTE fleet produces daily; the seed stopped both
// running copies and placed an R3.
func TestServiceSched_ReconnectChainEveryOrder(t *testing.T) {
	orders := map[string][][]string{
		"O then R1": {{"O"}, {"R1"}},
		"R1 then O": {{"R1"}, {"O"}},
		"O and R1":  {{"O", "R1"}},
	}
	// With equal scores best_score keeps the oldest; longest_running keeps
	// O, whose task started first.
	strategies := map[string]string{
		structs.ReconcileOptionBestScore:       "O",
		structs.ReconcileOptionKeepOriginal:    "O",
		structs.ReconcileOptionKeepReplacement: "R2",
		structs.ReconcileOptionLongestRunning:  "O",
	}
	for strategy, want := range strategies {
		for order, steps := range orders {
			t.Run(strategy+"/"+order, func(t *testing.T) {
				f := newChainFixture(t, strategy)
				byName := map[string]*structs.Allocation{"O": f.o, "R1": f.r1, "R2": f.r2}
				for _, step := range steps {
					var back []*structs.Allocation
					for _, name := range step {
						back = append(back, byName[name])
					}
					f.reconnect(t, back...)
					// Of the members heard from, exactly one stays; the
					// unknown ones are left alone.
					heard := 0
					for _, a := range f.desiredRun() {
						if a.ClientStatus != structs.AllocClientStatusUnknown {
							heard++
						}
					}
					must.Eq(t, 1, heard, must.Sprintf("after %v:%s", step, describeAllocs(f.h.JobAllocs(f.job))))
				}
				must.Eq(t, 3, f.placed(), must.Sprintf("nothing new placed:%s", describeAllocs(f.h.JobAllocs(f.job))))
				survivor := f.only(t, "one survivor"+describeAllocs(f.h.JobAllocs(f.job)))
				must.Eq(t, byName[want].ID, survivor.ID, must.Sprintf("survivor:%s", describeAllocs(f.h.JobAllocs(f.job))))
				must.False(t, survivor.NeedsToReconnect())
				for _, a := range f.h.JobAllocs(f.job) {
					if a.ID == survivor.ID {
						continue
					}
					must.SliceContains(t, []string{structs.AllocReconnected, structs.AllocNotNeeded}, a.DesiredDescription)
				}
			})
		}
	}
}

// The seed's case: O returns while R1 is still unknown and R2 runs. O and
// R2 are compared, one is stopped; R1 is neither stopped nor counted, so
// the other running copy is not stopped as excess.
func TestServiceSched_ReconnectWhileReplacementUnknown(t *testing.T) {
	f := newChainFixture(t, structs.ReconcileOptionKeepOriginal)
	f.reconnect(t, f.o)

	got := f.get(t, f.o.ID)
	must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus, must.Sprint(describeAllocs(f.h.JobAllocs(f.job))))
	r1 := f.get(t, f.r1.ID)
	must.Eq(t, structs.AllocDesiredStatusRun, r1.DesiredStatus)
	must.Eq(t, structs.AllocClientStatusUnknown, r1.ClientStatus)
	r2 := f.get(t, f.r2.ID)
	must.Eq(t, structs.AllocDesiredStatusStop, r2.DesiredStatus)
	must.Eq(t, structs.AllocReconnected, r2.DesiredDescription)

	// Later evaluations leave it so: R1 waits for its node.
	plans := len(f.h.Plans)
	f.h.Now = f.h.Now.Add(10 * time.Minute)
	process(t, f.h, f.job, structs.EvalTriggerNodeUpdate)
	must.Eq(t, plans, len(f.h.Plans), must.Sprint(describeAllocs(f.h.JobAllocs(f.job))))
}
