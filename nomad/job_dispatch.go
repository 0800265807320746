package nomad

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// PeriodicForce launches a child of a periodic job now, whatever its
// schedule and prohibit_overlap say (`nomad job periodic force`).
func (j *Job) PeriodicForce(args *structs.PeriodicForceRequest, reply *structs.PeriodicForceResponse) error {
	if done, err := j.srv.forward("Job.PeriodicForce", args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	if err := j.srv.authorizeNamespace(args.AuthToken, ns, acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	args.AuthToken = ""
	job, err := j.parent(ns, args.JobID)
	if err != nil {
		return err
	}
	switch {
	case !job.IsPeriodic():
		return fmt.Errorf("%w: can't force launch non-periodic job %q", structs.ErrInvalidRequest, job.ID)
	case job.Stop:
		return fmt.Errorf("%w: can't force launch stopped periodic job %q", structs.ErrInvalidRequest, job.ID)
	case !job.Periodic.Enabled:
		return fmt.Errorf("%w: can't force launch periodic job %q: periodic.enabled is false", structs.ErrInvalidRequest, job.ID)
	}
	now := j.srv.clock.Now()
	res, err := j.srv.launchChild(launchRequest{child: job.PeriodicChild(now), trigger: structs.EvalTriggerPeriodicJob, now: now})
	if err != nil {
		return err
	}
	reply.EvalID = res.EvalID
	reply.EvalCreateIndex = res.Index
	reply.Index = res.Index
	return nil
}

// Dispatch launches a child of a parameterized job with a payload and
// meta, each checked against the job's parameterized block.
func (j *Job) Dispatch(args *structs.JobDispatchRequest, reply *structs.JobDispatchResponse) error {
	if done, err := j.srv.forward("Job.Dispatch", args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	if err := j.srv.authorizeNamespace(args.AuthToken, ns, acl.NamespaceCapabilityDispatchJob); err != nil {
		return err
	}
	if err := j.srv.allowRegistration(args.AuthToken); err != nil {
		return err
	}
	args.AuthToken = ""
	job, err := j.parent(ns, args.JobID)
	if err != nil {
		return err
	}
	switch {
	case !job.IsParameterized():
		return fmt.Errorf("%w: specified job %q is not a parameterized job", structs.ErrInvalidRequest, job.ID)
	case job.Stop:
		return fmt.Errorf("%w: specified job %q is stopped", structs.ErrInvalidRequest, job.ID)
	}
	if err := job.ParameterizedJob.ValidateDispatch(args.Payload, args.Meta); err != nil {
		return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, err)
	}
	if p := args.Priority; p != 0 && (p < structs.JobMinPriority || p > structs.JobMaxPriority) {
		return fmt.Errorf("%w: dispatch priority must be between %d and %d (got %d)", structs.ErrInvalidRequest, structs.JobMinPriority, structs.JobMaxPriority, p)
	}
	now := j.srv.clock.Now()
	child := job.DispatchChild(structs.DispatchedID(job.ID, now), args.Payload, args.Meta)
	if args.Priority != 0 {
		child.Priority = args.Priority
	}
	res, err := j.srv.launchChild(launchRequest{child: child, trigger: structs.EvalTriggerJobRegister, now: now})
	if err != nil {
		return err
	}
	reply.DispatchedJobID = child.ID
	reply.EvalID = res.EvalID
	reply.EvalCreateIndex = res.Index
	reply.JobCreateIndex = res.Index
	reply.Index = res.Index
	return nil
}

// parent returns the stored job a force or dispatch names.
func (j *Job) parent(ns, id string) (*structs.Job, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: missing job ID", structs.ErrMissingField)
	}
	job, err := j.srv.State().JobByID(nil, ns, id)
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, fmt.Errorf("%w: %s", structs.ErrUnknownJob, id)
	}
	return job, nil
}

// withChildren returns summary with the counts of its job's children, when
// the job is a periodic or parameterized parent. The counts are computed
// on read from the children's statuses rather than kept, so they cannot
// drift from the jobs they count.
func withChildren(ws memdb.WatchSet, st *state.StateStore, summary *structs.JobSummary) (*structs.JobSummary, error) {
	if summary == nil {
		return nil, nil
	}
	job, err := st.JobByID(ws, summary.Namespace, summary.JobID)
	if err != nil || !job.IsParent() {
		return summary, err
	}
	iter, err := st.JobsByIDPrefix(ws, job.Namespace, job.ID+"/")
	if err != nil {
		return nil, err
	}
	counts := &structs.JobChildrenSummary{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		c := raw.(*structs.Job)
		if c.ParentID != job.ID {
			continue
		}
		switch c.Status {
		case structs.JobStatusPending:
			counts.Pending++
		case structs.JobStatusRunning:
			counts.Running++
		case structs.JobStatusDead:
			counts.Dead++
		}
	}
	out := summary.Copy()
	out.Children = counts
	return out, nil
}
