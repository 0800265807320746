package nomad

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Deployment is the RPC endpoint for deployments.
type Deployment struct {
	srv *Server
}

// List returns the deployments of the namespace (or every namespace the
// token reads, for "*") whose ID starts with the prefix, newest first.
func (d *Deployment) List(args *structs.DeploymentListRequest, reply *structs.DeploymentListResponse) error {
	if done, err := d.srv.forwardQuery("Deployment.List", &args.QueryOptions, args, reply); done {
		return err
	}
	allowed, err := d.srv.authorizeList(args.AuthToken, args.RequestNamespace(), acl.NamespaceCapabilityReadJob)
	if err != nil {
		return err
	}
	return d.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		all, err := st.Deployments(ws, args.RequestNamespace(), args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Deployments = []*structs.Deployment{}
		for _, dep := range all {
			if allowed(dep.Namespace) {
				reply.Deployments = append(reply.Deployments, dep)
			}
		}
		return st.Index(state.TableDeployment)
	})
}

// GetDeployment returns one deployment, nil when there is none.
func (d *Deployment) GetDeployment(args *structs.DeploymentSpecificRequest, reply *structs.SingleDeploymentResponse) error {
	if done, err := d.srv.forwardQuery("Deployment.GetDeployment", &args.QueryOptions, args, reply); done {
		return err
	}
	canRead, err := d.srv.readJobCheck(args.AuthToken)
	if err != nil {
		return err
	}
	return d.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		dep, err := st.DeploymentByID(ws, args.DeploymentID)
		if err != nil {
			return 0, err
		}
		if dep != nil {
			if err := canRead(dep.Namespace); err != nil {
				return 0, err
			}
		}
		reply.Deployment = dep
		return st.Index(state.TableDeployment)
	})
}

// Allocations returns the allocations of a deployment.
func (d *Deployment) Allocations(args *structs.DeploymentSpecificRequest, reply *structs.AllocListResponse) error {
	if done, err := d.srv.forwardQuery("Deployment.Allocations", &args.QueryOptions, args, reply); done {
		return err
	}
	canRead, err := d.srv.readJobCheck(args.AuthToken)
	if err != nil {
		return err
	}
	return d.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		reply.Allocations = []*structs.AllocListStub{}
		dep, err := st.DeploymentByID(ws, args.DeploymentID)
		if err != nil || dep == nil {
			return 1, err
		}
		if err := canRead(dep.Namespace); err != nil {
			return 0, err
		}
		allocs, err := st.AllocsByJob(ws, dep.Namespace, dep.JobID, true)
		if err != nil {
			return 0, err
		}
		for _, a := range allocs {
			if a.DeploymentID == dep.ID {
				reply.Allocations = append(reply.Allocations, a.Stub())
			}
		}
		return st.Index(state.TableAllocs)
	})
}

// writable returns the deployment an operator changes, after checking the
// token may submit jobs in its namespace.
func (d *Deployment) writable(secret, id string) (*structs.Deployment, *structs.Job, error) {
	if id == "" {
		return nil, nil, fmt.Errorf("%w: missing deployment ID", structs.ErrMissingField)
	}
	st := d.srv.State()
	dep, err := st.DeploymentByID(nil, id)
	if err != nil {
		return nil, nil, err
	}
	if dep == nil {
		return nil, nil, fmt.Errorf("%w: %s", structs.ErrUnknownDeployment, id)
	}
	if err := d.srv.authorizeNamespace(secret, dep.Namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return nil, nil, err
	}
	job, err := st.JobByID(nil, dep.Namespace, dep.JobID)
	if err != nil {
		return nil, nil, err
	}
	return dep, job, nil
}

// deploymentEval is the evaluation that carries an operator's change of a
// deployment to the scheduler; nil when the job is gone.
func (d *Deployment) deploymentEval(dep *structs.Deployment, job *structs.Job) *structs.Evaluation {
	if job == nil {
		return nil
	}
	e := job.NewEval(structs.EvalTriggerDeploymentWatcher, d.srv.clock.Now())
	e.DeploymentID, e.Priority = dep.ID, dep.EvalPriority
	return e
}

func (d *Deployment) reply(dep *structs.Deployment, eval *structs.Evaluation, index uint64, reply *structs.DeploymentUpdateResponse) {
	reply.DeploymentModifyIndex, reply.Index = index, index
	if eval != nil {
		reply.EvalID, reply.EvalCreateIndex = eval.ID, index
	}
}

// Promote promotes the canaries of a running deployment: every group, or
// the named ones. Every canary of those groups must be healthy.
func (d *Deployment) Promote(args *structs.DeploymentPromoteRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Promote", args, reply); done {
		return err
	}
	dep, job, err := d.writable(args.AuthToken, args.DeploymentID)
	if err != nil {
		return err
	}
	args.AuthToken = ""
	if !dep.Active() {
		return fmt.Errorf("%w: can't promote terminal deployment", structs.ErrInvalidRequest)
	}
	in, err := deploymentInputFor(d.srv.State(), dep, d.srv.clock.Now())
	if err != nil {
		return err
	}
	if err := promotable(dep, in.Canaries, args); err != nil {
		return err
	}
	eval := d.deploymentEval(dep, job)
	_, index, err := d.srv.raftApply(structs.DeploymentPromoteRequestType, &structs.ApplyDeploymentPromoteRequest{
		DeploymentPromoteRequest: *args, Eval: eval, UpdatedAt: d.srv.clock.Now().UnixNano(),
	})
	if err != nil {
		return err
	}
	d.reply(dep, eval, index, reply)
	return nil
}

// promotable checks that the groups to promote have canaries, all healthy.
func promotable(dep *structs.Deployment, canaries []*structs.Allocation, args *structs.DeploymentPromoteRequest) error {
	healthy := map[string]int{}
	for _, a := range canaries {
		if a.DeploymentStatus.IsHealthy() {
			healthy[a.TaskGroup]++
		}
	}
	any := false
	for name, g := range dep.TaskGroups {
		if !args.All && !contains(args.Groups, name) {
			continue
		}
		if g.DesiredCanaries == 0 || g.Promoted {
			continue
		}
		any = true
		if healthy[name] < g.DesiredCanaries {
			return fmt.Errorf("%w: task group %q has %d/%d healthy allocations", structs.ErrInvalidRequest, name, healthy[name], g.DesiredCanaries)
		}
	}
	if !any {
		return fmt.Errorf("%w: no canaries to promote", structs.ErrInvalidRequest)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Pause pauses or resumes a deployment.
func (d *Deployment) Pause(args *structs.DeploymentPauseRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Pause", args, reply); done {
		return err
	}
	dep, job, err := d.writable(args.AuthToken, args.DeploymentID)
	if err != nil {
		return err
	}
	args.AuthToken = ""
	if !dep.Active() {
		action := "resume"
		if args.Pause {
			action = "pause"
		}
		return fmt.Errorf("%w: can't %s terminal deployment", structs.ErrInvalidRequest, action)
	}
	u := &structs.DeploymentStatusUpdate{DeploymentID: dep.ID, Status: structs.DeploymentStatusPaused, StatusDescription: structs.DeploymentStatusDescriptionPaused}
	var eval *structs.Evaluation
	if !args.Pause {
		u.Status, u.StatusDescription = structs.DeploymentStatusRunning, structs.DeploymentStatusDescriptionRunning
		if dep.RequiresPromotion() {
			u.StatusDescription = structs.DeploymentStatusDescriptionRunningNeedsPromotion
		}
		eval = d.deploymentEval(dep, job)
	}
	return d.applyStatus(dep, &structs.DeploymentStatusUpdateRequest{DeploymentUpdate: u, Eval: eval}, reply)
}

// Fail fails a running deployment, rolling back as auto_revert says.
func (d *Deployment) Fail(args *structs.DeploymentFailRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.Fail", args, reply); done {
		return err
	}
	dep, job, err := d.writable(args.AuthToken, args.DeploymentID)
	if err != nil {
		return err
	}
	if !dep.Active() {
		return fmt.Errorf("%w: can't fail terminal deployment", structs.ErrInvalidRequest)
	}
	in, err := deploymentInputFor(d.srv.State(), dep, d.srv.clock.Now())
	if err != nil {
		return err
	}
	revert := false
	for _, g := range dep.TaskGroups {
		revert = revert || g.AutoRevert
	}
	step := failDeployment(in, structs.DeploymentStatusDescriptionFailedByUser, revert)
	req := &structs.DeploymentStatusUpdateRequest{DeploymentUpdate: step.Update, Job: step.Rollback, Eval: d.deploymentEval(dep, job)}
	if step.Rollback != nil {
		reply.RevertedJobVersion = new(step.Rollback.Version)
	}
	return d.applyStatus(dep, req, reply)
}

func (d *Deployment) applyStatus(dep *structs.Deployment, req *structs.DeploymentStatusUpdateRequest, reply *structs.DeploymentUpdateResponse) error {
	req.UpdatedAt = d.srv.clock.Now().UnixNano()
	_, index, err := d.srv.raftApply(structs.DeploymentStatusUpdateRequestType, req)
	if err != nil {
		return err
	}
	d.reply(dep, req.Eval, index, reply)
	return nil
}

// SetAllocHealth records allocation health by hand (health_check =
// "manual", or an operator's verdict). An unhealthy allocation fails the
// deployment through the watcher, as one the client reports does.
func (d *Deployment) SetAllocHealth(args *structs.DeploymentAllocHealthRequest, reply *structs.DeploymentUpdateResponse) error {
	if done, err := d.srv.forward("Deployment.SetAllocHealth", args, reply); done {
		return err
	}
	dep, job, err := d.writable(args.AuthToken, args.DeploymentID)
	if err != nil {
		return err
	}
	args.AuthToken = ""
	if !dep.Active() {
		return fmt.Errorf("%w: can't set health of allocations for a terminal deployment", structs.ErrInvalidRequest)
	}
	if len(args.HealthyAllocationIDs)+len(args.UnhealthyAllocationIDs) == 0 {
		return fmt.Errorf("%w: must specify at least one healthy/unhealthy allocation ID", structs.ErrMissingField)
	}
	eval := d.deploymentEval(dep, job)
	_, index, err := d.srv.raftApply(structs.DeploymentAllocHealthRequestType, &structs.ApplyDeploymentAllocHealthRequest{
		DeploymentAllocHealthRequest: *args, Timestamp: d.srv.clock.Now().UTC(), Eval: eval,
	})
	if err != nil {
		return err
	}
	d.reply(dep, eval, index, reply)
	return nil
}

// Deployments returns a job's deployments, newest first.
func (j *Job) Deployments(args *structs.JobDeploymentsRequest, reply *structs.JobDeploymentsResponse) error {
	if done, err := j.srv.forwardQuery("Job.Deployments", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNamespace(args.AuthToken, args.RequestNamespace(), acl.NamespaceCapabilityReadJob); err != nil {
		return err
	}
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		all, err := st.DeploymentsByJobID(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Deployments = all
		if reply.Deployments == nil {
			reply.Deployments = []*structs.Deployment{}
		}
		return st.Index(state.TableDeployment)
	})
}

// LatestDeployment returns a job's newest deployment, nil when it has none.
func (j *Job) LatestDeployment(args *structs.JobDeploymentsRequest, reply *structs.SingleDeploymentResponse) error {
	if done, err := j.srv.forwardQuery("Job.LatestDeployment", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := j.srv.authorizeNamespace(args.AuthToken, args.RequestNamespace(), acl.NamespaceCapabilityReadJob); err != nil {
		return err
	}
	return j.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		dep, err := st.LatestDeploymentByJobID(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Deployment = dep
		return st.Index(state.TableDeployment)
	})
}
