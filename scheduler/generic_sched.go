package scheduler

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

const (
	// maxServiceScheduleAttempts and maxBatchScheduleAttempts bound the
	// retries of a partially rejected plan. Services try harder: they
	// run for long, so a good placement is worth more.
	maxServiceScheduleAttempts = 5
	maxBatchScheduleAttempts   = 2

	// failedFollowupBase and failedFollowupSpread set the wait of the
	// evaluation that retries one that ran out of attempts; the spread
	// keeps many such retries from firing together.
	failedFollowupBase   = time.Minute
	failedFollowupSpread = 4 * time.Minute

	blockedEvalDescription = "created to place remaining allocations"
)

// ErrMaxAttempts is wrapped by the error of an evaluation whose plan was
// rejected too many times.
var ErrMaxAttempts = errors.New("maximum attempts reached")

// validTriggers are the evaluation reasons the generic scheduler handles.
var validTriggers = map[string]bool{
	structs.EvalTriggerJobRegister: true, structs.EvalTriggerJobDeregister: true,
	structs.EvalTriggerNodeDrain: true, structs.EvalTriggerNodeUpdate: true,
	structs.EvalTriggerAllocStop: true, structs.EvalTriggerRollingUpdate: true,
	structs.EvalTriggerQueuedAllocs: true, structs.EvalTriggerPeriodicJob: true,
	structs.EvalTriggerMaxPlans: true, structs.EvalTriggerRetryFailedAlloc: true,
	structs.EvalTriggerFailedFollowUp: true, structs.EvalTriggerPreemption: true,
	structs.EvalTriggerScaling: true, structs.EvalTriggerMaxDisconnectTimeout: true,
	structs.EvalTriggerReconnect: true, structs.EvalTriggerDeploymentWatcher: true,
	structs.EvalTriggerSiteOutageCleared: true,
}

// GenericScheduler schedules service and batch jobs: it reconciles the
// job's allocations, places what is missing, and retries when the plan
// applier rejects part of its plan.
type GenericScheduler struct {
	schedulerBase
	batch bool

	// deploymentIDs maps a group to the deployment its placements join.
	deploymentIDs map[string]string
	// siteHeld is the evaluation's description when a site outage held
	// replacements (siteHeldDescription).
	siteHeld string
}

// NewServiceScheduler returns the scheduler for service jobs.
func NewServiceScheduler(cfg Config) Scheduler {
	return &GenericScheduler{schedulerBase: newSchedulerBase(cfg, structs.JobTypeService)}
}

// NewBatchScheduler returns the scheduler for batch jobs.
func NewBatchScheduler(cfg Config) Scheduler {
	return &GenericScheduler{schedulerBase: newSchedulerBase(cfg, structs.JobTypeBatch), batch: true}
}

// Process handles one evaluation. The evaluation's outcome is written
// through Planner.UpdateEval; a returned error means the evaluation could
// not be processed at all and should be retried by the broker.
func (s *GenericScheduler) Process(eval *structs.Evaluation) error {
	if ok, err := s.begin(eval); !ok {
		return err
	}
	limit := maxServiceScheduleAttempts
	if s.batch {
		limit = maxBatchScheduleAttempts
	}
	if err := s.retryMax(limit, s.process); err != nil {
		if !errors.Is(err, ErrMaxAttempts) {
			return err
		}
		// Out of attempts: retry later with a fresh evaluation rather than
		// spin against a plan applier that keeps rejecting.
		seed := shuffleSeed(eval.ID, 0)
		wait := failedFollowupBase + time.Duration(seed%uint64(failedFollowupSpread))
		s.nextEval = eval.CreateFailedFollowUpEval(wait, s.now)
		if cerr := s.planner.CreateEval(s.nextEval); cerr != nil {
			return fmt.Errorf("creating failed follow-up evaluation: %w", cerr)
		}
		return s.setStatus(structs.EvalStatusFailed, err.Error())
	}

	// A blocked evaluation that still cannot place everything goes back
	// to waiting for capacity instead of creating another.
	if eval.Status == structs.EvalStatusBlocked && len(s.failedTGAllocs) > 0 {
		e := eval.Copy()
		e.FailedTGAllocs = s.failedTGAllocs
		e.QueuedAllocations = s.queuedAllocs
		e.ModifyTime = s.now.UnixNano()
		e.SnapshotIndex = s.plan.SnapshotIndex
		return s.planner.ReblockEval(e)
	}
	return s.setStatus(structs.EvalStatusComplete, s.siteHeld)
}

// process makes and submits one plan. It returns true when nothing is
// left to retry.
func (s *GenericScheduler) process() (bool, error) {
	index, err := s.startAttempt(s.batch)
	if err != nil {
		return false, err
	}
	if s.job != nil {
		s.plan.AllAtOnce = s.job.AllAtOnce
	}

	if err := s.computeJobAllocs(index); err != nil {
		return false, err
	}

	if s.eval.Status != structs.EvalStatusBlocked && len(s.failedTGAllocs) > 0 && s.blocked == nil {
		// TODO(blocked evals): no node-class eligibility is tracked yet, so
		// the blocked evaluation is "escaped": any capacity change wakes it.
		s.blocked = s.eval.CreateBlockedEval(nil, true, s.now)
		s.blocked.StatusDescription = blockedEvalDescription
		// What the scheduler saw: a capacity change after this index
		// must release the blocked evaluation, one before it must not.
		s.blocked.SnapshotIndex = index
		if err := s.planner.CreateEval(s.blocked); err != nil {
			return false, fmt.Errorf("creating blocked evaluation: %w", err)
		}
	}

	return s.submitPlan(s.eval.AnnotatePlan)
}

// computeJobAllocs reconciles the job and fills the plan.
func (s *GenericScheduler) computeJobAllocs(index uint64) error {
	allocs, err := s.state.AllocsByJob(nil, s.eval.Namespace, s.eval.JobID, true)
	if err != nil {
		return fmt.Errorf("listing allocations of job %q: %w", s.eval.JobID, err)
	}
	tainted, err := taintedNodes(s.state, allocs)
	if err != nil {
		return err
	}
	markStoppedLost(s.plan, allocs, tainted)
	var deployment *structs.Deployment
	if !s.batch {
		if deployment, err = s.state.LatestDeploymentByJobID(nil, s.eval.Namespace, s.eval.JobID); err != nil {
			return fmt.Errorf("looking up deployment of job %q: %w", s.eval.JobID, err)
		}
	}

	held, err := siteHeldNodes(s.state, allocs)
	if err != nil {
		return err
	}
	res := Reconcile(ReconcilerInput{
		Job: s.job, Allocs: allocs, TaintedNodes: tainted, SiteHeldNodes: held,
		EvalID: s.eval.ID, EvalPriority: s.eval.Priority, Now: s.now, Deployment: deployment,
		MemoryOversubscription: s.ctx.schedulerConfig().MemoryOversubscriptionEnabled,
	})
	s.plan.Deployment, s.plan.DeploymentUpdates = res.Deployment, res.DeploymentUpdates
	s.deploymentIDs = map[string]string{}
	s.reconnects = reconnectOutcomes(s.job, res)
	s.siteHeld = siteHeldDescription(held, allocs, res)
	if s.eval.AnnotatePlan {
		s.plan.Annotations = &structs.PlanAnnotations{DesiredTGUpdates: res.DesiredTGUpdates()}
	}
	for _, g := range res.Groups {
		for _, st := range g.Stop {
			s.plan.AppendStoppedAlloc(st.alloc, st.statusDescription, st.clientStatus, st.followupEvalID)
		}
	}
	for _, g := range res.Groups {
		s.deploymentIDs[g.Name] = g.DeploymentID
		for _, a := range sortedAllocs(g.Updates) {
			s.plan.AppendAlloc(a)
		}
		for _, a := range sortedAllocs(g.Recorded) {
			s.plan.AppendAlloc(a)
		}
		s.followUpEvals = append(s.followUpEvals, g.FollowupEvals...)
	}

	if s.job.Stopped() {
		return nil
	}
	// Destructive updates go first, in every group, so that the nodes they
	// free are counted before anything new is placed.
	var reqs []placementRequest
	for _, g := range res.Groups {
		reqs = append(reqs, g.DestructiveUpdate...)
	}
	for _, g := range res.Groups {
		reqs = append(reqs, g.Place...)
	}
	for _, p := range reqs {
		s.queuedAllocs[p.taskGroup.Name] += p.instances()
	}
	return s.computePlacements(index, reqs)
}

// computePlacements picks a node for each requested allocation and adds
// the new allocations to the plan. Once a group has failed to fit, the rest
// of it would too: its remaining allocations are only counted, so that the
// work is what can be placed, not the group's count.
func (s *GenericScheduler) computePlacements(index uint64, reqs []placementRequest) error {
	if len(reqs) == 0 {
		return nil
	}
	nodes, err := readyNodesFor(s.state, s.job)
	if err != nil {
		return err
	}
	s.stack.SetNodes(nodes, shuffleSeed(s.eval.ID, index))

	for _, p := range reqs {
		for left := p.instances(); left > 0; left-- {
			if m, failed := s.failedTGAllocs[p.taskGroup.Name]; failed {
				m.CoalescedFailures += left
				if p.withdrawStop {
					s.plan.PopUpdate(p.previousAlloc)
				}
				break
			}
			s.placeOne(p)
		}
	}
	return nil
}

// placeOne places one allocation of the request, or records in
// failedTGAllocs why the group fits nowhere.
func (s *GenericScheduler) placeOne(p placementRequest) {
	tg := p.taskGroup
	// Stop first so that the node the old allocation frees counts.
	if p.stopPrevious {
		s.plan.AppendStoppedAlloc(p.previousAlloc, p.stopDesc, "", "")
	}
	option := s.stack.Select(tg, selectOptions{penaltyNodes: penaltyNodes(p)})
	metrics := s.ctx.Metrics()
	metrics.NodesAvailable = maps.Clone(metrics.NodesAvailable)
	if option == nil {
		if p.stopPrevious || p.withdrawStop {
			s.plan.PopUpdate(p.previousAlloc)
		}
		if s.failedTGAllocs == nil {
			s.failedTGAllocs = map[string]*structs.AllocMetric{}
		}
		s.failedTGAllocs[tg.Name] = metrics
		return
	}
	name := p.name
	if p.names != nil {
		name = p.names.next()
	}
	alloc := &structs.Allocation{
		ID:                 structs.GenerateUUID(),
		Namespace:          s.job.Namespace,
		EvalID:             s.eval.ID,
		Name:               name,
		JobID:              s.job.ID,
		Job:                s.job,
		TaskGroup:          tg.Name,
		NodeID:             option.Node.ID,
		NodeName:           option.Node.Name,
		AllocatedResources: s.ctx.allocatedResources(tg),
		Metrics:            metrics,
		DesiredStatus:      structs.AllocDesiredStatusRun,
		ClientStatus:       structs.AllocClientStatusPending,
		CreateTime:         s.now.UnixNano(),
		ModifyTime:         s.now.UnixNano(),
		PoolDisconnect:     s.ctx.poolDisconnect(option.Node),
		DeploymentID:       s.deploymentIDs[tg.Name],
	}
	if p.canary {
		alloc.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true}
	}
	if prev := p.previousAlloc; prev != nil {
		alloc.PreviousAllocation = prev.ID
		if p.reschedule {
			alloc.RescheduleTracker = extendRescheduleTracker(prev, s.now, p.rescheduleDelay)
		}
		s.linkNext(prev, alloc.ID)
	}
	s.appendPlacement(alloc, option, tg)
	if p.keepPrevious {
		s.replacing[alloc.ID] = true
	}
}

// linkNext records the replacement on the replaced allocation's entry in
// the plan, if it has one, so the plan reads consistently. The state store
// links every new allocation to its PreviousAllocation anyway, so no
// extra write is made for a replaced allocation the plan does not touch.
func (s *GenericScheduler) linkNext(prev *structs.Allocation, nextID string) {
	for _, m := range []map[string][]*structs.Allocation{s.plan.NodeUpdate, s.plan.NodeAllocation} {
		for _, a := range m[prev.NodeID] {
			if a.ID == prev.ID {
				a.NextAllocation = nextID
			}
		}
	}
}

// penaltyNodes are the nodes a rescheduled allocation's line failed on.
func penaltyNodes(p placementRequest) map[string]bool {
	if !p.reschedule || p.previousAlloc == nil {
		return nil
	}
	out := map[string]bool{p.previousAlloc.NodeID: true}
	if t := p.previousAlloc.RescheduleTracker; t != nil {
		for _, e := range t.Events {
			out[e.PrevNodeID] = true
		}
	}
	return out
}

func sortedAllocs(m map[string]*structs.Allocation) []*structs.Allocation {
	out := make([]*structs.Allocation, 0, len(m))
	for _, a := range m {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
