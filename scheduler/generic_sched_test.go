package scheduler_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

func registerJob(t *testing.T, h *schedtest.Harness, job *structs.Job) (*structs.Job, *structs.Evaluation) {
	t.Helper()
	stored := h.UpsertJob(job)
	eval := schedtest.JobEval(stored, structs.EvalTriggerJobRegister)
	h.UpsertEval(eval)
	return stored, eval
}

func desiredRun(allocs []*structs.Allocation) []*structs.Allocation {
	var out []*structs.Allocation
	for _, a := range allocs {
		if a.DesiredStatus == structs.AllocDesiredStatusRun {
			out = append(out, a)
		}
	}
	return out
}

// A new job is placed in full, spread over the nodes, and every placement
// records the scores that decided it (the reconnect logic compares them).
func TestServiceSched_PlacesJobWithScores(t *testing.T) {
	h := schedtest.NewHarness(t)
	nodes := []*structs.Node{mock.Node(), mock.Node(), mock.Node()}
	h.UpsertNodes(nodes...)
	job, eval := registerJob(t, h, mock.Job())

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	must.Len(t, 1, h.Plans)
	placed := schedtest.PlacedAllocs(h.Plans[0])
	must.Len(t, 10, placed)
	perNode := map[string]int{}
	names := map[string]bool{}
	for _, a := range placed {
		perNode[a.NodeID]++
		names[a.Name] = true
		must.Eq(t, structs.AllocDesiredStatusRun, a.DesiredStatus)
		must.Eq(t, structs.AllocClientStatusPending, a.ClientStatus)
		must.Eq(t, eval.ID, a.EvalID)
		must.Eq(t, h.Now.UnixNano(), a.CreateTime)
		must.NotNil(t, a.AllocatedResources)
		must.SliceNotEmpty(t, a.Metrics.ScoreMetaData)
		must.LessEq(t, 5, len(a.Metrics.ScoreMetaData))
		top := a.Metrics.ScoreMetaData[0]
		must.MapContainsKey(t, top.Scores, "binpack")
		must.MapContainsKey(t, top.Scores, "job-anti-affinity")
		chosen, ok := a.Metrics.NodeScore(a.NodeID)
		must.True(t, ok, must.Sprint("the chosen node's score is recorded"))
		must.Eq(t, top.NormScore, chosen, must.Sprint("the chosen node has the best score"))
	}
	must.MapLen(t, 10, names, must.Sprint("names are unique"))
	must.MapLen(t, 3, perNode, must.Sprint("anti-affinity spreads the group"))

	must.Len(t, 10, desiredRun(h.JobAllocs(job)))
	last := h.LastEval()
	must.Eq(t, structs.EvalStatusComplete, last.Status)
	must.Eq(t, 0, last.QueuedAllocations["web"])
	must.MapEmpty(t, last.FailedTGAllocs)
	must.SliceEmpty(t, h.CreateEvals)
}

// A job whose driver no node has places nothing, says why in the metrics
// the CLI prints, and leaves a blocked evaluation to wait for capacity.
func TestServiceSched_MissingDriverBlocks(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node(), mock.Node())
	job := mock.Job()
	job.TaskGroups[0].Tasks[0].Driver = "docker"
	job, eval := registerJob(t, h, job)

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	must.SliceEmpty(t, h.JobAllocs(job))
	last := h.LastEval()
	must.Eq(t, structs.EvalStatusComplete, last.Status)
	m := last.FailedTGAllocs["web"]
	must.NotNil(t, m)
	must.Eq(t, 2, m.NodesEvaluated)
	must.Eq(t, 2, m.NodesFiltered)
	must.Eq(t, 2, m.ConstraintFiltered["missing drivers"])
	must.Eq(t, 9, m.CoalescedFailures)
	must.Eq(t, 10, last.QueuedAllocations["web"])

	must.Len(t, 1, h.CreateEvals)
	blocked := h.CreateEvals[0]
	must.Eq(t, structs.EvalStatusBlocked, blocked.Status)
	must.Eq(t, structs.EvalTriggerQueuedAllocs, blocked.TriggeredBy)
	must.Eq(t, blocked.ID, last.BlockedEval)
}

// A blocked evaluation that still cannot place is re-blocked, not
// duplicated.
func TestServiceSched_BlockedEvalReblocks(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node())
	job := mock.Job()
	job.TaskGroups[0].Tasks[0].Driver = "docker"
	job = h.UpsertJob(job)
	eval := schedtest.JobEval(job, structs.EvalTriggerQueuedAllocs)
	eval.Status = structs.EvalStatusBlocked
	h.UpsertEval(eval)

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	must.SliceEmpty(t, h.CreateEvals)
	must.Len(t, 1, h.ReblockEvals)
	must.Eq(t, eval.ID, h.ReblockEvals[0].ID)
}

// A node going down makes its allocations lost; they are replaced on the
// remaining nodes with the same names and a link to what they replace.
func TestServiceSched_NodeDownLostAndReplaced(t *testing.T) {
	h := schedtest.NewHarness(t)
	nodes := []*structs.Node{mock.Node(), mock.Node(), mock.Node()}
	h.UpsertNodes(nodes...)
	job, eval := registerJob(t, h, mock.Job())
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	down := nodes[0].ID
	var onDown []*structs.Allocation
	for _, a := range h.JobAllocs(job) {
		if a.NodeID == down {
			onDown = append(onDown, a)
		}
	}
	must.SliceNotEmpty(t, onDown)
	h.SetNodeStatus(down, structs.NodeStatusDown)
	update := schedtest.JobEval(job, structs.EvalTriggerNodeUpdate)
	h.UpsertEval(update)

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, update))

	plan := h.Plans[len(h.Plans)-1]
	stopped := schedtest.StoppedAllocs(plan)
	must.Len(t, len(onDown), stopped)
	for _, s := range stopped {
		must.Eq(t, structs.AllocClientStatusLost, s.ClientStatus)
		must.Eq(t, structs.AllocLost, s.DesiredDescription)
	}
	placed := schedtest.PlacedAllocs(plan)
	must.Len(t, len(onDown), placed)
	lostNames := map[string]string{}
	for _, a := range onDown {
		lostNames[a.ID] = a.Name
	}
	for _, a := range placed {
		must.NotEq(t, down, a.NodeID)
		must.Eq(t, lostNames[a.PreviousAllocation], a.Name)
	}
	live := 0
	for _, a := range h.JobAllocs(job) {
		if !a.TerminalStatus() {
			live++
		}
	}
	must.Eq(t, 10, live)
	must.Eq(t, structs.EvalStatusComplete, h.LastEval().Status)
}

// A purged job stops everything it had.
func TestServiceSched_JobDeregisterStopsAll(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node(), mock.Node())
	job, eval := registerJob(t, h, mock.Job())
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	stopped := job.Copy()
	stopped.Stop = true
	stopped = h.UpsertJob(stopped)
	dereg := schedtest.JobEval(stopped, structs.EvalTriggerJobDeregister)
	h.UpsertEval(dereg)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, dereg))

	must.SliceEmpty(t, desiredRun(h.JobAllocs(job)))
	must.Eq(t, structs.EvalStatusComplete, h.LastEval().Status)
}

// A plan the applier keeps rejecting makes the evaluation fail after the
// service scheduler's attempts, with a follow-up evaluation to retry.
func TestServiceSched_MaxAttemptsFailsWithFollowup(t *testing.T) {
	h := schedtest.NewHarness(t)
	h.UpsertNodes(mock.Node(), mock.Node(), mock.Node())
	h.RejectPlan = func(*structs.Plan) *structs.Plan { return &structs.Plan{} }
	_, eval := registerJob(t, h, mock.Job())

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	must.Len(t, 5, h.Plans)
	last := h.LastEval()
	must.Eq(t, structs.EvalStatusFailed, last.Status)
	must.StrContains(t, last.StatusDescription, "maximum attempts reached")
	must.Len(t, 1, h.CreateEvals)
	must.Eq(t, structs.EvalTriggerFailedFollowUp, h.CreateEvals[0].TriggeredBy)
	must.Eq(t, h.CreateEvals[0].ID, last.NextEval)
}

// An evaluation with a reason the scheduler does not know fails cleanly.
func TestServiceSched_InvalidTrigger(t *testing.T) {
	h := schedtest.NewHarness(t)
	job := h.UpsertJob(mock.Job())
	eval := schedtest.JobEval(job, "bogus")
	h.UpsertEval(eval)

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	must.Eq(t, structs.EvalStatusFailed, h.LastEval().Status)
	must.SliceEmpty(t, h.Plans)
}

// NewScheduler builds the named schedulers and refuses unknown names and
// incomplete configs with sentinel errors.
func TestNewScheduler(t *testing.T) {
	h := schedtest.NewHarness(t)
	cfg := scheduler.Config{State: h.State, Planner: h, Now: h.Clock()}
	for _, name := range []string{"service", "batch"} {
		s, err := scheduler.NewScheduler(name, cfg)
		must.NoError(t, err)
		must.NotNil(t, s)
	}
	_, err := scheduler.NewScheduler("nope", cfg)
	must.ErrorIs(t, err, scheduler.ErrUnknownScheduler)
	_, err = scheduler.NewScheduler("service", scheduler.Config{State: h.State, Planner: h})
	must.ErrorIs(t, err, scheduler.ErrInvalidConfig)
}

// A group that asks for a host volume is placed only on the nodes that
// have it; with none left, the failed placement names upstream's reason.
func TestServiceSched_HostVolumeFeasibility(t *testing.T) {
	h := schedtest.NewHarness(t)
	with := mock.Node()
	with.HostVolumes = map[string]*structs.ClientHostVolumeConfig{"data": {Name: "data", Path: "/srv/data"}}
	h.UpsertNodes(with, mock.Node(), mock.Node())
	job := mock.Job()
	job.TaskGroups[0].Count = 2
	job.TaskGroups[0].Volumes = map[string]*structs.VolumeRequest{"d": {Name: "d", Type: structs.VolumeTypeHost, Source: "data"}}
	job, eval := registerJob(t, h, job)

	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))

	allocs := desiredRun(h.JobAllocs(job))
	must.Len(t, 2, allocs)
	for _, a := range allocs {
		must.Eq(t, with.ID, a.NodeID)
	}

	job = job.Copy()
	job.TaskGroups[0].Volumes["d"].Source = "missing"
	_, eval = registerJob(t, h, job)
	must.NoError(t, h.Process(scheduler.NewServiceScheduler, eval))
	m := h.LastEval().FailedTGAllocs["web"]
	must.NotNil(t, m)
	must.Eq(t, 3, m.ConstraintFiltered["missing compatible host volumes"])
}
