package scheduler

import (
	"maps"
	"sort"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var testNow = time.Unix(1_700_000_000, 0)

// allocsFor returns n allocations of job's first group named 0..n-1, each
// on its own node, with the given client status.
func allocsFor(job *structs.Job, n int, clientStatus string) []*structs.Allocation {
	tg := job.TaskGroups[0]
	out := make([]*structs.Allocation, n)
	for i := range out {
		out[i] = &structs.Allocation{
			ID:                 structs.GenerateUUID(),
			Namespace:          job.Namespace,
			EvalID:             structs.GenerateUUID(),
			Name:               structs.AllocName(job.ID, tg.Name, uint(i)),
			NodeID:             structs.GenerateUUID(),
			JobID:              job.ID,
			Job:                job,
			TaskGroup:          tg.Name,
			AllocatedResources: structs.NewAllocatedResources(tg),
			Metrics:            &structs.AllocMetric{},
			DesiredStatus:      structs.AllocDesiredStatusRun,
			ClientStatus:       clientStatus,
			CreateIndex:        uint64(100 + i),
		}
	}
	return out
}

func withWindow(job *structs.Job, window time.Duration) *structs.Job {
	job.TaskGroups[0].MaxClientDisconnect = &window
	return job
}

func nodeWithStatus(status string) *structs.Node {
	n := mock.Node()
	n.Status = status
	return n
}

// failedAt makes a failed at finished.
func failedAt(a *structs.Allocation, finished time.Time) {
	a.ClientStatus = structs.AllocClientStatusFailed
	a.TaskStates = map[string]*structs.TaskState{"web": {State: structs.TaskStateDead, Failed: true, FinishedAt: finished}}
}

// unknownSinceT makes a unknown since t on node.
func unknownSinceT(a *structs.Allocation, node *structs.Node, t time.Time) {
	a.NodeID = node.ID
	a.ClientStatus = structs.AllocClientStatusUnknown
	a.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: t}}
}

// flatResults is the results of every group together, in the shape the
// table tests read.
type flatResults struct {
	Place, DestructiveUpdate                              []placementRequest
	Stop                                                  []stopRequest
	InplaceUpdate                                         []*structs.Allocation
	DisconnectUpdates, ReconnectUpdates, AttributeUpdates allocSet
	Ignore                                                allocSet
	DesiredTGUpdates                                      map[string]*structs.DesiredUpdates
	DesiredFollowupEvals                                  map[string][]*structs.Evaluation
}

// reconcileChecked runs the reconciler, checks what its results promise
// (checkExclusive) and flattens them.
func reconcileChecked(t *testing.T, in ReconcilerInput) flatResults {
	t.Helper()
	res := Reconcile(in)
	for _, g := range res.Groups {
		checkExclusive(t, g)
	}
	checkPhases(t, in)
	return flatten(res)
}

func flatten(r ReconcileResults) flatResults {
	out := flatResults{
		DisconnectUpdates: allocSet{}, ReconnectUpdates: allocSet{}, AttributeUpdates: allocSet{}, Ignore: allocSet{},
		DesiredTGUpdates: r.DesiredTGUpdates(), DesiredFollowupEvals: map[string][]*structs.Evaluation{},
	}
	for _, g := range r.Groups {
		out.Place = append(out.Place, g.Place...)
		out.DestructiveUpdate = append(out.DestructiveUpdate, g.DestructiveUpdate...)
		out.Stop = append(out.Stop, g.Stop...)
		out.InplaceUpdate = append(out.InplaceUpdate, g.InplaceUpdate.sorted()...)
		out.DisconnectUpdates = out.DisconnectUpdates.union(g.Disconnect)
		out.ReconnectUpdates = out.ReconnectUpdates.union(g.Reconnect)
		out.AttributeUpdates = out.AttributeUpdates.union(g.FollowupTagged)
		out.Ignore = out.Ignore.union(g.Ignore)
		if len(g.FollowupEvals) > 0 {
			out.DesiredFollowupEvals[g.Name] = g.FollowupEvals
		}
	}
	return out
}

// summary is the shape of a ReconcileResults, for table assertions.
type summary struct {
	place, destructive, stop, inplace, disconnect, reconnect, attr, followups int
}

func summarize(r flatResults) summary {
	n := 0
	for _, evals := range r.DesiredFollowupEvals {
		n += len(evals)
	}
	place := 0
	for _, p := range r.Place {
		place += p.instances()
	}
	return summary{
		place: place, destructive: len(r.DestructiveUpdate), stop: len(r.Stop),
		inplace: len(r.InplaceUpdate), disconnect: len(r.DisconnectUpdates),
		reconnect: len(r.ReconnectUpdates), attr: len(r.AttributeUpdates), followups: n,
	}
}

// placeNames returns the names the placements would take if all fit.
func placeNames(r flatResults) []string {
	var out []string
	for _, p := range r.Place {
		out = append(out, requestNames(p)...)
	}
	sort.Strings(out)
	return out
}

// requestNames returns the names of a request's allocations, leaving the
// request as it was.
func requestNames(p placementRequest) []string {
	if p.names == nil {
		return []string{p.name}
	}
	names := *p.names
	names.used = maps.Clone(p.names.used)
	out := make([]string, p.missing)
	for i := range out {
		out[i] = names.next()
	}
	return out
}

func stopIndexes(r flatResults) []uint {
	var out []uint
	for _, s := range r.Stop {
		out = append(out, s.alloc.Index())
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func followups(r flatResults) []*structs.Evaluation {
	var out []*structs.Evaluation
	for _, evals := range r.DesiredFollowupEvals {
		out = append(out, evals...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].WaitUntil.Before(out[j].WaitUntil) })
	return out
}

// Each case is one rule of the reconciler: the setup builds the input,
// want is the shape of the answer, and check looks at the details that
// make the rule (names, descriptions, links, times).
func TestReconcile(t *testing.T) {
	cases := []struct {
		name  string
		setup func() ReconcilerInput
		want  summary
		check func(t *testing.T, in ReconcilerInput, r flatResults)
	}{
		{
			name: "initial placement fills names from zero",
			setup: func() ReconcilerInput {
				return ReconcilerInput{Job: mock.Job()}
			},
			want: summary{place: 10},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				must.Eq(t, structs.AllocName(in.Job.ID, "web", 0), placeNames(r)[0])
				must.Eq(t, uint64(10), r.DesiredTGUpdates["web"].Place)
			},
		},
		{
			name: "a completed service allocation is replaced under its name",
			setup: func() ReconcilerInput {
				job := mock.Job()
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				allocs[3].ClientStatus = structs.AllocClientStatusComplete
				return ReconcilerInput{Job: job, Allocs: allocs}
			},
			want: summary{place: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				must.Eq(t, []string{structs.AllocName(in.Job.ID, "web", 3)}, placeNames(r))
			},
		},
		{
			name: "scale up places the missing names",
			setup: func() ReconcilerInput {
				job := mock.Job()
				return ReconcilerInput{Job: job, Allocs: allocsFor(job, 5, structs.AllocClientStatusRunning)}
			},
			want: summary{place: 5},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				for i, n := range placeNames(r) {
					must.Eq(t, structs.AllocName(in.Job.ID, "web", uint(5+i)), n)
				}
				must.Eq(t, uint64(5), r.DesiredTGUpdates["web"].Ignore)
			},
		},
		{
			name: "scale down stops the highest names",
			setup: func() ReconcilerInput {
				job := mock.Job()
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				job = job.Copy()
				job.Version++
				job.JobModifyIndex++
				job.TaskGroups[0].Count = 3
				return ReconcilerInput{Job: job, Allocs: allocs}
			},
			want: summary{stop: 7, inplace: 3},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, []uint{3, 4, 5, 6, 7, 8, 9}, stopIndexes(r))
				must.Eq(t, structs.AllocNotNeeded, r.Stop[0].statusDescription)
			},
		},
		{
			name: "scale down never picks an unknown allocation",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				job.TaskGroups[0].Count = 3
				job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Replace: new(bool)}
				allocs := allocsFor(job, 5, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				unknownSinceT(allocs[3], node, testNow.Add(-time.Minute))
				unknownSinceT(allocs[4], node, testNow.Add(-time.Minute))
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{stop: 2},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, []uint{1, 2}, stopIndexes(r))
			},
		},
		{
			name: "allocations on a down node are lost and replaced under their names",
			setup: func() ReconcilerInput {
				job := mock.Job()
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				down := nodeWithStatus(structs.NodeStatusDown)
				for _, a := range allocs[:3] {
					a.NodeID = down.ID
				}
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: map[string]*structs.Node{down.ID: down}}
			},
			want: summary{place: 3, stop: 3},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				for _, s := range r.Stop {
					must.Eq(t, structs.AllocClientStatusLost, s.clientStatus)
					must.Eq(t, structs.AllocLost, s.statusDescription)
				}
				for _, p := range r.Place {
					must.NotNil(t, p.previousAlloc)
					must.Eq(t, p.previousAlloc.Name, p.name)
					must.True(t, p.lost)
				}
			},
		},
		{
			name: "allocations on a vanished node are lost",
			setup: func() ReconcilerInput {
				job := mock.Job()
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: map[string]*structs.Node{allocs[0].NodeID: nil}}
			},
			want: summary{place: 1, stop: 1},
		},
		{
			name: "a failed allocation past its delay is rescheduled now",
			setup: func() ReconcilerInput {
				job := mock.Job()
				job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant, Unlimited: true}
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				failedAt(allocs[2], testNow.Add(-10*time.Second))
				return ReconcilerInput{Job: job, Allocs: allocs}
			},
			want: summary{place: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				p := r.Place[0]
				must.Eq(t, in.Allocs[2].ID, p.previousAlloc.ID)
				must.True(t, p.reschedule)
				must.True(t, p.stopPrevious)
				must.Eq(t, structs.AllocRescheduled, p.stopDesc)
				must.Eq(t, 5*time.Second, p.rescheduleDelay)
				must.Eq(t, uint64(1), r.DesiredTGUpdates["web"].RescheduleNow)
			},
		},
		{
			name: "a failed allocation before its delay gets a follow-up evaluation",
			setup: func() ReconcilerInput {
				job := mock.Job()
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				failedAt(allocs[0], testNow.Add(-time.Second))
				return ReconcilerInput{Job: job, Allocs: allocs, EvalID: "eval-1", EvalPriority: 70}
			},
			want: summary{attr: 1, followups: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				e := followups(r)[0]
				must.Eq(t, structs.EvalTriggerRetryFailedAlloc, e.TriggeredBy)
				must.Eq(t, testNow.Add(-time.Second).Add(30*time.Second), e.WaitUntil)
				must.Eq(t, "eval-1", e.PreviousEval)
				must.Eq(t, 70, e.Priority)
				must.Eq(t, e.ID, r.AttributeUpdates[in.Allocs[0].ID].FollowupEvalID)
				must.Eq(t, uint64(1), r.DesiredTGUpdates["web"].RescheduleLater)
			},
		},
		{
			name: "the follow-up evaluation reschedules its allocation",
			setup: func() ReconcilerInput {
				job := mock.Job()
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				failedAt(allocs[0], testNow.Add(-time.Second))
				allocs[0].FollowupEvalID = "eval-2"
				return ReconcilerInput{Job: job, Allocs: allocs, EvalID: "eval-2"}
			},
			want: summary{place: 1},
		},
		{
			name: "a failed allocation with its attempts used up stays",
			setup: func() ReconcilerInput {
				job := mock.BatchJob()
				allocs := allocsFor(job, 10, structs.AllocClientStatusComplete)
				failedAt(allocs[0], testNow.Add(-time.Hour))
				allocs[0].RescheduleTracker = &structs.RescheduleTracker{Events: []*structs.RescheduleEvent{{RescheduleTime: testNow.Add(-2 * time.Hour).UnixNano(), Delay: 5 * time.Second}}}
				return ReconcilerInput{Job: job, Allocs: allocs}
			},
			want: summary{},
		},
		{
			name: "a task change is a destructive update",
			setup: func() ReconcilerInput {
				job := mock.Job()
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				job = job.Copy()
				job.Version++
				job.JobModifyIndex++
				job.TaskGroups[0].Tasks[0].Config["run_for"] = "1s"
				return ReconcilerInput{Job: job, Allocs: allocs}
			},
			want: summary{destructive: 10},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				for _, d := range r.DestructiveUpdate {
					must.True(t, d.stopPrevious)
					must.Eq(t, structs.AllocUpdating, d.stopDesc)
					must.Eq(t, d.previousAlloc.Name, d.name)
				}
			},
		},
		{
			name: "count, meta and disconnect changes are in place",
			setup: func() ReconcilerInput {
				job := mock.Job()
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				job = job.Copy()
				job.Version++
				job.JobModifyIndex++
				job.Meta["owner"] = "someone-else"
				job.TaskGroups[0].Meta = map[string]string{"k": "v"}
				withWindow(job, time.Hour)
				return ReconcilerInput{Job: job, Allocs: allocs, EvalID: "eval-3"}
			},
			want: summary{inplace: 10},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				for _, a := range r.InplaceUpdate {
					must.Eq(t, in.Job, a.Job)
					must.Eq(t, "eval-3", a.EvalID)
				}
			},
		},
		{
			name: "a stopped job stops every live allocation, unknown ones too",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				unknownSinceT(allocs[0], node, testNow.Add(-time.Minute))
				allocs[1].ClientStatus = structs.AllocClientStatusComplete
				job = job.Copy()
				job.Stop = true
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{stop: 9},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, structs.AllocJobStopped, r.Stop[0].statusDescription)
			},
		},
		{
			name: "a purged job stops everything",
			setup: func() ReconcilerInput {
				job := mock.Job()
				return ReconcilerInput{Allocs: allocsFor(job, 4, structs.AllocClientStatusRunning)}
			},
			want: summary{stop: 4},
		},
		{
			name: "running on a disconnected node with a window is marked unknown",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				allocs[0].NodeID, allocs[1].NodeID = node.ID, node.ID
				return ReconcilerInput{Job: job, Allocs: allocs, Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			// The default service policy waits 30s before a replacement:
			// one batched follow-up for the timeout, one for the replacement.
			want: summary{disconnect: 2, followups: 2},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				evals := followups(r)
				must.Eq(t, structs.EvalTriggerRetryFailedAlloc, evals[0].TriggeredBy)
				must.Eq(t, testNow.Add(30*time.Second), evals[0].WaitUntil)
				must.Eq(t, structs.EvalTriggerMaxDisconnectTimeout, evals[1].TriggeredBy)
				must.Eq(t, testNow.Add(time.Hour), evals[1].WaitUntil)
				for _, a := range in.Allocs[:2] {
					u := r.DisconnectUpdates[a.ID]
					must.Eq(t, structs.AllocClientStatusUnknown, u.ClientStatus)
					must.Eq(t, structs.AllocUnknown, u.ClientDescription)
					must.Eq(t, structs.AllocDesiredStatusRun, u.DesiredStatus)
					last := u.AllocStates[len(u.AllocStates)-1]
					must.Eq(t, structs.AllocClientStatusUnknown, last.Value)
					must.Eq(t, testNow, last.Time)
					must.Eq(t, evals[1].ID, u.FollowupEvalID)
					must.Eq(t, structs.AllocClientStatusRunning, a.ClientStatus, must.Sprint("input not mutated"))
				}
				must.Eq(t, uint64(2), r.DesiredTGUpdates["web"].Disconnect)
			},
		},
		{
			name: "disconnecting with a zero reschedule delay is replaced at once, original kept",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{DelayFunction: structs.DelayFunctionConstant, Unlimited: true}
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				allocs[0].NodeID = node.ID
				return ReconcilerInput{Job: job, Allocs: allocs, Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{disconnect: 1, place: 1, followups: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				p := r.Place[0]
				must.True(t, p.keepPrevious)
				must.False(t, p.stopPrevious)
				must.Eq(t, in.Allocs[0].ID, p.previousAlloc.ID)
				must.Eq(t, structs.AllocClientStatusUnknown, p.previousAlloc.ClientStatus)
			},
		},
		{
			name: "pending on a disconnected node is lost",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				allocs[0].NodeID = node.ID
				allocs[0].ClientStatus = structs.AllocClientStatusPending
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{stop: 1, place: 1},
		},
		{
			name: "a group without a window on a disconnected node is lost",
			setup: func() ReconcilerInput {
				job := mock.Job()
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				allocs[0].NodeID = node.ID
				return ReconcilerInput{Job: job, Allocs: allocs, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{stop: 1, place: 1},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, structs.AllocClientStatusLost, r.Stop[0].clientStatus)
			},
		},
		{
			name: "unknown within its window and replace=false is left alone",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Replace: new(bool)}
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				unknownSinceT(allocs[0], node, testNow.Add(-10*time.Minute))
				return ReconcilerInput{Job: job, Allocs: allocs, Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, uint64(10), r.DesiredTGUpdates["web"].Ignore)
			},
		},
		{
			name: "unknown past its reschedule delay is replaced, original kept",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				unknownSinceT(allocs[0], node, testNow.Add(-10*time.Minute))
				return ReconcilerInput{Job: job, Allocs: allocs, Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{place: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				must.True(t, r.Place[0].keepPrevious)
				must.Eq(t, in.Allocs[0].Name, r.Place[0].name)
			},
		},
		{
			name: "scale down keeps an unknown original instead of replacing it",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				unknownSinceT(allocs[0], node, testNow.Add(-10*time.Minute))
				job = job.Copy()
				job.TaskGroups[0].Count = 9
				return ReconcilerInput{Job: job, Allocs: allocs, Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{stop: 1},
			check: func(t *testing.T, _ ReconcilerInput, r flatResults) {
				must.Eq(t, []uint{9}, stopIndexes(r))
				must.Eq(t, uint64(0), r.DesiredTGUpdates["web"].RescheduleNow)
			},
		},
		{
			name: "unknown and already replaced waits without counting",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				unknownSinceT(allocs[0], node, testNow.Add(-10*time.Minute))
				repl := allocsFor(job, 1, structs.AllocClientStatusRunning)[0]
				repl.PreviousAllocation = allocs[0].ID
				allocs[0].NextAllocation = repl.ID
				return ReconcilerInput{Job: job, Allocs: append(allocs, repl), Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{},
		},
		{
			name: "alloc stop of an unknown allocation with a live replacement stops it and places nothing",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				unknownSinceT(allocs[0], node, testNow.Add(-10*time.Minute))
				yes := true
				allocs[0].DesiredTransition.Migrate = &yes
				repl := allocsFor(job, 1, structs.AllocClientStatusRunning)[0]
				repl.PreviousAllocation = allocs[0].ID
				allocs[0].NextAllocation = repl.ID
				return ReconcilerInput{Job: job, Allocs: append(allocs, repl), Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{stop: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				must.Eq(t, in.Allocs[0].ID, r.Stop[0].alloc.ID)
				must.Eq(t, structs.AllocStopped, r.Stop[0].statusDescription)
			},
		},
		{
			name: "unknown whose replacement is gone counts again",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Replace: new(bool)}
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				unknownSinceT(allocs[0], node, testNow.Add(-10*time.Minute))
				repl := allocsFor(job, 1, structs.AllocClientStatusRunning)[0]
				repl.PreviousAllocation = allocs[0].ID
				repl.DesiredStatus = structs.AllocDesiredStatusStop
				allocs[0].NextAllocation = repl.ID
				return ReconcilerInput{Job: job, Allocs: append(allocs, repl), Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{},
		},
		{
			name: "running again but unresolved, then disconnected again: marked, not replaced twice",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				job.TaskGroups[0].ReschedulePolicy = &structs.ReschedulePolicy{DelayFunction: structs.DelayFunctionConstant, Unlimited: true}
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				allocs[0].NodeID = node.ID
				allocs[0].AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: testNow.Add(-time.Hour)}}
				repl := allocsFor(job, 1, structs.AllocClientStatusRunning)[0]
				repl.PreviousAllocation = allocs[0].ID
				return ReconcilerInput{Job: job, Allocs: append(allocs[1:], repl, allocs[0]), Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{disconnect: 1, followups: 1},
		},
		{
			name: "unknown past its window expires: stopped as lost and replaced",
			setup: func() ReconcilerInput {
				job := withWindow(mock.Job(), time.Hour)
				job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Replace: new(bool)}
				allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
				node := nodeWithStatus(structs.NodeStatusDisconnected)
				unknownSinceT(allocs[0], node, testNow.Add(-2*time.Hour))
				return ReconcilerInput{Job: job, Allocs: allocs, Now: testNow, TaintedNodes: map[string]*structs.Node{node.ID: node}}
			},
			want: summary{stop: 1, place: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				must.Eq(t, in.Allocs[0].ID, r.Stop[0].alloc.ID)
				must.Eq(t, structs.AllocClientStatusLost, r.Stop[0].clientStatus)
				must.Eq(t, structs.AllocLost, r.Stop[0].statusDescription)
				must.Eq(t, in.Allocs[0].Name, r.Place[0].name)
			},
		},
		{
			name: "batch: complete allocations are never replaced",
			setup: func() ReconcilerInput {
				job := mock.BatchJob()
				allocs := allocsFor(job, 10, structs.AllocClientStatusComplete)
				allocs[0].DesiredStatus = structs.AllocDesiredStatusStop
				return ReconcilerInput{Job: job, Allocs: allocs}
			},
			want: summary{},
		},
		{
			name: "reconnect, best_score: a better-scored running replacement wins",
			setup: func() ReconcilerInput {
				in, o, r := reconnectFixture(structs.ReconcileOptionBestScore)
				o.Metrics.ScoreMetaData = []*structs.NodeScoreMeta{{NodeID: o.NodeID, NormScore: 0.2}}
				r.Metrics.ScoreMetaData = []*structs.NodeScoreMeta{{NodeID: r.NodeID, NormScore: 0.5}}
				return in
			},
			want: summary{stop: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				must.Eq(t, in.Allocs[0].ID, r.Stop[0].alloc.ID)
				must.Eq(t, structs.AllocNotNeeded, r.Stop[0].statusDescription)
			},
		},
		{
			name: "reconnect, best_score tie keeps the original",
			setup: func() ReconcilerInput {
				in, _, _ := reconnectFixture(structs.ReconcileOptionBestScore)
				return in
			},
			want: summary{stop: 1, reconnect: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				o := in.Allocs[0]
				must.Eq(t, structs.AllocReconnected, r.Stop[0].statusDescription)
				must.NotEq(t, o.ID, r.Stop[0].alloc.ID)
				kept := r.ReconnectUpdates[o.ID]
				must.False(t, kept.NeedsToReconnect(), must.Sprint("kept original no longer reconnecting"))
			},
		},
		{
			name: "reconnect, keep_replacement",
			setup: func() ReconcilerInput {
				in, _, _ := reconnectFixture(structs.ReconcileOptionKeepReplacement)
				return in
			},
			want: summary{stop: 1},
		},
		{
			name: "reconnect, the chain is walked past a finished replacement",
			setup: func() ReconcilerInput {
				in, o, r1 := reconnectFixture(structs.ReconcileOptionKeepReplacement)
				failedAt(r1, testNow.Add(-time.Hour))
				r1.DesiredStatus = structs.AllocDesiredStatusStop
				r2 := allocsFor(in.Job, 1, structs.AllocClientStatusRunning)[0]
				r2.PreviousAllocation = r1.ID
				in.Allocs = append(in.Allocs, r2)
				_ = o
				return in
			},
			want: summary{stop: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				must.Eq(t, in.Allocs[0].ID, r.Stop[0].alloc.ID)
			},
		},
		{
			name: "reconnect, failed while away: stopped as failed, replacement stays",
			setup: func() ReconcilerInput {
				in, o, _ := reconnectFixture(structs.ReconcileOptionKeepOriginal)
				failedAt(o, testNow.Add(-time.Minute))
				return in
			},
			want: summary{stop: 1},
			check: func(t *testing.T, in ReconcilerInput, r flatResults) {
				must.Eq(t, in.Allocs[0].ID, r.Stop[0].alloc.ID)
				must.Eq(t, structs.AllocClientStatusFailed, r.Stop[0].clientStatus)
				must.Eq(t, structs.AllocRescheduled, r.Stop[0].statusDescription)
			},
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

// reconnectFixture: a group of one with a window; the original O came back
// running on a ready node after being unknown, and its replacement R runs.
// Allocs[0] is O.
func reconnectFixture(strategy string) (ReconcilerInput, *structs.Allocation, *structs.Allocation) {
	job := withWindow(mock.Job(), time.Hour)
	job.TaskGroups[0].Count = 1
	job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{Reconcile: strategy}
	o := allocsFor(job, 1, structs.AllocClientStatusRunning)[0]
	o.AllocStates = []*structs.AllocState{{Field: structs.AllocStateFieldClientStatus, Value: structs.AllocClientStatusUnknown, Time: testNow.Add(-10 * time.Minute)}}
	r := allocsFor(job, 1, structs.AllocClientStatusRunning)[0]
	r.PreviousAllocation = o.ID
	o.NextAllocation = r.ID
	return ReconcilerInput{Job: job, Allocs: []*structs.Allocation{o, r}, Now: testNow}, o, r
}

// Follow-ups whose times fall within the batch window share one
// evaluation; later ones get their own.
func TestReconcile_FollowupsBatched(t *testing.T) {
	job := mock.Job()
	allocs := allocsFor(job, 10, structs.AllocClientStatusRunning)
	failedAt(allocs[0], testNow.Add(-2*time.Second))
	failedAt(allocs[1], testNow.Add(-time.Second))
	failedAt(allocs[2], testNow.Add(20*time.Second))
	r := reconcileChecked(t, ReconcilerInput{Job: job, Allocs: allocs, Now: testNow})
	evals := followups(r)
	must.Len(t, 2, evals)
	must.Eq(t, r.AttributeUpdates[allocs[0].ID].FollowupEvalID, r.AttributeUpdates[allocs[1].ID].FollowupEvalID)
	must.NotEq(t, r.AttributeUpdates[allocs[0].ID].FollowupEvalID, r.AttributeUpdates[allocs[2].ID].FollowupEvalID)
}
