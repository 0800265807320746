package nomad

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Job is the Job.* RPC endpoint.
type Job struct {
	srv *Server
}

// Register validates a job and writes it with its job-register evaluation
// in one raft entry, so a job is never stored without the evaluation that
// schedules it.
func (j *Job) Register(args *structs.JobRegisterRequest, reply *structs.JobRegisterResponse) error {
	if done, err := j.srv.forward("Job.Register", args, reply); done {
		return err
	}
	return j.register(args, reply, registerOpts{trigger: structs.EvalTriggerJobRegister})
}

// registerOpts tune register for the endpoints built on it.
type registerOpts struct {
	// trigger names why the evaluation is created ("job-scaling"...).
	trigger string
	// authorized is set by an endpoint that checked a capability of its
	// own (scale-job) instead of submit-job.
	authorized bool
}

// register is Register on the leader.
func (j *Job) register(args *structs.JobRegisterRequest, reply *structs.JobRegisterResponse, opts registerOpts) error {
	if args.Job == nil {
		return fmt.Errorf("%w: missing job for registration", structs.ErrMissingField)
	}
	if nulls := structs.NullElements("Job", args.Job); len(nulls) > 0 {
		return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, &structs.ValidationError{Problems: nulls})
	}
	args.Job.Canonicalize()
	if !opts.authorized {
		if err := j.srv.authorize(args.AuthToken, nsCap(args.Job.Namespace, acl.NamespaceCapabilitySubmitJob)); err != nil {
			return err
		}
		// An endpoint that authorized on its own checked this too.
		if err := j.srv.allowRegistration(args.AuthToken); err != nil {
			return err
		}
	}
	args.AuthToken = ""
	if problems := j.srv.jobProblems(args.Job); len(problems) > 0 {
		// The sentinel prefix survives the RPC, so callers on the far side
		// still see an invalid request (HTTP 400), not a server fault.
		return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, &structs.ValidationError{Problems: problems})
	}
	st := j.srv.State()
	existing, err := st.JobByID(nil, args.Job.Namespace, args.Job.ID)
	if err != nil {
		return err
	}
	if err := enforceIndex(args, existing); err != nil {
		return err
	}
	if args.PreserveCounts {
		preserveCounts(args.Job, existing)
	}
	now := j.srv.clock.Now()
	args.SubmitTime = now.UnixNano()
	// A periodic or parameterized job is a template: its children run,
	// it never does, so it gets no evaluation (as upstream).
	args.Eval = nil
	if !args.Job.IsParent() {
		args.Eval = args.Job.NewEval(opts.trigger, now)
		if err := overrideEvalPriority(args.Eval, args.EvalPriority); err != nil {
			return err
		}
	}
	if sc := args.Scaling; sc != nil && sc.ScalingEvent != nil && args.Eval != nil {
		evalID := args.Eval.ID
		sc.ScalingEvent.EvalID = &evalID
	}
	_, index, err := j.srv.raftApply(structs.JobRegisterRequestType, args)
	if err != nil {
		return err
	}
	reply.Warnings = joinWarnings(j.srv.disconnectWarning(args.Job), j.srv.memoryMaxWarning(args.Job))
	if args.Eval != nil {
		reply.EvalID = args.Eval.ID
		reply.EvalCreateIndex = index
	}
	reply.JobModifyIndex = index
	reply.Index = index
	return nil
}

// memoryMaxWarning names, in upstream's words, each task whose memory_max
// the scheduler will ignore because memory oversubscription is off; "" when
// it is on or no task sets one.
func (s *Server) memoryMaxWarning(job *structs.Job) string {
	_, cfg, err := s.State().SchedulerConfig(nil)
	if err != nil {
		s.logger.Warn("reading the scheduler configuration for the memory_max warning", "error", err)
		return ""
	}
	if cfg != nil && cfg.MemoryOversubscriptionEnabled {
		return ""
	}
	var out []string
	for _, tg := range job.TaskGroups {
		for _, t := range tg.Tasks {
			if t.Resources != nil && t.Resources.MemoryMaxMB != 0 {
				out = append(out, fmt.Sprintf("Memory oversubscription is not enabled; Task \"%s.%s\" memory_max value will be ignored. "+
					"Update the Scheduler Configuration to allow oversubscription.", tg.Name, t.Name))
			}
		}
	}
	return joinWarnings(out...)
}

// joinWarnings puts the non-empty warnings one a line.
func joinWarnings(warnings ...string) string {
	return strings.Join(slices.DeleteFunc(warnings, func(w string) bool { return w == "" }), "\n")
}

// preserveCounts gives each group of job that existing (the stored
// version, nil for a new job) has the stored count. It runs on the leader
// before the raft entry is written, so the entry carries the counts.
func preserveCounts(job, existing *structs.Job) {
	if existing == nil {
		return
	}
	for _, tg := range job.TaskGroups {
		if old := existing.LookupTaskGroup(tg.Name); old != nil {
			tg.Count = old.Count
		}
	}
}

// enforceIndex refuses a registration made against another version of
// the job than the one stored (`job run -check-index`), in upstream's words.
func enforceIndex(args *structs.JobRegisterRequest, existing *structs.Job) error {
	if !args.EnforceIndex {
		return nil
	}
	const prefix = "Enforcing job modify index"
	switch {
	case existing == nil && args.JobModifyIndex != 0:
		return fmt.Errorf("%w: %s %d: job does not exist", structs.ErrInvalidRequest, prefix, args.JobModifyIndex)
	case existing != nil && existing.JobModifyIndex != args.JobModifyIndex:
		return fmt.Errorf("%w: %s %d: job exists with conflicting job modify index: %d",
			structs.ErrInvalidRequest, prefix, args.JobModifyIndex, existing.JobModifyIndex)
	}
	return nil
}

// Deregister stops a job (or purges it) and schedules the stop.
func (j *Job) Deregister(args *structs.JobDeregisterRequest, reply *structs.JobDeregisterResponse) error {
	if done, err := j.srv.forward("Job.Deregister", args, reply); done {
		return err
	}
	if err := j.srv.authorizeNamespace(args.AuthToken, args.RequestNamespace(), acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	args.AuthToken = ""
	if args.JobID == "" {
		return fmt.Errorf("%w: missing job ID for deregistering", structs.ErrMissingField)
	}
	ns := args.RequestNamespace()
	job, err := j.srv.State().JobByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if job == nil {
		// Nothing to stop is a success with nothing written (no
		// evaluation, index 0), as upstream: a stop retried after a lost
		// answer, or racing a purge, must not fail.
		return nil
	}
	now := j.srv.clock.Now()
	args.Now = now.UnixNano()
	// Stopping a template stops its launches; it has no allocations to
	// stop (its children are jobs of their own).
	args.Eval = nil
	if !job.IsParent() {
		args.Eval = job.NewEval(structs.EvalTriggerJobDeregister, now)
		if err := overrideEvalPriority(args.Eval, args.EvalPriority); err != nil {
			return err
		}
	}
	_, index, err := j.srv.raftApply(structs.JobDeregisterRequestType, args)
	if err != nil {
		return err
	}
	if args.Eval != nil {
		reply.EvalID = args.Eval.ID
		reply.EvalCreateIndex = index
	}
	reply.JobModifyIndex = index
	reply.Index = index
	return nil
}

// Validate checks a job without registering it.
func (j *Job) Validate(args *structs.JobValidateRequest, reply *structs.JobValidateResponse) error {
	// A job for a region the federation does not know is validated here,
	// where the unknown region is one of the problems listed.
	if handled, err := j.srv.forwardRegion("Job.Validate", args, reply); handled && !errors.Is(err, structs.ErrNoRegionPath) {
		return err
	}
	if args.Job == nil {
		return fmt.Errorf("%w: missing job", structs.ErrMissingField)
	}
	if nulls := structs.NullElements("Job", args.Job); len(nulls) > 0 {
		reply.ValidationErrors = nulls
		reply.Error = (&structs.ValidationError{Problems: nulls}).Error()
		return nil
	}
	args.Job.Canonicalize()
	if err := j.srv.authorize(args.AuthToken, nsCap(args.Job.Namespace, acl.NamespaceCapabilityReadJob)); err != nil {
		return err
	}
	reply.DriverConfigValidated = false
	if problems := j.srv.jobProblems(args.Job); len(problems) > 0 {
		reply.ValidationErrors = problems
		reply.Error = (&structs.ValidationError{Problems: problems}).Error()
	}
	return nil
}

// GetJob returns one job, blocking on it when asked.
func (j *Job) GetJob(args *structs.JobSpecificRequest, reply *structs.SingleJobResponse) error {
	return j.srv.readJobQuery("Job.GetJob", args, reply, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		job, err := st.JobByID(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Job = job
		if job != nil {
			return job.ModifyIndex, nil
		}
		return st.Index(state.TableJobs)
	})
}

// List returns the jobs, optionally by ID prefix.
func (j *Job) List(args *structs.JobListRequest, reply *structs.JobListResponse) error {
	if done, err := j.srv.forwardQuery("Job.List", &args.QueryOptions, args, reply); done {
		return err
	}
	allowed, err := j.srv.authorizeList(args.AuthToken, args.RequestNamespace(), acl.NamespaceCapabilityListJobs)
	if err != nil {
		return err
	}
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		iter, err := st.JobsByIDPrefix(ws, args.RequestNamespace(), args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Jobs = []*structs.JobListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			job := raw.(*structs.Job)
			if !allowed(job.Namespace) {
				continue
			}
			summary, err := st.JobSummaryByID(ws, job.Namespace, job.ID)
			if err != nil {
				return 0, err
			}
			if job.IsParent() {
				if summary, err = withChildren(ws, st, summary); err != nil {
					return 0, err
				}
			}
			reply.Jobs = append(reply.Jobs, job.Stub(summary))
		}
		return tableIndex(st, state.TableJobs, state.TableJobSummary)
	})
}

// Allocations lists a job's allocations.
func (j *Job) Allocations(args *structs.JobSpecificRequest, reply *structs.JobAllocationsResponse) error {
	return j.srv.readJobQuery("Job.Allocations", args, reply, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByJob(ws, args.RequestNamespace(), args.JobID, args.All)
		if err != nil {
			return 0, err
		}
		reply.Allocations = make([]*structs.AllocListStub, 0, len(allocs))
		var index uint64
		for _, a := range allocs {
			reply.Allocations = append(reply.Allocations, a.Stub())
			index = max(index, a.ModifyIndex)
		}
		sort.Slice(reply.Allocations, func(a, b int) bool {
			return reply.Allocations[a].CreateIndex > reply.Allocations[b].CreateIndex
		})
		if index == 0 {
			return st.Index(state.TableAllocs)
		}
		return index, nil
	})
}

// Evaluations lists a job's evaluations.
func (j *Job) Evaluations(args *structs.JobSpecificRequest, reply *structs.JobEvaluationsResponse) error {
	return j.srv.readJobQuery("Job.Evaluations", args, reply, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		evals, err := st.EvalsByJob(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Evaluations = evals
		sort.Slice(evals, func(a, b int) bool { return evals[a].CreateIndex > evals[b].CreateIndex })
		return st.Index(state.TableEvals)
	})
}

// Summary returns a job's allocation counts.
func (j *Job) Summary(args *structs.JobSpecificRequest, reply *structs.JobSummaryResponse) error {
	return j.srv.readJobQuery("Job.Summary", args, reply, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		s, err := st.JobSummaryByID(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return 0, err
		}
		if s, err = withChildren(ws, st, s); err != nil {
			return 0, err
		}
		reply.JobSummary = s
		if s != nil && s.Children != nil && (s.Children.Pending+s.Children.Running+s.Children.Dead) > 0 {
			// The counts move with the children, which are jobs: a
			// blocking query must wake when any of them changes.
			return tableIndex(st, state.TableJobs, state.TableJobSummary)
		}
		if s != nil {
			return s.ModifyIndex, nil
		}
		return st.Index(state.TableJobSummary)
	})
}

// ScaleStatus reports, per group, the desired count and the allocations
// behind it. Allocations on disconnected nodes count as placed, not as
// running, and are counted apart in Unknown.
func (j *Job) ScaleStatus(args *structs.JobSpecificRequest, reply *structs.JobScaleStatusResponse) error {
	return j.srv.readJobQuery("Job.ScaleStatus", args, reply, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		job, err := st.JobByID(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return 0, err
		}
		if job == nil {
			reply.JobScaleStatus = nil
			return st.Index(state.TableJobs)
		}
		allocs, err := st.AllocsByJob(ws, job.Namespace, job.ID, false)
		if err != nil {
			return 0, err
		}
		events, err := st.ScalingEventsByJob(ws, job.Namespace, job.ID)
		if err != nil {
			return 0, err
		}
		reply.JobScaleStatus = scaleStatus(job, allocs)
		addScalingEvents(reply.JobScaleStatus, events)
		return tableIndex(st, state.TableJobs, state.TableAllocs, state.TableScalingEvent)
	})
}

// scaleStatus counts a job's allocations per group.
func scaleStatus(job *structs.Job, allocs []*structs.Allocation) *structs.JobScaleStatus {
	out := &structs.JobScaleStatus{
		JobID:          job.ID,
		Namespace:      job.Namespace,
		JobCreateIndex: job.CreateIndex,
		JobModifyIndex: job.JobModifyIndex,
		JobStopped:     job.Stop,
		TaskGroups:     make(map[string]*structs.TaskGroupScaleStatus, len(job.TaskGroups)),
	}
	for _, tg := range job.TaskGroups {
		out.TaskGroups[tg.Name] = &structs.TaskGroupScaleStatus{Desired: tg.Count, Events: []*structs.ScalingEvent{}}
	}
	for _, a := range allocs {
		g, ok := out.TaskGroups[a.TaskGroup]
		if !ok || a.TerminalStatus() {
			continue
		}
		g.Placed++
		switch a.ClientStatus {
		case structs.AllocClientStatusRunning:
			g.Running++
		case structs.AllocClientStatusUnknown:
			g.Unknown++
		}
		if a.ClientStatus != structs.AllocClientStatusUnknown && a.NeedsToReconnect() {
			g.Reconnecting++
		}
		// Deployment health as the client last reported it: an unknown
		// allocation keeps its verdict (see concepts/disconnected-clients.md).
		switch {
		case a.DeploymentStatus.IsHealthy():
			g.Healthy++
		case a.DeploymentStatus.IsUnhealthy():
			g.Unhealthy++
		}
	}
	for _, g := range out.TaskGroups {
		g.Unstable = g.UnstableReason()
	}
	return out
}

// overrideEvalPriority gives eval the priority a register or deregister
// asked for (0: the job's own), so an urgent change can jump the queue
// without changing the job.
func overrideEvalPriority(eval *structs.Evaluation, p int) error {
	if p == 0 {
		return nil
	}
	if p < structs.JobMinPriority || p > structs.JobMaxPriority {
		return fmt.Errorf("%w: eval priority must be between %d and %d", structs.ErrInvalidRequest, structs.JobMinPriority, structs.JobMaxPriority)
	}
	eval.Priority = p
	return nil
}
