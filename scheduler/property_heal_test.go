package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// fleet drives the real scheduler over a real state store the way a
// cluster would: nodes drop off the network and come back (any node, those
// holding replacements included), the servers move their status as the
// heartbeat rules say, clients report what they run when they can talk, an
// operator updates the job and stops allocations, and time passes.
type fleet struct {
	t     *rapid.T
	h     *schedtest.Harness
	job   *structs.Job
	nodes []*structs.Node
	cut   map[string]bool // partitioned nodes
	// failed are allocations whose task exited while their node was cut:
	// their client reports them failed when it returns.
	failed map[string]bool
	// afterEval, when set, checks each evaluation's plans against the
	// allocations as they were before it ran.
	afterEval func(before map[string]*structs.Allocation, plans []*structs.Plan)
}

func (f *fleet) process(trigger string) {
	f.t.Helper()
	e := schedtest.JobEval(f.job, trigger)
	f.h.UpsertEval(e)
	f.run(e)
}

// run processes e and checks the rules that hold after every plan: no
// allocation is placed on a node that is not ready, and a reconnect
// decision record on a stopped allocation names it, and is also on the
// copy it names as kept.
func (f *fleet) run(e *structs.Evaluation) {
	f.t.Helper()
	plans := len(f.h.Plans)
	var before map[string]*structs.Allocation
	if f.afterEval != nil {
		before = map[string]*structs.Allocation{}
		for _, a := range f.h.JobAllocs(f.job) {
			before[a.ID] = a
		}
	}
	must.NoError(f.t, f.h.Process(scheduler.NewServiceScheduler, e))
	if f.afterEval != nil {
		f.afterEval(before, f.h.Plans[plans:])
	}
	for _, plan := range f.h.Plans[plans:] {
		for _, a := range schedtest.PlacedAllocs(plan) {
			node, err := f.h.State.NodeByID(nil, a.NodeID)
			must.NoError(f.t, err)
			must.True(f.t, node.Ready(), must.Sprintf("placed on a %s node", node.Status))
		}
		f.checkRecords(plan)
	}
	f.sync()
}

func (f *fleet) checkRecords(plan *structs.Plan) {
	f.t.Helper()
	for _, stops := range plan.NodeUpdate {
		for _, a := range stops {
			rec := a.ReconnectDecision
			if rec == nil || rec.EvalID != plan.EvalID {
				continue
			}
			must.Eq(f.t, a.ID, rec.StoppedAllocID)
			must.NotEq(f.t, rec.KeptAllocID, rec.StoppedAllocID)
			if rec.KeptAllocID == "" {
				continue
			}
			kept, err := f.h.State.AllocByID(nil, rec.KeptAllocID)
			must.NoError(f.t, err)
			if kept.ServerTerminalStatus() || kept.ClientStatus == structs.AllocClientStatusUnknown {
				continue // replaced by a job update in the same plan, or out of contact
			}
			must.NotNil(f.t, kept.ReconnectDecision, must.Sprintf("kept %.8s (%s) has no record", kept.ID, kept.ClientStatus))
			must.Eq(f.t, rec.EvalID, kept.ReconnectDecision.EvalID)
			must.Eq(f.t, kept.ID, kept.ReconnectDecision.KeptAllocID)
		}
	}
}

// sync is what the clients that can talk do: start what they were given,
// stop what the servers stopped.
func (f *fleet) sync() {
	var reports []*structs.Allocation
	for _, a := range f.h.JobAllocs(f.job) {
		if f.cut[a.NodeID] || a.ClientTerminalStatus() || a.ClientStatus == structs.AllocClientStatusUnknown {
			continue
		}
		if r := f.clientView(a); r != nil {
			reports = append(reports, r)
		}
	}
	if len(reports) > 0 {
		must.NoError(f.t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), reports))
	}
}

// clientView is the report a client makes of a: failed if its task exited,
// stopped if the servers stopped it, else running, with the start time its
// task kept throughout.
func (f *fleet) clientView(a *structs.Allocation) *structs.Allocation {
	u := a.Copy()
	u.AllocStates = nil
	switch {
	case f.failed[a.ID]:
		delete(f.failed, a.ID)
		u.ClientStatus = structs.AllocClientStatusFailed
		u.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateDead, Failed: true, FinishedAt: f.h.Now}}
	case a.ServerTerminalStatus():
		u.ClientStatus = structs.AllocClientStatusComplete
	case a.ClientStatus == structs.AllocClientStatusRunning:
		return nil
	default:
		u.ClientStatus = structs.AllocClientStatusRunning
		if ts := a.TaskStates["web"]; ts == nil || ts.StartedAt.IsZero() {
			u.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateRunning, StartedAt: f.h.Now}}
		}
	}
	return u
}

// missedStatus is the heartbeat rule (see docs/concepts/disconnected-clients.md, "Heartbeats and node status"): a node that stops
// answering is disconnected while an allocation on it may still come back,
// else down.
func (f *fleet) missedStatus(nodeID string) string {
	for _, a := range f.h.JobAllocs(f.job) {
		if a.NodeID != nodeID || a.DesiredStatus != structs.AllocDesiredStatusRun {
			continue
		}
		if a.ClientStatus == structs.AllocClientStatusRunning ||
			(a.ClientStatus == structs.AllocClientStatusUnknown && !a.Expired(f.h.Now)) {
			return structs.NodeStatusDisconnected
		}
	}
	return structs.NodeStatusDown
}

func (f *fleet) node(id string) *structs.Node {
	n, err := f.h.State.NodeByID(nil, id)
	must.NoError(f.t, err)
	return n
}

func (f *fleet) partition(id string) {
	f.cut[id] = true
	f.h.SetNodeStatus(id, f.missedStatus(id))
	f.process(structs.EvalTriggerNodeUpdate)
}

// heal brings a node back through the two phases of "Reconnect" (docs/concepts/disconnected-clients.md): initializing
// while its client reports the true status of everything it runs, then
// ready. It checks that no instance served by an existing copy before
// the heal is left without one after: the reconnect keeps a running copy
// (nothing new is placed for it and both copies are never stopped).
func (f *fleet) heal(id string) {
	before := f.servedBy(id)
	delete(f.cut, id)
	if f.node(id).Status == structs.NodeStatusDisconnected {
		f.h.SetNodeStatus(id, structs.NodeStatusInit)
		f.process(structs.EvalTriggerNodeUpdate)
	}
	var reports []*structs.Allocation
	reconnect := false
	for _, a := range f.h.JobAllocs(f.job) {
		if a.NodeID != id || a.ClientTerminalStatus() {
			continue
		}
		reconnect = reconnect || a.ClientStatus == structs.AllocClientStatusUnknown
		u := f.clientView(a)
		if u == nil {
			u = a.Copy()
			u.AllocStates = nil
		}
		reports = append(reports, u)
	}
	if len(reports) > 0 {
		must.NoError(f.t, f.h.State.UpdateAllocsFromClient(f.h.NextIndex(), reports))
	}
	if reconnect {
		f.process(structs.EvalTriggerReconnect)
	}
	f.h.SetNodeStatus(id, structs.NodeStatusReady)
	f.process(structs.EvalTriggerNodeUpdate)

	after := f.servedBy("")
	kept := 0
	for root, copies := range before {
		for id := range copies {
			if after[root][id] != nil {
				kept++
				break
			}
		}
	}
	// Instances the heal did not touch that still stand (unknown ones are
	// never stopped as excess) take their share of the count.
	others := 0
	for root := range f.liveInstances() {
		if _, ok := before[root]; !ok {
			others++
		}
	}
	want := min(f.job.TaskGroups[0].Count-others, len(before))
	must.True(f.t, kept >= want, must.Sprintf(
		"heal of %.8s: %d of %d instances kept a running copy, want %d:%s", id, kept, len(before), want, describeAllocs(f.h.JobAllocs(f.job))))
}

// rootOf returns the first member of a's replacement chain.
func rootOf(a *structs.Allocation, byID map[string]*structs.Allocation) string {
	seen := map[string]bool{a.ID: true}
	for p := byID[a.PreviousAllocation]; p != nil && !seen[p.ID]; p = byID[p.PreviousAllocation] {
		seen[p.ID] = true
		a = p
	}
	return a.ID
}

// liveInstances returns the chains (by first member) with a live member.
func (f *fleet) liveInstances() map[string]bool {
	allocs := f.h.JobAllocs(f.job)
	byID := map[string]*structs.Allocation{}
	for _, a := range allocs {
		byID[a.ID] = a
	}
	out := map[string]bool{}
	for _, a := range allocs {
		if !a.TerminalStatus() {
			out[rootOf(a, byID)] = true
		}
	}
	return out
}

// servedBy maps each instance (replacement chain, by its first member) to
// its existing copies of the current job version that the servers want
// running: running on a reachable node, or on the returning node.
func (f *fleet) servedBy(returning string) map[string]map[string]*structs.Allocation {
	allocs := f.h.JobAllocs(f.job)
	byID := map[string]*structs.Allocation{}
	for _, a := range allocs {
		byID[a.ID] = a
	}
	out := map[string]map[string]*structs.Allocation{}
	for _, a := range allocs {
		if a.TerminalStatus() || a.DesiredTransition.ShouldMigrate() ||
			a.Job.Version != f.job.Version || a.Job.JobModifyIndex != f.job.JobModifyIndex {
			continue
		}
		if f.failed[a.ID] {
			continue // its task exited while its node was cut
		}
		reachable := !f.cut[a.NodeID] && a.ClientStatus == structs.AllocClientStatusRunning
		back := a.NodeID == returning && (a.ClientStatus == structs.AllocClientStatusRunning || a.ClientStatus == structs.AllocClientStatusUnknown)
		if !reachable && !back {
			continue
		}
		root := rootOf(a, byID)
		if out[root] == nil {
			out[root] = map[string]*structs.Allocation{}
		}
		out[root][a.ID] = a
	}
	return out
}

func (f *fleet) update(kind string, count int) {
	job := f.job.Copy()
	tg := job.TaskGroups[0]
	switch kind {
	case "count":
		tg.Count = count
	case "inplace":
		tg.Meta = map[string]string{"rev": fmt.Sprint(f.h.NextIndex())}
	case "destructive":
		tg.Tasks[0].Env = map[string]string{"REV": fmt.Sprint(f.h.NextIndex())}
	}
	f.job = f.h.UpsertJob(job)
	f.process(structs.EvalTriggerJobRegister)
}

func (f *fleet) stop(a *structs.Allocation) {
	yes := true
	e := schedtest.JobEval(f.job, structs.EvalTriggerAllocStop)
	must.NoError(f.t, f.h.State.UpdateAllocsDesiredTransitions(f.h.NextIndex(),
		map[string]*structs.DesiredTransition{a.ID: {Migrate: &yes}}, []*structs.Evaluation{e}))
	f.run(e)
}

// pass moves time on, re-applies the heartbeat rule to partitioned nodes
// (a disconnected node goes down once nothing on it may come back) and runs
// the evaluations that fire with time.
func (f *fleet) pass(d time.Duration) {
	f.h.Now = f.h.Now.Add(d)
	for _, n := range f.nodes {
		if f.cut[n.ID] && f.node(n.ID).Status == structs.NodeStatusDisconnected &&
			f.missedStatus(n.ID) == structs.NodeStatusDown {
			f.h.SetNodeStatus(n.ID, structs.NodeStatusDown)
			f.process(structs.EvalTriggerNodeUpdate)
		}
	}
	f.process(structs.EvalTriggerMaxDisconnectTimeout)
	f.process(structs.EvalTriggerRetryFailedAlloc)
}

// settle heals every node and lets time pass until the scheduler has
// nothing more to do.
func (f *fleet) settle() {
	for _, n := range f.nodes {
		if f.cut[n.ID] {
			f.heal(n.ID)
		}
	}
	for range 5 {
		plans := len(f.h.Plans)
		f.pass(2 * time.Hour)
		if len(f.h.Plans) == plans {
			return
		}
	}
	f.t.Fatalf("not settled:%s", describeAllocs(f.h.JobAllocs(f.job)))
}

func (f *fleet) liveAllocs() []*structs.Allocation {
	var out []*structs.Allocation
	for _, a := range f.h.JobAllocs(f.job) {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

// After any sequence of partitions and heals of any nodes, job updates,
// alloc stops and time passing, once everything has healed and settled:
// exactly count allocations run, none is left unknown on a ready node, a
// heal never left an instance without the running copy it had (so a task
// on a reconnected node is not replaced by a new placement), and no plan
// ever placed on a node that was not ready. This is the promise to an edge
// operator: the fleet converges to what the job says, without churn.
func TestProperty_HealAndSettle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := schedtest.NewHarness(rt)
		f := &fleet{t: rt, h: h, cut: map[string]bool{}}
		for range rapid.IntRange(3, 5).Draw(rt, "nodes") {
			n := mock.Node()
			f.nodes = append(f.nodes, n)
			h.UpsertNodes(n)
		}
		job := mock.Job()
		tg := job.TaskGroups[0]
		tg.Count = rapid.IntRange(1, 3).Draw(rt, "count")
		tg.Tasks[0].Resources = &structs.Resources{CPU: 100, MemoryMB: 64}
		replace := rapid.Bool().Draw(rt, "replace")
		tg.Disconnect = &structs.DisconnectStrategy{
			LostAfter: time.Hour, Replace: &replace,
			Reconcile: rapid.SampledFrom([]string{
				structs.ReconcileOptionBestScore, structs.ReconcileOptionKeepOriginal,
				structs.ReconcileOptionKeepReplacement, structs.ReconcileOptionLongestRunning,
			}).Draw(rt, "reconcile"),
		}
		if rapid.Bool().Draw(rt, "immediate-reschedule") {
			tg.ReschedulePolicy = &structs.ReschedulePolicy{DelayFunction: structs.DelayFunctionConstant, Unlimited: true}
		}
		f.job = h.UpsertJob(job)
		f.process(structs.EvalTriggerJobRegister)

		for range rapid.IntRange(1, 25).Draw(rt, "steps") {
			var up, down []string
			for _, n := range f.nodes {
				if f.cut[n.ID] {
					down = append(down, n.ID)
				} else {
					up = append(up, n.ID)
				}
			}
			switch rapid.SampledFrom([]string{"partition", "partition", "heal", "heal", "update", "stop", "time"}).Draw(rt, "action") {
			case "partition":
				if len(up) > 0 {
					f.partition(rapid.SampledFrom(up).Draw(rt, "node"))
				}
			case "heal":
				if len(down) > 0 {
					f.heal(rapid.SampledFrom(down).Draw(rt, "node"))
				}
			case "update":
				f.update(rapid.SampledFrom([]string{"count", "inplace", "destructive"}).Draw(rt, "update"),
					rapid.IntRange(1, 3).Draw(rt, "count"))
			case "stop":
				if live := f.liveAllocs(); len(live) > 0 {
					f.stop(rapid.SampledFrom(live).Draw(rt, "alloc"))
				}
			case "time":
				f.pass(rapid.SampledFrom([]time.Duration{30 * time.Second, 5 * time.Minute, 2 * time.Hour}).Draw(rt, "advance"))
			}
		}

		f.settle()
		running := 0
		for _, a := range f.h.JobAllocs(f.job) {
			if a.ClientStatus == structs.AllocClientStatusUnknown {
				must.False(rt, f.node(a.NodeID).Status == structs.NodeStatusReady, must.Sprintf("unknown on a ready node: %.8s", a.ID))
			}
			if a.DesiredStatus == structs.AllocDesiredStatusRun && a.ClientStatus == structs.AllocClientStatusRunning {
				running++
			}
		}
		must.Eq(rt, f.job.TaskGroups[0].Count, running, must.Sprintf("running after settling:%s", describeAllocs(f.h.JobAllocs(f.job))))
	})
}
