package nomad

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
)

// Plan runs the scheduler over a snapshot in which the job is registered,
// and reports what it would do, without submitting anything: the same
// scheduler code as a real registration, so the dry run cannot drift from
// what `job run` does.
func (j *Job) Plan(args *structs.JobPlanRequest, reply *structs.JobPlanResponse) error {
	if done, err := j.srv.forward("Job.Plan", args, reply); done {
		return err
	}
	if args.Job == nil {
		return fmt.Errorf("%w: missing job for planning", structs.ErrMissingField)
	}
	if nulls := structs.NullElements("Job", args.Job); len(nulls) > 0 {
		return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, &structs.ValidationError{Problems: nulls})
	}
	job := args.Job
	job.Canonicalize()
	if err := j.srv.authorize(args.AuthToken, nsCap(job.Namespace, acl.NamespaceCapabilitySubmitJob)); err != nil {
		return err
	}
	if problems := j.srv.jobProblems(job); len(problems) > 0 {
		return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, &structs.ValidationError{Problems: problems})
	}
	snap, err := j.srv.State().Snapshot()
	if err != nil {
		return err
	}
	existing, err := snap.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	latest, err := snap.LatestIndex()
	if err != nil {
		return err
	}
	if args.Diff {
		if reply.Diff, err = existing.Diff(job, true); err != nil {
			return err
		}
	}
	if existing != nil {
		reply.JobModifyIndex = existing.JobModifyIndex
	}

	// The snapshot is private: writing the job into it registers it for
	// this dry run alone, at the index the next raft entry would have.
	now := j.srv.clock.Now()
	index := latest + 1
	if err := snap.UpsertJob(index, now.UnixNano(), job.Copy()); err != nil {
		return err
	}
	stored, err := snap.JobByID(nil, job.Namespace, job.ID)
	if err != nil {
		return err
	}
	if stored.IsParent() {
		// A template places nothing; its children are planned when they
		// launch. Upstream answers with the next launch instead.
		return planParent(j.srv, stored, now, index, reply)
	}
	eval := stored.NewEval(structs.EvalTriggerJobRegister, now)
	eval.AnnotatePlan = true
	planner := &dryRunPlanner{}
	sched, err := scheduler.NewScheduler(eval.Type, scheduler.Config{
		Logger: j.srv.logger.Named("plan"), State: snap, Planner: planner, Now: j.srv.clock.Now,
	})
	if err != nil {
		return err
	}
	if err := sched.Process(eval); err != nil {
		return fmt.Errorf("dry run of job %q: %w", job.ID, err)
	}
	planner.fill(reply)
	if reply.Annotations == nil {
		// The system schedulers do not annotate their plans: count what
		// the plan does instead.
		allocs, err := snap.AllocsByJob(nil, job.Namespace, job.ID, false)
		if err != nil {
			return err
		}
		reply.Annotations = annotationsFromPlan(stored, planner.plan, allocs)
	}
	if reply.Diff != nil {
		annotateGroups(reply.Diff, reply.Annotations)
	}
	reply.Warnings = j.srv.disconnectWarning(job)
	reply.Index = index - 1
	return nil
}

// dryRunPlanner is the scheduler's Planner for `job plan`: it keeps what
// the scheduler hands it and commits nothing.
type dryRunPlanner struct {
	plan    *structs.Plan
	eval    *structs.Evaluation
	created []*structs.Evaluation
}

var _ scheduler.Planner = (*dryRunPlanner)(nil)

// SubmitPlan accepts the whole plan, as if the applier had committed it.
func (p *dryRunPlanner) SubmitPlan(plan *structs.Plan) (*structs.PlanResult, scheduler.State, error) {
	p.plan = plan
	p.created = append(p.created, plan.FollowUpEvals...)
	return &structs.PlanResult{NodeUpdate: plan.NodeUpdate, NodeAllocation: plan.NodeAllocation}, nil, nil
}

func (p *dryRunPlanner) UpdateEval(e *structs.Evaluation) error { p.eval = e; return nil }

func (p *dryRunPlanner) CreateEval(e *structs.Evaluation) error {
	p.created = append(p.created, e)
	return nil
}

func (p *dryRunPlanner) ReblockEval(e *structs.Evaluation) error { return nil }

func (p *dryRunPlanner) fill(reply *structs.JobPlanResponse) {
	if p.plan != nil {
		reply.Annotations = p.plan.Annotations
		reply.DisconnectPolicies = disconnectPolicies(p.plan)
	}
	if p.eval != nil {
		reply.FailedTGAllocs = p.eval.FailedTGAllocs
	}
	reply.CreatedEvals = p.created
}

// disconnectPolicies lists the distinct disconnect policies of the plan's
// allocations per group, sorted; nil when the plan places or updates
// nothing.
func disconnectPolicies(plan *structs.Plan) map[string][]string {
	var out map[string][]string
	for _, allocs := range plan.NodeAllocation {
		for _, a := range allocs {
			if out == nil {
				out = map[string][]string{}
			}
			if s := a.DisconnectPolicy().String(); !slices.Contains(out[a.TaskGroup], s) {
				out[a.TaskGroup] = append(out[a.TaskGroup], s)
			}
		}
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// annotationsFromPlan counts, per group, the placements, in-place updates
// and stops of plan (nil when the scheduler found nothing to do), and
// ignores the live allocations it leaves alone.
func annotationsFromPlan(job *structs.Job, plan *structs.Plan, allocs []*structs.Allocation) *structs.PlanAnnotations {
	out := &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{}}
	for _, tg := range job.TaskGroups {
		out.DesiredTGUpdates[tg.Name] = &structs.DesiredUpdates{}
	}
	group := func(name string) *structs.DesiredUpdates {
		u, ok := out.DesiredTGUpdates[name]
		if !ok {
			u = &structs.DesiredUpdates{}
			out.DesiredTGUpdates[name] = u
		}
		return u
	}
	touched := map[string]bool{}
	if plan != nil {
		for _, list := range plan.NodeUpdate {
			for _, a := range list {
				touched[a.ID] = true
				group(a.TaskGroup).Stop++
			}
		}
	}
	live := map[string]bool{}
	for _, a := range allocs {
		if !a.TerminalStatus() {
			live[a.ID] = true
		}
	}
	if plan != nil {
		for _, list := range plan.NodeAllocation {
			for _, a := range list {
				touched[a.ID] = true
				if live[a.ID] {
					group(a.TaskGroup).InPlaceUpdate++
				} else {
					group(a.TaskGroup).Place++
				}
				group(a.TaskGroup).Preemptions += uint64(len(a.PreemptedAllocations))
			}
		}
		for _, nodeID := range slices.Sorted(maps.Keys(plan.NodePreemptions)) {
			for _, a := range plan.NodePreemptions[nodeID] {
				out.PreemptedAllocs = append(out.PreemptedAllocs, a.Stub())
			}
		}
	}
	for _, a := range allocs {
		if live[a.ID] && !touched[a.ID] {
			group(a.TaskGroup).Ignore++
		}
	}
	return out
}

// annotateGroups copies the scheduler's counts per group into the diff,
// under upstream's update names, so `job plan` prints them beside each
// group.
func annotateGroups(d *structs.JobDiff, a *structs.PlanAnnotations) {
	for _, g := range d.TaskGroups {
		u, ok := a.DesiredTGUpdates[g.Name]
		if !ok {
			continue
		}
		g.Updates = map[string]uint64{}
		for name, n := range map[string]uint64{
			structs.UpdateTypeIgnore: u.Ignore, structs.UpdateTypeCreate: u.Place,
			structs.UpdateTypeDestroy: u.Stop, structs.UpdateTypeMigrate: u.Migrate,
			structs.UpdateTypeCanary: u.Canary, structs.UpdateTypeInplaceUpdate: u.InPlaceUpdate,
			structs.UpdateTypeDestructiveUpdate: u.DestructiveUpdate,
		} {
			if n > 0 {
				g.Updates[name] = n
			}
		}
		annotateChanges(g, u)
	}
}

// annotateChanges says, on the fields and tasks of a group's diff, what
// each change forces, as upstream's plan output does.
func annotateChanges(g *structs.TaskGroupDiff, u *structs.DesiredUpdates) {
	for _, f := range g.Fields {
		if f.Name != "Count" || f.Type != structs.DiffTypeEdited {
			continue
		}
		if oldN, newN := atoi(f.Old), atoi(f.New); newN > oldN {
			f.Annotations = append(f.Annotations, "forces create")
		} else if newN < oldN {
			f.Annotations = append(f.Annotations, "forces destroy")
		}
	}
	for _, t := range g.Tasks {
		switch {
		case t.Type == structs.DiffTypeNone:
		case g.Type == structs.DiffTypeAdded:
			t.Annotations = append(t.Annotations, "forces create")
		case g.Type == structs.DiffTypeDeleted:
			t.Annotations = append(t.Annotations, "forces destroy")
		case t.Type != structs.DiffTypeEdited || u.DestructiveUpdate > 0:
			t.Annotations = append(t.Annotations, "forces create/destroy update")
		case u.InPlaceUpdate > 0:
			t.Annotations = append(t.Annotations, "forces in-place update")
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// planParent answers the plan of a periodic or parameterized job.
func planParent(srv *Server, job *structs.Job, now time.Time, index uint64, reply *structs.JobPlanResponse) error {
	if job.IsPeriodicActive() {
		next, err := job.Periodic.Next(now)
		if err != nil {
			return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, err)
		}
		reply.NextPeriodicLaunch = next
	}
	reply.Annotations = &structs.PlanAnnotations{DesiredTGUpdates: map[string]*structs.DesiredUpdates{}}
	if reply.Diff != nil {
		annotateGroups(reply.Diff, reply.Annotations)
	}
	reply.Warnings = srv.disconnectWarning(job)
	reply.Index = index - 1
	return nil
}
