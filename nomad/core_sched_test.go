package nomad

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var gcT0 = time.Unix(1_700_000_000, 0)

// gcWorld builds state for the collector's decisions, every object
// stamped with the time the test says.
type gcWorld struct {
	t     *testing.T
	st    *state.StateStore
	index uint64
}

func newGCWorld(t *testing.T) *gcWorld {
	st, err := state.NewStateStore(nil)
	must.NoError(t, err)
	return &gcWorld{t: t, st: st, index: 100}
}

func (w *gcWorld) next() uint64 { w.index++; return w.index }

func (w *gcWorld) job(job *structs.Job, at time.Time) *structs.Job {
	w.t.Helper()
	must.NoError(w.t, w.st.UpsertJob(w.next(), at.UnixNano(), job))
	return job
}

// stop marks the job stopped at at, as Job.Deregister does.
func (w *gcWorld) stop(job *structs.Job, at time.Time) *structs.Job {
	w.t.Helper()
	stopped := job.Copy()
	stopped.Stop = true
	return w.job(stopped, at)
}

func (w *gcWorld) eval(job *structs.Job, status string, at time.Time) *structs.Evaluation {
	w.t.Helper()
	ev := job.NewEval(structs.EvalTriggerJobRegister, at)
	ev.Status = status
	must.NoError(w.t, w.st.UpsertEvals(w.next(), []*structs.Evaluation{ev}))
	return ev
}

// alloc stores an allocation of job placed by ev on nodeID with the given
// statuses, last changed at at.
func (w *gcWorld) alloc(job *structs.Job, ev *structs.Evaluation, nodeID, client, desired string, at time.Time) *structs.Allocation {
	w.t.Helper()
	a := mock.Alloc()
	a.Job, a.JobID, a.Namespace = job, job.ID, job.Namespace
	a.TaskGroup = job.TaskGroups[0].Name
	a.EvalID, a.NodeID = ev.ID, nodeID
	a.ClientStatus, a.DesiredStatus = client, desired
	a.CreateTime, a.ModifyTime = at.UnixNano(), at.UnixNano()
	must.NoError(w.t, w.st.UpsertAllocs(w.next(), []*structs.Allocation{a}))
	return a
}

func (w *gcWorld) node(status string, at time.Time) *structs.Node {
	w.t.Helper()
	n := mock.Node()
	n.Status, n.StatusUpdatedAt = status, at.Unix()
	must.NoError(w.t, w.st.UpsertNode(w.next(), n))
	return n
}

// find runs one collection's decision at now with threshold.
func (w *gcWorld) find(kind gcKind, now time.Time, threshold time.Duration) *garbage {
	w.t.Helper()
	snap, err := w.st.Snapshot()
	must.NoError(w.t, err)
	g, err := (&gcPass{snap: snap, now: now, cutoff: now.Add(-threshold)}).find(kind)
	must.NoError(w.t, err)
	return g
}

// forced runs one collection's decision ignoring thresholds.
func (w *gcWorld) forced(kind gcKind) *garbage {
	w.t.Helper()
	snap, err := w.st.Snapshot()
	must.NoError(w.t, err)
	g, err := (&gcPass{snap: snap, now: gcT0, cutoff: gcForever}).find(kind)
	must.NoError(w.t, err)
	return g
}

// apply removes g as the FSM would, in gcRequests' order.
func (w *gcWorld) apply(g *garbage) {
	w.t.Helper()
	for _, req := range gcRequests(g, 3) {
		switch m := req.msg.(type) {
		case *structs.EvalDeleteRequest:
			must.NoError(w.t, w.st.DeleteEval(w.next(), m.Evals, m.Allocs))
		case *structs.JobBatchDeregisterRequest:
			_, err := w.st.DeleteDeadJobs(w.next(), m.Jobs)
			must.NoError(w.t, err)
		case *structs.NodeBatchDeregisterRequest:
			_, err := w.st.DeleteDownNodes(w.next(), m.Nodes)
			must.NoError(w.t, err)
		case *structs.DeploymentDeleteRequest:
			_, err := w.st.DeleteDeployments(w.next(), m.Deployments)
			must.NoError(w.t, err)
		}
	}
}

// deployment stores a deployment of job with status, last changed at at.
func (w *gcWorld) deployment(job *structs.Job, status string, at time.Time) *structs.Deployment {
	w.t.Helper()
	d := structs.NewDeployment(job, 50, at)
	d.Status = status
	d.CreateTime, d.ModifyTime = at.UnixNano(), at.UnixNano()
	must.NoError(w.t, w.st.UpsertDeployment(w.next(), d))
	return d
}

// deployed stores an allocation placed by deployment d.
func (w *gcWorld) deployed(d *structs.Deployment, job *structs.Job, client string, at time.Time) *structs.Allocation {
	w.t.Helper()
	ev := w.eval(job, structs.EvalStatusComplete, at)
	a := w.alloc(job, ev, "n1", client, structs.AllocDesiredStatusRun, at)
	a = a.Copy()
	a.DeploymentID = d.ID
	must.NoError(w.t, w.st.UpsertAllocs(w.next(), []*structs.Allocation{a}))
	return a
}

func sorted(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }

// Terminal evaluations and their finished allocations go once older than
// eval_gc_threshold, counted from their last change; an evaluation with an
// allocation still running stays, though its finished siblings go; a
// pending evaluation stays whatever its age.
func TestGC_EvalsPastThreshold(t *testing.T) {
	w := newGCWorld(t)
	job := w.job(mock.Job(), gcT0)
	done := w.eval(job, structs.EvalStatusComplete, gcT0)
	doneAlloc := w.alloc(job, done, "n1", structs.AllocClientStatusComplete, structs.AllocDesiredStatusRun, gcT0)
	mixed := w.eval(job, structs.EvalStatusComplete, gcT0)
	mixedDone := w.alloc(job, mixed, "n1", structs.AllocClientStatusFailed, structs.AllocDesiredStatusStop, gcT0)
	w.alloc(job, mixed, "n1", structs.AllocClientStatusRunning, structs.AllocDesiredStatusRun, gcT0)
	w.eval(job, structs.EvalStatusPending, gcT0.Add(-48*time.Hour))

	g := w.find(gcEvals, gcT0.Add(59*time.Minute), time.Hour)
	must.True(t, g.empty(), must.Sprintf("nothing is an hour old yet: %+v", g))

	g = w.find(gcEvals, gcT0.Add(61*time.Minute), time.Hour)
	must.Eq(t, []string{done.ID}, g.evals)
	must.Eq(t, sorted(doneAlloc.ID, mixedDone.ID), sorted(g.allocs...))
}

// The heart of this project: an unknown allocation may be running on a
// client that will come back, so neither it, nor the evaluation that
// placed it, nor its job, nor its node is ever collected, not even by a
// forced collection, and not when the scheduler has already stopped it
// (desired stop is the servers' wish, not the client's word). A
// disconnected node is not down and stays too. Once the allocation is
// lost, everything goes.
func TestGC_UnknownNeverCollected(t *testing.T) {
	w := newGCWorld(t)
	ancient := gcT0.Add(-30 * 24 * time.Hour)
	down := w.node(structs.NodeStatusDown, ancient)
	disconnected := w.node(structs.NodeStatusDisconnected, ancient)
	job := w.job(mock.Job(), ancient)
	ev := w.eval(job, structs.EvalStatusComplete, ancient)
	stoppedUnknown := w.alloc(job, ev, down.ID, structs.AllocClientStatusUnknown, structs.AllocDesiredStatusStop, ancient)
	job = w.stop(job, ancient)
	stopEval := w.eval(job, structs.EvalStatusComplete, ancient)
	other := w.job(mock.Job(), ancient)
	otherEval := w.eval(other, structs.EvalStatusComplete, ancient)
	w.alloc(other, otherEval, disconnected.ID, structs.AllocClientStatusUnknown, structs.AllocDesiredStatusRun, ancient)

	stored, err := w.st.JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Eq(t, structs.JobStatusDead, stored.Status, must.Sprint("a stopped unknown allocation counts as terminal for the job status"))

	for _, kind := range []gcKind{gcJobs, gcNodes} {
		g := w.forced(kind)
		must.True(t, g.empty(), must.Sprintf("%s must find nothing: %+v", kind, g))
	}
	g := w.forced(gcEvals)
	must.SliceEmpty(t, g.allocs)
	must.Eq(t, []string{stopEval.ID}, g.evals, must.Sprint("only the stop evaluation, which placed nothing"))

	// The scheduler gives up on it: lost is terminal.
	lost := stoppedUnknown.CopySkipJob()
	lost.ClientStatus = structs.AllocClientStatusLost
	must.NoError(t, w.st.UpsertAllocs(w.next(), []*structs.Allocation{lost}))

	g = w.forced(gcJobs)
	must.Eq(t, []structs.NamespacedID{job.NamespacedID()}, g.jobs)
	must.Eq(t, sorted(ev.ID, stopEval.ID), sorted(g.evals...))
	must.Eq(t, []string{stoppedUnknown.ID}, g.allocs)
	w.apply(g)
	g = w.forced(gcNodes)
	must.Eq(t, map[string]uint64{down.ID: down.ModifyIndex}, g.nodes, must.Sprint("the down node goes; the disconnected one stays"))
}

// A down node goes once down longer than node_gc_threshold, counted from
// when it went down, when all it holds is finished: its complete, failed
// and lost allocations do not keep it. A ready node never goes.
func TestGC_DownNodeWithTerminalAllocsAfterThreshold(t *testing.T) {
	w := newGCWorld(t)
	node := w.node(structs.NodeStatusDown, gcT0)
	w.node(structs.NodeStatusReady, gcT0.Add(-365*24*time.Hour))
	job := w.job(mock.Job(), gcT0)
	ev := w.eval(job, structs.EvalStatusComplete, gcT0)
	for _, status := range []string{structs.AllocClientStatusComplete, structs.AllocClientStatusFailed, structs.AllocClientStatusLost} {
		w.alloc(job, ev, node.ID, status, structs.AllocDesiredStatusStop, gcT0)
	}

	must.True(t, w.find(gcNodes, gcT0.Add(23*time.Hour), 24*time.Hour).empty())
	g := w.find(gcNodes, gcT0.Add(25*time.Hour), 24*time.Hour)
	must.Eq(t, map[string]uint64{node.ID: node.ModifyIndex}, g.nodes)
	w.apply(g)
	gone, err := w.st.NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Nil(t, gone)
}

// A batch job that is not stopped keeps the allocations of its current
// version, and so their evaluation: without them the scheduler would see
// the work as never done and run it again. Older versions' go with
// eval_gc_threshold; the dead job goes whole with job_gc_threshold.
func TestGC_BatchJobKeepsCurrentVersion(t *testing.T) {
	w := newGCWorld(t)
	job := w.job(mock.BatchJob(), gcT0)
	e1 := w.eval(job, structs.EvalStatusComplete, gcT0)
	a1 := w.alloc(job, e1, "n1", structs.AllocClientStatusComplete, structs.AllocDesiredStatusRun, gcT0)
	v2 := job.Copy()
	v2.Meta = map[string]string{"version": "2"}
	v2 = w.job(v2, gcT0)
	e2 := w.eval(v2, structs.EvalStatusComplete, gcT0)
	a2 := w.alloc(v2, e2, "n1", structs.AllocClientStatusComplete, structs.AllocDesiredStatusRun, gcT0)

	g := w.find(gcEvals, gcT0.Add(2*time.Hour), time.Hour)
	must.Eq(t, []string{e1.ID}, g.evals)
	must.Eq(t, []string{a1.ID}, g.allocs)
	w.apply(g)

	must.True(t, w.find(gcJobs, gcT0.Add(3*time.Hour), 4*time.Hour).empty())
	g = w.find(gcJobs, gcT0.Add(5*time.Hour), 4*time.Hour)
	must.Eq(t, []structs.NamespacedID{v2.NamespacedID()}, g.jobs)
	must.Eq(t, []string{e2.ID}, g.evals)
	must.Eq(t, []string{a2.ID}, g.allocs)
}

// A finished replacement between an unknown original and its live
// successor stays: the scheduler links a chain through PreviousAllocation,
// and collecting the middle member would make the original and the
// successor look like two instances when the original comes back. Once
// the original is lost, the middle member goes.
func TestGC_ChainWithUnknownMemberHeld(t *testing.T) {
	w := newGCWorld(t)
	job := w.job(mock.Job(), gcT0)
	ev := w.eval(job, structs.EvalStatusComplete, gcT0)
	original := w.alloc(job, ev, "n1", structs.AllocClientStatusUnknown, structs.AllocDesiredStatusRun, gcT0)
	middle := mock.Alloc()
	middle.Job, middle.JobID, middle.TaskGroup, middle.EvalID, middle.NodeID = job, job.ID, job.TaskGroups[0].Name, ev.ID, "n2"
	middle.ClientStatus, middle.DesiredStatus = structs.AllocClientStatusFailed, structs.AllocDesiredStatusStop
	middle.PreviousAllocation = original.ID
	must.NoError(t, w.st.UpsertAllocs(w.next(), []*structs.Allocation{middle}))
	last := mock.Alloc()
	last.Job, last.JobID, last.TaskGroup, last.EvalID, last.NodeID = job, job.ID, job.TaskGroups[0].Name, ev.ID, "n3"
	last.ClientStatus = structs.AllocClientStatusRunning
	last.PreviousAllocation = middle.ID
	must.NoError(t, w.st.UpsertAllocs(w.next(), []*structs.Allocation{last}))
	unrelated := w.alloc(job, ev, "n4", structs.AllocClientStatusComplete, structs.AllocDesiredStatusStop, gcT0)

	must.Eq(t, []string{unrelated.ID}, w.forced(gcEvals).allocs)

	lost := original.CopySkipJob()
	lost.ClientStatus = structs.AllocClientStatusLost
	must.NoError(t, w.st.UpsertAllocs(w.next(), []*structs.Allocation{lost}))
	must.Eq(t, sorted(original.ID, middle.ID, unrelated.ID), sorted(w.forced(gcEvals).allocs...))
}

// A failed allocation its job will still reschedule stays even in a
// forced collection: its replacement inherits its reschedule history.
// Once replaced, it goes.
func TestGC_FailedAllocAwaitingRescheduleStays(t *testing.T) {
	w := newGCWorld(t)
	job := w.job(mock.Job(), gcT0) // service: unlimited reschedules
	ev := w.eval(job, structs.EvalStatusComplete, gcT0)
	w.alloc(job, ev, "n1", structs.AllocClientStatusRunning, structs.AllocDesiredStatusRun, gcT0)
	failed := w.alloc(job, ev, "n1", structs.AllocClientStatusFailed, structs.AllocDesiredStatusRun, gcT0)
	must.True(t, w.forced(gcEvals).empty())

	replaced := failed.CopySkipJob()
	replaced.NextAllocation = structs.GenerateUUID()
	must.NoError(t, w.st.UpsertAllocs(w.next(), []*structs.Allocation{replaced}))
	must.Eq(t, []string{failed.ID}, w.forced(gcEvals).allocs)
}

// A dead job goes whole or not at all, and only once everything of it is
// older than job_gc_threshold; a dead service job that was never stopped
// stays, as upstream.
func TestGC_JobsWhole(t *testing.T) {
	w := newGCWorld(t)
	job := w.job(mock.Job(), gcT0)
	ev := w.eval(job, structs.EvalStatusComplete, gcT0)
	w.alloc(job, ev, "n1", structs.AllocClientStatusComplete, structs.AllocDesiredStatusStop, gcT0)
	late := w.alloc(job, ev, "n1", structs.AllocClientStatusComplete, structs.AllocDesiredStatusStop, gcT0.Add(3*time.Hour))
	job = w.stop(job, gcT0)

	finished := w.job(mock.Job(), gcT0)
	fev := w.eval(finished, structs.EvalStatusComplete, gcT0)
	w.alloc(finished, fev, "n1", structs.AllocClientStatusComplete, structs.AllocDesiredStatusRun, gcT0)

	must.True(t, w.find(gcJobs, gcT0.Add(5*time.Hour), 4*time.Hour).empty(),
		must.Sprint("one allocation changed 2h ago: the job waits for it"))
	g := w.find(gcJobs, gcT0.Add(8*time.Hour), 4*time.Hour)
	must.Eq(t, []structs.NamespacedID{job.NamespacedID()}, g.jobs)
	must.Len(t, 2, g.allocs)
	must.SliceContains(t, g.allocs, late.ID)
	w.apply(g)
	gone, err := w.st.JobByID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.Nil(t, gone)
	must.True(t, w.forced(gcJobs).empty(), must.Sprint("the never-stopped dead service job stays"))
}

// A node that flaps for a week (disconnected and back every half hour,
// each time with an evaluation) reaches a steady size with the periodic
// collections running: a bounded event history, a bounded status history
// on its allocation, and only the last hour's evaluations.
func TestGC_FlappingNodeStateStaysBounded(t *testing.T) {
	w := newGCWorld(t)
	node := w.node(structs.NodeStatusReady, gcT0)
	job := w.job(mock.Job(), gcT0)
	place := w.eval(job, structs.EvalStatusComplete, gcT0)
	alloc := w.alloc(job, place, node.ID, structs.AllocClientStatusRunning, structs.AllocDesiredStatusRun, gcT0)
	now := gcT0
	for step := range 7 * 24 * 2 {
		now = now.Add(30 * time.Minute)
		for _, status := range []string{structs.NodeStatusDisconnected, structs.NodeStatusReady} {
			must.NoError(t, w.st.UpdateNodeStatus(w.next(), node.ID, status, now.Unix(),
				structs.NewNodeEvent(structs.NodeEventSubsystemCluster, "status "+status, now)))
			stored, err := w.st.AllocByID(nil, alloc.ID)
			must.NoError(t, err)
			u := stored.CopySkipJob()
			u.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, now)
			must.NoError(t, w.st.UpsertPlanResults(w.next(), &structs.ApplyPlanResultsRequest{AllocsUpdated: []*structs.Allocation{u}, UpdatedAt: now.UnixNano()}))
			w.eval(job, structs.EvalStatusComplete, now)
		}
		if step%2 == 1 { // the 5-minute collections, sampled hourly
			w.apply(w.find(gcEvals, now, time.Hour))
		}
	}
	n, err := w.st.NodeByID(nil, node.ID)
	must.NoError(t, err)
	must.Len(t, structs.MaxRetainedNodeEvents, n.Events)
	a, err := w.st.AllocByID(nil, alloc.ID)
	must.NoError(t, err)
	must.Len(t, structs.MaxRetainedAllocStates, a.AllocStates)
	evals, err := w.st.EvalsByJob(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	must.LessEq(t, 5, len(evals), must.Sprint("the placing evaluation and the last hour's four"))
}

// Removals are split into raft entries of bounded size, every ID in
// exactly one, allocations before any evaluation and both before jobs and
// nodes, so a leader that dies midway never strands an allocation whose
// evaluation is gone.
func TestGCRequests_BoundedAndOrdered(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		idsOf := func(prefix string, n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = prefix + string(rune('a'+i%26)) + string(rune('0'+i/26))
			}
			return out
		}
		g := &garbage{
			allocs: idsOf("alloc-", rapid.IntRange(0, 40).Draw(t, "allocs")),
			evals:  idsOf("eval-", rapid.IntRange(0, 40).Draw(t, "evals")),
			nodes:  map[string]uint64{},
		}
		for _, id := range idsOf("job-", rapid.IntRange(0, 20).Draw(t, "jobs")) {
			g.jobs = append(g.jobs, structs.NamespacedID{ID: id, Namespace: "default"})
		}
		for _, id := range idsOf("node-", rapid.IntRange(0, 20).Draw(t, "nodes")) {
			g.nodes[id] = 1
		}
		g.deployments = idsOf("deploy-", rapid.IntRange(0, 20).Draw(t, "deployments"))
		size := rapid.IntRange(1, 12).Draw(t, "batch size")

		var seen []string
		stage := 0 // 0 allocs, 1 evals, 2 jobs and nodes
		for _, req := range gcRequests(g, size) {
			var n int
			switch m := req.msg.(type) {
			case *structs.EvalDeleteRequest:
				if len(m.Allocs) > 0 && stage > 0 {
					t.Fatalf("allocations after evaluations")
				}
				if len(m.Evals) > 0 {
					stage = max(stage, 1)
				}
				if stage > 1 {
					t.Fatalf("evaluation entry after job or node entries")
				}
				seen = append(append(seen, m.Allocs...), m.Evals...)
				n = len(m.Allocs) + len(m.Evals)
			case *structs.JobBatchDeregisterRequest:
				stage = 2
				for _, j := range m.Jobs {
					seen = append(seen, j.ID)
				}
				n = len(m.Jobs)
			case *structs.NodeBatchDeregisterRequest:
				stage = 2
				for id := range m.Nodes {
					seen = append(seen, id)
				}
				n = len(m.Nodes)
			case *structs.DeploymentDeleteRequest:
				stage = 2
				seen = append(seen, m.Deployments...)
				n = len(m.Deployments)
			}
			if n == 0 || n > size {
				t.Fatalf("entry of %d IDs with batch size %d", n, size)
			}
		}
		want := append(append([]string(nil), g.allocs...), g.evals...)
		for _, j := range g.jobs {
			want = append(want, j.ID)
		}
		for id := range g.nodes {
			want = append(want, id)
		}
		want = append(want, g.deployments...)
		must.Eq(t, sorted(want...), sorted(seen...))
	})
}

// Every job update deploys, and a long-lived edge job is updated for
// years: finished deployments go once older than deployment_gc_threshold
// (counted from their last status change), so the table stays bounded.
// What stays whatever its age: an active deployment, a job's newest (what
// `job status` shows as the latest deployment), and one whose allocations
// are live, unknown included (the allocation may come back and be
// resolved against it). The state store decides again when it applies
// the removal.
func TestGC_DeploymentsPastThreshold(t *testing.T) {
	w := newGCWorld(t)
	old := gcT0.Add(-2 * time.Hour)
	job := w.job(mock.Job(), old)
	done := w.deployment(job, structs.DeploymentStatusSuccessful, old)
	w.deployed(done, job, structs.AllocClientStatusComplete, old)
	failed := w.deployment(job, structs.DeploymentStatusFailed, old)
	heldByUnknown := w.deployment(job, structs.DeploymentStatusCancelled, old)
	w.deployed(heldByUnknown, job, structs.AllocClientStatusUnknown, old)
	young := w.deployment(job, structs.DeploymentStatusSuccessful, gcT0.Add(-10*time.Minute))
	w.deployment(job, structs.DeploymentStatusRunning, old) // newest, and active

	other := w.job(mock.Job(), old)
	latest := w.deployment(other, structs.DeploymentStatusSuccessful, old)

	g := w.find(gcDeployments, gcT0, time.Hour)
	must.Eq(t, sorted(done.ID, failed.ID), sorted(g.deployments...))
	must.SliceEmpty(t, g.allocs, must.Sprint("deployments go alone; their allocations are the evaluation collector's"))

	w.apply(g)
	for _, gone := range []*structs.Deployment{done, failed} {
		d, err := w.st.DeploymentByID(nil, gone.ID)
		must.NoError(t, err)
		must.Nil(t, d)
	}
	for _, kept := range []*structs.Deployment{heldByUnknown, young, latest} {
		d, err := w.st.DeploymentByID(nil, kept.ID)
		must.NoError(t, err)
		must.NotNil(t, d, must.Sprintf("deployment %s kept", kept.ID))
	}
	must.Eq(t, []string{young.ID}, w.forced(gcDeployments).deployments, must.Sprint("a forced collection ignores the threshold, nothing else"))

	// Decided on a snapshot, applied later: a deployment that is now its
	// job's newest, or has a live allocation again, is not removed.
	stale := w.find(gcDeployments, gcT0.Add(time.Hour), time.Hour)
	must.Eq(t, []string{young.ID}, stale.deployments)
	w.deployed(young, job, structs.AllocClientStatusRunning, gcT0)
	deleted, err := w.st.DeleteDeployments(w.next(), stale.deployments)
	must.NoError(t, err)
	must.SliceEmpty(t, deleted)
}

// waitGone waits, on the store's watch channels, until every lookup
// returns nothing.
func waitGone(t *testing.T, what string, lookups ...func(memdb.WatchSet) (bool, error)) {
	t.Helper()
	waitState(t, what, func(ws memdb.WatchSet) (bool, string) {
		left := 0
		for _, present := range lookups {
			ok, err := present(ws)
			must.NoError(t, err)
			if ok {
				left++
			}
		}
		return left == 0, fmt.Sprintf("%d of %d still present", left, len(lookups))
	})
}

func evalPresent(st *state.StateStore, id string) func(memdb.WatchSet) (bool, error) {
	return func(ws memdb.WatchSet) (bool, error) { ev, err := st.EvalByID(ws, id); return ev != nil, err }
}

func nodePresent(st *state.StateStore, id string) func(memdb.WatchSet) (bool, error) {
	return func(ws memdb.WatchSet) (bool, error) { n, err := st.NodeByID(ws, id); return n != nil, err }
}

func deploymentPresent(st *state.StateStore, id string) func(memdb.WatchSet) (bool, error) {
	return func(ws memdb.WatchSet) (bool, error) { d, err := st.DeploymentByID(ws, id); return d != nil, err }
}

func jobPresent(st *state.StateStore, job *structs.Job) func(memdb.WatchSet) (bool, error) {
	return func(ws memdb.WatchSet) (bool, error) {
		j, err := st.JobByID(ws, job.Namespace, job.ID)
		return j != nil, err
	}
}

// The leader collects on its own, each kind on its interval of the
// server's clock: once the clock passes an interval, a terminal eval past
// eval_gc_threshold, a job dead past job_gc_threshold, a node down past
// node_gc_threshold and a finished deployment past deployment_gc_threshold
// are gone, while a young evaluation removed in the same
// pass would have been is still there.
func TestCoreGC_PeriodicOnLeader(t *testing.T) {
	clock := newManualClock()
	s := testServer(t, func(c *Config) { c.Clock = clock; c.NumSchedulers = 0 })
	w := &gcWorld{t: t, st: s.State(), index: 10_000}
	now := clock.Now()
	live := w.job(mock.Job(), now)
	old := w.eval(live, structs.EvalStatusComplete, now.Add(-2*time.Hour))
	young := w.eval(live, structs.EvalStatusComplete, now)
	node := w.node(structs.NodeStatusDown, now.Add(-25*time.Hour))
	dead := w.job(mock.Job(), now.Add(-5*time.Hour))
	deadEval := w.eval(dead, structs.EvalStatusComplete, now.Add(-5*time.Hour))
	w.alloc(dead, deadEval, node.ID, structs.AllocClientStatusComplete, structs.AllocDesiredStatusStop, now.Add(-5*time.Hour))
	dead = w.stop(dead, now.Add(-5*time.Hour))
	oldDeployment := w.deployment(live, structs.DeploymentStatusSuccessful, now.Add(-2*time.Hour))
	w.deployment(live, structs.DeploymentStatusSuccessful, now.Add(-2*time.Hour)) // the newest stays

	stop := make(chan struct{})
	done := make(chan struct{})
	schedule := s.armCoreGC()
	go func() { defer close(done); schedule.run(stop) }()
	t.Cleanup(func() { close(stop); <-done })

	clock.Advance(5 * time.Minute)
	waitGone(t, "old objects", evalPresent(s.State(), old.ID), nodePresent(s.State(), node.ID), jobPresent(s.State(), dead),
		deploymentPresent(s.State(), oldDeployment.ID))
	ev, err := s.State().EvalByID(nil, young.ID)
	must.NoError(t, err)
	must.NotNil(t, ev, must.Sprint("an evaluation younger than eval_gc_threshold stays"))
}

// System.GarbageCollect (PUT /v1/system/gc) collects everything finished
// at once, however young, and returns when it is done; what is unknown
// stays.
func TestSystemGarbageCollect_Forced(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NumSchedulers = 0 })
	w := &gcWorld{t: t, st: s.State(), index: 10_000}
	now := s.clock.Now()
	node := w.node(structs.NodeStatusDown, now)
	job := w.job(mock.Job(), now)
	ev := w.eval(job, structs.EvalStatusComplete, now)
	w.alloc(job, ev, node.ID, structs.AllocClientStatusComplete, structs.AllocDesiredStatusStop, now)
	job = w.stop(job, now)

	held := w.node(structs.NodeStatusDown, now)
	heldJob := w.job(mock.Job(), now)
	heldEval := w.eval(heldJob, structs.EvalStatusComplete, now)
	unknown := w.alloc(heldJob, heldEval, held.ID, structs.AllocClientStatusUnknown, structs.AllocDesiredStatusStop, now)
	heldJob = w.stop(heldJob, now)

	var resp structs.GenericResponse
	must.NoError(t, s.RPC("System.GarbageCollect", &structs.GenericRequest{}, &resp))
	must.Positive(t, resp.Index)
	for _, present := range []func(memdb.WatchSet) (bool, error){
		evalPresent(s.State(), ev.ID), nodePresent(s.State(), node.ID), jobPresent(s.State(), job),
	} {
		ok, err := present(nil)
		must.NoError(t, err)
		must.False(t, ok, must.Sprint("finished objects are gone when the call returns"))
	}
	a, err := s.State().AllocByID(nil, unknown.ID)
	must.NoError(t, err)
	must.NotNil(t, a)
	for _, present := range []func(memdb.WatchSet) (bool, error){
		evalPresent(s.State(), heldEval.ID), nodePresent(s.State(), held.ID), jobPresent(s.State(), heldJob),
	} {
		ok, err := present(nil)
		must.NoError(t, err)
		must.True(t, ok, must.Sprint("an unknown allocation keeps its evaluation, job and node"))
	}
}
