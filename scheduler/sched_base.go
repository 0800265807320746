package scheduler

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// schedulerBase is what the generic and system schedulers share: their
// configuration, the state of the evaluation being processed, and the steps
// around their own computeJobAllocs: starting an evaluation, an attempt's
// fresh plan, the retries, submitting the plan and writing the outcome.
type schedulerBase struct {
	baseLogger hclog.Logger
	logger     hclog.Logger
	state      State
	planner    Planner
	recorder   Recorder
	clock      func() time.Time

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
	// replacing are new allocations that replace unknown ones.
	replacing map[string]bool
	// blocked and nextEval are the blocked and failed follow-up
	// evaluations this one created, recorded on it by setStatus.
	blocked  *structs.Evaluation
	nextEval *structs.Evaluation
}

// newSchedulerBase names the logger after the job type it schedules.
func newSchedulerBase(cfg Config, jobType string) schedulerBase {
	cfg = cfg.withDefaults()
	return schedulerBase{
		baseLogger: cfg.Logger.Named(jobType + "_sched"), state: cfg.State, planner: cfg.Planner,
		recorder: cfg.Recorder, clock: cfg.Now,
	}
}

// begin readies s for eval. It returns false, with the evaluation written
// as failed, when no scheduler handles the evaluation's trigger.
func (s *schedulerBase) begin(eval *structs.Evaluation) (bool, error) {
	s.eval = eval
	s.now = s.clock()
	s.blocked, s.nextEval = nil, nil
	s.logger = s.baseLogger.With("eval_id", eval.ID, "job_id", eval.JobID, "namespace", eval.Namespace)
	if !validTriggers[eval.TriggeredBy] {
		desc := fmt.Sprintf("scheduler cannot handle '%s' evaluation reason", eval.TriggeredBy)
		return false, s.setStatus(structs.EvalStatusFailed, desc)
	}
	return true, nil
}

// retryMax runs process until it is done, at most limit times in a row
// without progress.
func (s *schedulerBase) retryMax(limit int, process func() (bool, error)) error {
	for attempts := 0; attempts < limit; {
		done, err := process()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if s.planResult != nil && !s.planResult.IsNoOp() {
			attempts = 0 // part of the plan landed: the state moved on
		} else {
			attempts++
		}
	}
	return fmt.Errorf("%w (%d)", ErrMaxAttempts, limit)
}

// startAttempt reads the job and the state index, and starts an empty
// plan, a context and a stack for one attempt; batch picks the stack's
// batch behaviour. It returns the index the attempt reads at.
func (s *schedulerBase) startAttempt(batch bool) (uint64, error) {
	job, err := s.state.JobByID(nil, s.eval.Namespace, s.eval.JobID)
	if err != nil {
		return 0, fmt.Errorf("looking up job %q: %w", s.eval.JobID, err)
	}
	s.job = job
	index, err := s.state.LatestIndex()
	if err != nil {
		return 0, fmt.Errorf("reading state index: %w", err)
	}
	s.queuedAllocs = map[string]int{}
	if !job.Stopped() {
		for _, tg := range job.TaskGroups {
			s.queuedAllocs[tg.Name] = 0
		}
	}
	s.followUpEvals, s.failedTGAllocs, s.planResult = nil, nil, nil
	s.placed = map[string]string{}
	s.replacing = map[string]bool{}
	s.reconnects = nil
	s.plan = &structs.Plan{EvalID: s.eval.ID, Priority: s.eval.Priority, Job: job, SnapshotIndex: index}
	s.ctx = NewEvalContext(s.state, s.plan, s.logger)
	s.stack = newGenericStack(batch, s.ctx)
	if !job.Stopped() {
		s.stack.SetJob(job)
	}
	return index, nil
}

// appendPlacement adds alloc, placed on option's node, to the plan: its
// host ports, and the eviction of the allocations the node had to give up
// for it.
func (s *schedulerBase) appendPlacement(alloc *structs.Allocation, option *rankedNode, tg *structs.TaskGroup) {
	for _, victim := range option.preempted {
		s.plan.AppendPreemptedAlloc(victim, alloc.ID)
		alloc.PreemptedAllocations = append(alloc.PreemptedAllocations, victim.ID)
		if ann := s.plan.Annotations; ann != nil {
			ann.PreemptedAllocs = append(ann.PreemptedAllocs, victim.Stub())
			if d := ann.DesiredTGUpdates[tg.Name]; d != nil {
				d.Preemptions++
			}
		}
	}
	s.ctx.placePorts(alloc, option.Node, tg)
	s.plan.AppendAlloc(alloc)
	s.placed[alloc.ID] = tg.Name
}

// submitPlan submits the attempt's plan and returns true when nothing is
// left to retry. A plan that changes nothing is not submitted unless
// submitNoOp (a dry run that wants its annotations back).
func (s *schedulerBase) submitPlan(submitNoOp bool) (bool, error) {
	// Follow-ups commit in the plan's raft entry; a plan that changes
	// nothing has no entry, so its follow-ups are created on their own.
	if s.plan.IsNoOp() {
		for _, e := range s.followUpEvals {
			if err := s.planner.CreateEval(e); err != nil {
				return false, fmt.Errorf("creating follow-up evaluation: %w", err)
			}
		}
		if !submitNoOp {
			return true, nil
		}
	} else {
		s.plan.FollowUpEvals = s.followUpEvals
	}
	result, newState, err := s.planner.SubmitPlan(s.plan)
	s.planResult = result
	if err != nil {
		return false, fmt.Errorf("submitting plan: %w", err)
	}
	reportReconnectOutcomes(reconnectReport{
		Logger: s.logger, Recorder: s.recorder, Outcomes: s.reconnects, Replacing: s.replacing, Result: result,
	})
	s.adjustQueued(result)
	if newState != nil {
		s.logger.Debug("refreshing state after partial plan rejection")
		s.state = newState
		return false, nil
	}
	if full, expected, actual := result.FullCommit(s.plan); !full {
		s.logger.Debug("plan partially committed", "expected", expected, "actual", actual)
		return false, nil
	}
	return true, nil
}

// adjustQueued removes the committed placements from the queued counts.
func (s *schedulerBase) adjustQueued(result *structs.PlanResult) {
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

// setStatus writes the evaluation's outcome.
func (s *schedulerBase) setStatus(status, desc string) error {
	e := s.eval.Copy()
	e.Status = status
	e.StatusDescription = desc
	e.FailedTGAllocs = s.failedTGAllocs
	e.QueuedAllocations = s.queuedAllocs
	if s.blocked != nil {
		e.BlockedEval = s.blocked.ID
	}
	if s.nextEval != nil {
		e.NextEval = s.nextEval.ID
	}
	e.ModifyTime = s.now.UnixNano()
	if err := s.planner.UpdateEval(e); err != nil {
		return fmt.Errorf("updating evaluation: %w", err)
	}
	return nil
}
