package schedtest

import (
	"sort"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
)

// DefaultNow is the harness clock's starting time.
var DefaultNow = time.Unix(1_700_000_000, 0)

// TB is the part of testing.TB the harness needs; *testing.T, *testing.B
// and *rapid.T satisfy it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Harness runs schedulers against a real state store and records what they
// submit. It is not safe for concurrent use; a scheduler is single-threaded.
type Harness struct {
	t     TB
	State *state.StateStore

	// Now is the server time handed to schedulers; tests move it.
	Now time.Time

	// RejectPlan, when set, is asked before each plan is applied; it
	// returns the plan to commit instead (the nodes it leaves out are
	// "rejected") and the harness hands the scheduler a fresh snapshot,
	// as the plan applier does after a partial rejection.
	RejectPlan func(*structs.Plan) *structs.Plan

	Plans        []*structs.Plan
	Evals        []*structs.Evaluation // UpdateEval calls, in order
	CreateEvals  []*structs.Evaluation
	ReblockEvals []*structs.Evaluation

	index uint64
}

var _ scheduler.Planner = (*Harness)(nil)

// NewHarness returns a harness over an empty state store.
func NewHarness(t TB) *Harness {
	t.Helper()
	st, err := state.NewStateStore(nil)
	must.NoError(t, err)
	return &Harness{t: t, State: st, Now: DefaultNow, index: 1000}
}

// NextIndex returns a fresh raft index.
func (h *Harness) NextIndex() uint64 {
	h.index++
	return h.index
}

// Clock returns a function reading the harness's Now.
func (h *Harness) Clock() func() time.Time { return func() time.Time { return h.Now } }

// SubmitPlan applies the plan (or the part RejectPlan keeps) to the store.
func (h *Harness) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	h.Plans = append(h.Plans, plan)
	commit := plan
	if h.RejectPlan != nil {
		commit = h.RejectPlan(plan)
	}
	index := h.NextIndex()
	result := &structs.PlanResult{
		NodeUpdate:      commit.NodeUpdate,
		NodeAllocation:  commit.NodeAllocation,
		NodePreemptions: commit.NodePreemptions,
		AllocIndex:      index,
	}
	req := &structs.ApplyPlanResultsRequest{
		Job: plan.Job, EvalID: plan.EvalID, UpdatedAt: h.Now.UnixNano(),
		Deployment: plan.Deployment.Copy(), DeploymentUpdates: plan.DeploymentUpdates,
	}
	for _, node := range sortedKeys(commit.NodeUpdate) {
		for _, a := range commit.NodeUpdate[node] {
			req.AllocsStopped = append(req.AllocsStopped, a.Copy())
		}
	}
	// Evictions commit as stops with DesiredStatus evict, as in the plan
	// applier (which also creates the evicted jobs' evaluations).
	for _, node := range sortedKeys(commit.NodePreemptions) {
		for _, a := range commit.NodePreemptions[node] {
			req.AllocsStopped = append(req.AllocsStopped, a.Copy())
		}
	}
	for _, node := range sortedKeys(commit.NodeAllocation) {
		for _, a := range commit.NodeAllocation[node] {
			req.AllocsUpdated = append(req.AllocsUpdated, a.Copy())
		}
	}
	if len(commit.NodeUpdate) > 0 || len(commit.NodeAllocation) > 0 {
		// Follow-ups commit with the plan, as in the plan applier.
		for _, e := range plan.FollowUpEvals {
			req.Evals = append(req.Evals, e.Copy())
		}
		h.CreateEvals = append(h.CreateEvals, plan.FollowUpEvals...)
	}
	if err := h.State.UpsertPlanResults(index, req); err != nil {
		return nil, nil, err
	}
	if commit != plan {
		result.RefreshIndex = index
		snap, err := h.State.Snapshot()
		if err != nil {
			return nil, nil, err
		}
		return result, snap, nil
	}
	return result, nil, nil
}

// UpdateEval records and stores the evaluation.
func (h *Harness) UpdateEval(e *structs.Evaluation) error {
	h.Evals = append(h.Evals, e)
	return h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{e.Copy()})
}

// CreateEval records and stores the evaluation.
func (h *Harness) CreateEval(e *structs.Evaluation) error {
	h.CreateEvals = append(h.CreateEvals, e)
	return h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{e.Copy()})
}

// ReblockEval records and stores the evaluation, which must exist.
func (h *Harness) ReblockEval(e *structs.Evaluation) error {
	existing, err := h.State.EvalByID(nil, e.ID)
	must.NoError(h.t, err)
	must.NotNil(h.t, existing, must.Sprintf("reblocking unknown evaluation %s", e.ID))
	h.ReblockEvals = append(h.ReblockEvals, e)
	return h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{e.Copy()})
}

// Process runs the scheduler made by factory on eval over a snapshot of
// the store, as a worker would.
func (h *Harness) Process(factory scheduler.Factory, eval *structs.Evaluation) error {
	snap, err := h.State.Snapshot()
	must.NoError(h.t, err)
	return factory(scheduler.Config{State: snap, Planner: h, Now: h.Clock()}).Process(eval)
}

// UpsertNodes stores nodes.
func (h *Harness) UpsertNodes(nodes ...*structs.Node) {
	h.t.Helper()
	for _, n := range nodes {
		must.NoError(h.t, h.State.UpsertNode(h.NextIndex(), n))
	}
}

// UpsertJob stores the job and returns the stored version.
func (h *Harness) UpsertJob(job *structs.Job) *structs.Job {
	h.t.Helper()
	must.NoError(h.t, h.State.UpsertJob(h.NextIndex(), h.Now.UnixNano(), job))
	stored, err := h.State.JobByID(nil, job.Namespace, job.ID)
	must.NoError(h.t, err)
	return stored
}

// UpsertAllocs stores allocations as the server writes them.
func (h *Harness) UpsertAllocs(allocs ...*structs.Allocation) {
	h.t.Helper()
	must.NoError(h.t, h.State.UpsertAllocs(h.NextIndex(), allocs))
}

// UpsertEval stores an evaluation (usually the one about to be processed).
func (h *Harness) UpsertEval(e *structs.Evaluation) {
	h.t.Helper()
	must.NoError(h.t, h.State.UpsertEvals(h.NextIndex(), []*structs.Evaluation{e}))
}

// SetNodeStatus changes a node's status.
func (h *Harness) SetNodeStatus(nodeID, status string) {
	h.t.Helper()
	must.NoError(h.t, h.State.UpdateNodeStatus(h.NextIndex(), nodeID, status, h.Now.UnixNano(), nil))
}

// JobAllocs returns the job's allocations, sorted by name then ID.
func (h *Harness) JobAllocs(job *structs.Job) []*structs.Allocation {
	h.t.Helper()
	allocs, err := h.State.AllocsByJob(nil, job.Namespace, job.ID, true)
	must.NoError(h.t, err)
	sort.Slice(allocs, func(i, j int) bool {
		if allocs[i].Name != allocs[j].Name {
			return allocs[i].Name < allocs[j].Name
		}
		return allocs[i].ID < allocs[j].ID
	})
	return allocs
}

// LastEval returns the last evaluation the scheduler updated.
func (h *Harness) LastEval() *structs.Evaluation {
	h.t.Helper()
	must.SliceNotEmpty(h.t, h.Evals, must.Sprint("scheduler updated no evaluation"))
	return h.Evals[len(h.Evals)-1]
}

// JobEval returns a pending evaluation of the job with the given trigger.
func JobEval(job *structs.Job, trigger string) *structs.Evaluation {
	return &structs.Evaluation{
		ID:             structs.GenerateUUID(),
		Namespace:      job.Namespace,
		Priority:       job.Priority,
		Type:           job.Type,
		TriggeredBy:    trigger,
		JobID:          job.ID,
		JobModifyIndex: job.JobModifyIndex,
		Status:         structs.EvalStatusPending,
	}
}

// PlacedAllocs returns the new allocations of a plan (not updates of
// existing ones, which the store has given a CreateIndex), across nodes.
func PlacedAllocs(plan *structs.Plan) []*structs.Allocation {
	var out []*structs.Allocation
	for _, node := range sortedKeys(plan.NodeAllocation) {
		for _, a := range plan.NodeAllocation[node] {
			if a.CreateIndex == 0 {
				out = append(out, a)
			}
		}
	}
	return out
}

// StoppedAllocs returns the stops of a plan, across nodes.
func StoppedAllocs(plan *structs.Plan) []*structs.Allocation {
	var out []*structs.Allocation
	for _, node := range sortedKeys(plan.NodeUpdate) {
		out = append(out, plan.NodeUpdate[node]...)
	}
	return out
}

func sortedKeys(m map[string][]*structs.Allocation) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
