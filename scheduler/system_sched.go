package scheduler

import (
	"errors"
	"fmt"
	"sort"
	"time"

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
	schedulerBase
	sysbatch bool
}

// NewSystemScheduler returns the scheduler for system jobs.
func NewSystemScheduler(cfg Config) Scheduler {
	return &SystemScheduler{schedulerBase: newSchedulerBase(cfg, structs.JobTypeSystem)}
}

// NewSysBatchScheduler returns the scheduler for sysbatch jobs: each node
// runs the job to completion once per job version.
func NewSysBatchScheduler(cfg Config) Scheduler {
	return &SystemScheduler{schedulerBase: newSchedulerBase(cfg, structs.JobTypeSysBatch), sysbatch: true}
}

// Process handles one evaluation; see GenericScheduler.Process. Out of
// attempts, the evaluation fails without a follow-up: the next node or job
// change evaluates the job again.
func (s *SystemScheduler) Process(eval *structs.Evaluation) error {
	if ok, err := s.begin(eval); !ok {
		return err
	}
	if err := s.retryMax(maxSystemScheduleAttempts, s.process); err != nil {
		if !errors.Is(err, ErrMaxAttempts) {
			return err
		}
		return s.setStatus(structs.EvalStatusFailed, err.Error())
	}
	return s.setStatus(structs.EvalStatusComplete, "")
}

// process makes and submits one plan. It returns true when nothing is
// left to retry.
func (s *SystemScheduler) process() (bool, error) {
	if _, err := s.startAttempt(s.sysbatch); err != nil {
		return false, err
	}
	if err := s.computeJobAllocs(); err != nil {
		return false, err
	}
	return s.submitPlan(false)
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
	var stagger time.Duration
	limited := false
	for _, tg := range s.job.TaskGroups {
		if tg.Count == 0 {
			// A group switched off (upstream's blue/green of system
			// jobs): it runs nowhere.
			stopAll(groups[tg.Name])
			continue
		}
		d := s.diffGroup(tg, groups[tg.Name], tainted, nodes)
		timeouts = append(timeouts, d.timeouts...)
		if d.limited {
			if !limited || tg.Update.Stagger < stagger {
				stagger = tg.Update.Stagger
			}
			limited = true
		}
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
	if limited {
		// The next batch of a rolling update, stagger later (the
		// shortest of the limited groups'), recorded as this
		// evaluation's NextEval as upstream does.
		s.nextEval = s.eval.NextRollingEval(stagger, s.now)
		s.followUpEvals = append(s.followUpEvals, s.nextEval)
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
		AllocatedResources: s.ctx.allocatedResources(tg),
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
	s.appendPlacement(alloc, option, tg)
}

func sortedGroupNames(groups map[string]allocSet) []string {
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
