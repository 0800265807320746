package nomad

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// GetJobVersions returns the stored versions of a job, newest first, and
// with Diffs the change each made to the one before it.
func (j *Job) GetJobVersions(args *structs.JobVersionsRequest, reply *structs.JobVersionsResponse) error {
	return j.srv.readJobQuery("Job.GetJobVersions", args, reply, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		versions, err := st.JobVersionsByID(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Versions, reply.Diffs = versions, nil
		if args.Diffs {
			for i := 0; i+1 < len(versions); i++ {
				d, err := versions[i+1].Diff(versions[i], false)
				if err != nil {
					return 0, err
				}
				reply.Diffs = append(reply.Diffs, d)
			}
		}
		var index uint64
		for _, v := range versions {
			index = max(index, v.ModifyIndex)
		}
		if index == 0 {
			return st.Index(state.TableJobVersion)
		}
		return index, nil
	})
}

// Revert registers a stored version of a job again, as a new version with
// its own evaluation. The current job's modify index is enforced, so a
// revert never overwrites an update it did not see.
func (j *Job) Revert(args *structs.JobRevertRequest, reply *structs.JobRegisterResponse) error {
	if done, err := j.srv.forward("Job.Revert", args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	if err := j.srv.authorizeNamespace(args.AuthToken, ns, acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	if args.JobID == "" {
		return fmt.Errorf("%w: missing job ID for revert", structs.ErrMissingField)
	}
	st := j.srv.State()
	cur, err := st.JobByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if cur == nil {
		return fmt.Errorf("%w: %s", structs.ErrUnknownJob, args.JobID)
	}
	if p := args.EnforcePriorVersion; p != nil && *p != cur.Version {
		return fmt.Errorf("%w: current job has version %d; enforcing version %d", structs.ErrInvalidRequest, cur.Version, *p)
	}
	if args.JobVersion == cur.Version {
		return fmt.Errorf("%w: can't revert to current version", structs.ErrInvalidRequest)
	}
	old, err := st.JobByIDAndVersion(nil, ns, args.JobID, args.JobVersion)
	if err != nil {
		return err
	}
	if old == nil {
		return fmt.Errorf("%w: job %q at version %d", structs.ErrUnknownJob, args.JobID, args.JobVersion)
	}
	job := old.Copy()
	job.Version = cur.Version
	reg := &structs.JobRegisterRequest{
		Job: job, EnforceIndex: true, JobModifyIndex: cur.JobModifyIndex,
		WriteRequest: args.WriteRequest,
	}
	return j.register(reg, reply, registerOpts{trigger: structs.EvalTriggerJobRegister})
}

// Stable marks a version of a job stable or not: the verdict a deployment
// gives, and the version an operator may revert to.
func (j *Job) Stable(args *structs.JobStabilityRequest, reply *structs.JobStabilityResponse) error {
	if done, err := j.srv.forward("Job.Stable", args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	if err := j.srv.authorizeNamespace(args.AuthToken, ns, acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	args.AuthToken = ""
	if args.JobID == "" {
		return fmt.Errorf("%w: missing job ID for setting stability", structs.ErrMissingField)
	}
	v, err := j.srv.State().JobByIDAndVersion(nil, ns, args.JobID, args.JobVersion)
	if err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("%w: job %q at version %d", structs.ErrUnknownJob, args.JobID, args.JobVersion)
	}
	_, index, err := j.srv.raftApply(structs.JobStabilityRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// Scale sets the count of one task group, registering the result as a new
// version with a "job-scaling" evaluation; the scaling event is recorded in
// the same raft entry. The count goes through the same validation as a
// registration, so its bounds are the same. A request without a count only
// records its event (an autoscaler reporting an error, say). A count change
// while the job's deployment is active is refused (ErrScalingBlocked)
// unless the request says PolicyOverride, as upstream.
func (j *Job) Scale(args *structs.JobScaleRequest, reply *structs.JobRegisterResponse) error {
	if done, err := j.srv.forward("Job.Scale", args, reply); done {
		return err
	}
	ns := args.RequestNamespace()
	if err := j.srv.authorize(args.AuthToken, scaleCap(ns)); err != nil {
		return err
	}
	if err := j.srv.allowRegistration(args.AuthToken); err != nil {
		return err
	}
	if err := j.srv.State().NamespaceExists(ns); err != nil {
		return err
	}
	args.AuthToken = ""
	group := args.Target[structs.ScalingTargetGroup]
	switch {
	case args.JobID == "":
		return fmt.Errorf("%w: missing job ID for scaling", structs.ErrMissingField)
	case group == "":
		return fmt.Errorf("%w: missing task group name for scaling action", structs.ErrMissingField)
	case args.Count != nil && *args.Count < 0:
		return fmt.Errorf("%w: scaling action count can't be negative", structs.ErrInvalidRequest)
	case args.Count != nil && *args.Count > structs.MaxGroupCount:
		return fmt.Errorf("%w: task group count %d exceeds the maximum of %d instances per group",
			structs.ErrInvalidRequest, *args.Count, structs.MaxGroupCount)
	}
	cur, err := j.srv.State().JobByID(nil, ns, args.JobID)
	if err != nil {
		return err
	}
	if cur == nil {
		return fmt.Errorf("%w: %s", structs.ErrUnknownJob, args.JobID)
	}
	tg := cur.LookupTaskGroup(group)
	if tg == nil {
		return fmt.Errorf("%w: task group %q specified for scaling does not exist in job", structs.ErrInvalidRequest, group)
	}
	if args.Count != nil {
		n := cur.InstanceCount() - max(tg.Count, 0) + int(*args.Count)
		if p := structs.InstanceCountProblem(n, j.srv.config.JobMaxCount); p != "" {
			return fmt.Errorf("%w: scaling group %q to %d: %s", structs.ErrInvalidRequest, group, *args.Count, p)
		}
	}
	event := &structs.ScalingEventRequest{Namespace: ns, JobID: cur.ID, TaskGroup: group, ScalingEvent: &structs.ScalingEvent{
		Time: uint64(j.srv.clock.Now().UnixNano()), Count: args.Count, PreviousCount: int64(tg.Count),
		Message: args.Message, Error: args.Error, Meta: args.Meta,
	}}
	if args.Count == nil {
		_, index, err := j.srv.raftApply(structs.ScalingEventRegisterRequestType, event)
		if err != nil {
			return err
		}
		reply.Index = index
		return nil
	}
	if cur.Stop {
		return fmt.Errorf("%w: job %q is stopped: start it before scaling", structs.ErrInvalidRequest, args.JobID)
	}
	if err := tg.Scaling.CheckCount(*args.Count); err != nil {
		return err
	}
	// A new count during a rollout would replace the deployment in
	// flight, as upstream refuses to do unless told to. The refusal is
	// recorded as an error event, in upstream's shape, so the job's scaling
	// history shows what was asked and why nothing happened.
	if !args.PolicyOverride {
		d, err := j.srv.State().LatestDeploymentByJobID(nil, ns, cur.ID)
		if err != nil {
			return err
		}
		if d.Active() && d.JobCreateIndex == cur.CreateIndex {
			return j.refuseScale(event, args, structs.ErrScalingBlocked)
		}
		// A count computed from Running while allocations are unknown or
		// reconnecting would shrink a group that is all there, or grow
		// one that briefly runs twice (see CheckScale). No event is
		// recorded: the Nomad Autoscaler retries every evaluation
		// interval for as long as the node is away, which would be a raft
		// write per group per interval; the scale status says why.
		allocs, err := j.srv.State().AllocsByJob(nil, ns, cur.ID, false)
		if err != nil {
			return err
		}
		if err := scaleStatus(cur, allocs).TaskGroups[group].CheckScale(*args.Count); err != nil {
			return err
		}
	}
	job := cur.Copy()
	job.LookupTaskGroup(group).Count = int(*args.Count)
	reg := &structs.JobRegisterRequest{
		Job: job, EnforceIndex: true, JobModifyIndex: cur.JobModifyIndex, Scaling: event,
		WriteRequest: args.WriteRequest,
	}
	if args.JobModifyIndex != 0 {
		reg.JobModifyIndex = args.JobModifyIndex
	}
	return j.register(reg, reply, registerOpts{trigger: structs.EvalTriggerScaling, authorized: true})
}

// refuseScale records a refused count change as an error event, in
// upstream's shape, so the job's scaling history shows what was asked and
// why nothing happened, and returns the refusal.
func (j *Job) refuseScale(event *structs.ScalingEventRequest, args *structs.JobScaleRequest, refusal error) error {
	ev := event.ScalingEvent
	ev.Meta = map[string]any{"OriginalCount": *args.Count, "OriginalMessage": args.Message, "OriginalMeta": args.Meta}
	ev.Count, ev.Error, ev.Message = nil, true, refusal.Error()
	if _, _, err := j.srv.raftApply(structs.ScalingEventRegisterRequestType, event); err != nil {
		return err
	}
	return refusal
}

// addScalingEvents lists each group's recorded events, newest first, in
// its scale status.
func addScalingEvents(st *structs.JobScaleStatus, events *structs.JobScalingEvents) {
	if events == nil {
		return
	}
	for name, g := range st.TaskGroups {
		if evs := events.ScalingEvents[name]; len(evs) > 0 {
			g.Events = evs
		}
	}
}

// scaleCap allows scale-job or submit-job, as upstream.
func scaleCap(ns string) permission {
	return permission{
		allow: func(a *acl.ACL) bool {
			return a.AllowNamespaceOperation(ns, acl.NamespaceCapabilityScaleJob) ||
				a.AllowNamespaceOperation(ns, acl.NamespaceCapabilitySubmitJob)
		},
		what: fmt.Sprintf("%s in namespace %q", acl.NamespaceCapabilityScaleJob, ns),
	}
}
