package scheduler

import (
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/nomad/structs"
)

const (
	// maxSystemScheduleAttempts bounds the retries of a partially rejected
	// plan: a system job's plan touches many nodes, so some churn is normal.
	maxSystemScheduleAttempts = 5
)

// SystemScheduler schedules system and sysbatch jobs: one allocation of
// each group on every ready node the job's datacenters, pool and
// constraints admit. There is no count and nothing is ever placed
// "elsewhere": an allocation belongs to its node. The disconnect rules of
// docs/concepts/disconnected-clients.md apply per node through the same
// classification the reconciler uses (filterByTainted).
type SystemScheduler struct {
	base     hclog.Logger
	logger   hclog.Logger
	state    State
	planner  Planner
	recorder Recorder
	clock    func() time.Time
	sysbatch bool

	// Per Process.
	now            time.Time
	eval           *structs.Evaluation
	job            *structs.Job
	plan           *structs.Plan
	planResult     *structs.PlanResult
	ctx            *EvalContext
	stack          *genericStack
	followUpEvals  []*structs.Evaluation
	failedTGAllocs map[string]*structs.AllocMetric
	queuedAllocs   map[string]int
	placed         map[string]string // new allocation ID → group
	reconnects     []reconnectOutcome
}

// NewSystemScheduler returns the scheduler for system jobs.
func NewSystemScheduler(cfg Config) Scheduler { return newSystemScheduler(cfg, false) }

// NewSysBatchScheduler returns the scheduler for sysbatch jobs: each node
// runs the job to completion once per job version.
func NewSysBatchScheduler(cfg Config) Scheduler { return newSystemScheduler(cfg, true) }

func newSystemScheduler(cfg Config, sysbatch bool) *SystemScheduler {
	cfg = cfg.withDefaults()
	name := structs.JobTypeSystem
	if sysbatch {
		name = structs.JobTypeSysBatch
	}
	return &SystemScheduler{
		base: cfg.Logger.Named(name + "_sched"), state: cfg.State, planner: cfg.Planner,
		recorder: cfg.Recorder, clock: cfg.Now, sysbatch: sysbatch,
	}
}

// Process handles one evaluation; see GenericScheduler.Process.
func (s *SystemScheduler) Process(eval *structs.Evaluation) error {
	s.eval = eval
	s.now = s.clock()
	s.logger = s.base.With("eval_id", eval.ID, "job_id", eval.JobID, "namespace", eval.Namespace)
	if !validTriggers[eval.TriggeredBy] {
		desc := fmt.Sprintf("scheduler cannot handle '%s' evaluation reason", eval.TriggeredBy)
		return s.setStatus(structs.EvalStatusFailed, desc)
	}
	for attempts := 0; attempts < maxSystemScheduleAttempts; {
		done, err := s.process()
		if err != nil {
			return err
		}
		if done {
			return s.setStatus(structs.EvalStatusComplete, "")
		}
		if s.planResult != nil && !s.planResult.IsNoOp() {
			attempts = 0
		} else {
			attempts++
		}
	}
	err := fmt.Errorf("%w (%d)", ErrMaxAttempts, maxSystemScheduleAttempts)
	return s.setStatus(structs.EvalStatusFailed, err.Error())
}

func (s *SystemScheduler) process() (bool, error) {
	job, err := s.state.JobByID(nil, s.eval.Namespace, s.eval.JobID)
	if err != nil {
		return false, fmt.Errorf("looking up job %q: %w", s.eval.JobID, err)
	}
	s.job = job
	index, err := s.state.LatestIndex()
	if err != nil {
		return false, fmt.Errorf("reading state index: %w", err)
	}
	s.queuedAllocs = map[string]int{}
	s.followUpEvals, s.failedTGAllocs, s.planResult = nil, nil, nil
	s.placed = map[string]string{}
	s.reconnects = nil
	s.plan = &structs.Plan{EvalID: s.eval.ID, Priority: s.eval.Priority, Job: job, SnapshotIndex: index}
	s.ctx = NewEvalContext(s.state, s.plan, s.logger)
	s.stack = newGenericStack(s.sysbatch, s.ctx)
	if !job.Stopped() {
		s.stack.SetJob(job)
		for _, tg := range job.TaskGroups {
			s.queuedAllocs[tg.Name] = 0
		}
	}
	if err := s.computeJobAllocs(); err != nil {
		return false, err
	}
	if s.plan.IsNoOp() {
		for _, e := range s.followUpEvals {
			if err := s.planner.CreateEval(e); err != nil {
				return false, fmt.Errorf("creating follow-up evaluation: %w", err)
			}
		}
		return true, nil
	}
	s.plan.FollowUpEvals = s.followUpEvals
	result, newState, err := s.planner.SubmitPlan(s.plan)
	s.planResult = result
	if err != nil {
		return false, fmt.Errorf("submitting plan: %w", err)
	}
	reportReconnectOutcomes(reconnectReport{Logger: s.logger, Recorder: s.recorder, Outcomes: s.reconnects, Result: result})
	s.adjustQueued(result)
	if newState != nil {
		s.state = newState
		return false, nil
	}
	full, _, _ := result.FullCommit(s.plan)
	return full, nil
}

// computeJobAllocs decides, node by node, what each group's allocation
// there becomes, and fills the plan.
func (s *SystemScheduler) computeJobAllocs() error {
	allocs, err := s.state.AllocsByJob(nil, s.eval.Namespace, s.eval.JobID, true)
	if err != nil {
		return fmt.Errorf("listing allocations of job %q: %w", s.eval.JobID, err)
	}
	tainted, err := taintedNodes(s.state, allocs)
	if err != nil {
		return err
	}
	markStoppedLost(s.plan, allocs, tainted)

	// Stopping works as for any job (reconciler.stopAll): unknown
	// allocations are stopped too, lost where their node is gone.
	r := &reconciler{in: ReconcilerInput{
		Job: s.job, TaintedNodes: tainted, EvalID: s.eval.ID, EvalPriority: s.eval.Priority, Now: s.now,
	}}
	stopAll := func(set allocSet) {
		d := newDecisions()
		r.stopAll(&d, set)
		for _, st := range d.stops {
			s.plan.AppendStoppedAlloc(st.alloc, st.statusDescription, st.clientStatus, "")
		}
	}
	if s.job.Stopped() {
		stopAll(newAllocSet(allocs))
		return nil
	}
	nodes, err := readyNodesFor(s.state, s.job)
	if err != nil {
		return err
	}
	groups := byTaskGroup(allocs)
	var timeouts []*delayedReschedule
	for _, tg := range s.job.TaskGroups {
		if tg.Count == 0 {
			// A group switched off (upstream's blue/green of system
			// jobs): it runs nowhere.
			stopAll(groups[tg.Name])
			continue
		}
		d := s.diffGroup(tg, groups[tg.Name], tainted, nodes)
		timeouts = append(timeouts, d.timeouts...)
		// One instance per node: every allocation of the group has the
		// same name.
		name := structs.AllocName(s.job.ID, tg.Name, 0)
		for _, n := range d.place {
			s.queuedAllocs[tg.Name]++
			s.placeOn(tg, n, d.previous[n.ID], name)
		}
	}
	// Groups no longer in the job lose their allocations.
	for _, name := range sortedGroupNames(groups) {
		if s.job.LookupTaskGroup(name) == nil {
			stopAll(groups[name])
		}
	}
	evals, byAlloc := r.batchFollowups(timeouts, structs.EvalTriggerMaxDisconnectTimeout)
	s.followUpEvals = append(s.followUpEvals, evals...)
	for _, t := range timeouts {
		t.alloc.FollowupEvalID = byAlloc[t.alloc.ID]
	}
	return nil
}

// placeOn places one allocation of tg on node, if the node is feasible.
// A node the constraints or drivers rule out is not a failure: a system
// job simply does not run there. A node that is out of resources is.
func (s *SystemScheduler) placeOn(tg *structs.TaskGroup, node *structs.Node, prev *structs.Allocation, name string) {
	// byDC is made here for this node alone, so the metrics may keep it.
	s.stack.SetNodes(&readyNodes{
		nodes: []*structs.Node{node}, byDC: map[string]int{node.Datacenter: 1}, inPool: 1,
	}, 0)
	option := s.stack.Select(tg, selectOptions{})
	metrics := s.ctx.Metrics()
	if option == nil {
		s.queuedAllocs[tg.Name]--
		if metrics.NodesExhausted == 0 {
			return
		}
		if s.failedTGAllocs == nil {
			s.failedTGAllocs = map[string]*structs.AllocMetric{}
		}
		if m, ok := s.failedTGAllocs[tg.Name]; ok {
			m.CoalescedFailures++
			m.NodesExhausted += metrics.NodesExhausted
			return
		}
		s.failedTGAllocs[tg.Name] = metrics
		return
	}
	alloc := &structs.Allocation{
		ID:                 structs.GenerateUUID(),
		Namespace:          s.job.Namespace,
		EvalID:             s.eval.ID,
		Name:               name,
		JobID:              s.job.ID,
		Job:                s.job,
		TaskGroup:          tg.Name,
		NodeID:             node.ID,
		NodeName:           node.Name,
		AllocatedResources: structs.NewAllocatedResources(tg),
		Metrics:            metrics,
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
		CreateTime:         s.now.UnixNano(),
		ModifyTime:         s.now.UnixNano(),
		PoolDisconnect:     s.ctx.poolDisconnect(node),
	}
	if prev != nil {
		alloc.PreviousAllocation = prev.ID
	}
	s.ctx.placePorts(alloc, node, tg)
	s.plan.AppendAlloc(alloc)
	s.placed[alloc.ID] = tg.Name
}

func (s *SystemScheduler) adjustQueued(result *structs.PlanResult) {
	if result == nil {
		return
	}
	for _, allocs := range result.NodeAllocation {
		for _, a := range allocs {
			if g, ok := s.placed[a.ID]; ok {
				s.queuedAllocs[g]--
			}
		}
	}
}

func (s *SystemScheduler) setStatus(status, desc string) error {
	e := s.eval.Copy()
	e.Status = status
	e.StatusDescription = desc
	e.FailedTGAllocs = s.failedTGAllocs
	e.QueuedAllocations = s.queuedAllocs
	e.ModifyTime = s.now.UnixNano()
	if err := s.planner.UpdateEval(e); err != nil {
		return fmt.Errorf("updating evaluation: %w", err)
	}
	return nil
}

func sortedGroupNames(groups map[string]allocSet) []string {
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
