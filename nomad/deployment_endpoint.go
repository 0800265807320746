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

// deploymentChange names an operator's change of a deployment for change.
type deploymentChange struct {
	method string
	id     string
	args   any
	wr     *structs.WriteRequest
	reply  *structs.DeploymentUpdateResponse
	// terminal is the refusal when the deployment is no longer active.
	terminal string
}

// change runs what every change of a deployment starts with: the call
// goes to the leader; there, the deployment must exist, the token must
// submit jobs in its namespace, and the deployment must still be active.
// The token is cleared before apply, so it never reaches the raft log.
// apply gets the deployment and its job, nil when the job is gone.
func (d *Deployment) change(c deploymentChange, apply func(dep *structs.Deployment, job *structs.Job) error) error {
	if done, err := d.srv.forward(c.method, c.args, c.reply); done {
		return err
	}
	if c.id == "" {
		return fmt.Errorf("%w: missing deployment ID", structs.ErrMissingField)
	}
	st := d.srv.State()
	dep, err := st.DeploymentByID(nil, c.id)
	if err != nil {
		return err
	}
	if dep == nil {
		return fmt.Errorf("%w: %s", structs.ErrUnknownDeployment, c.id)
	}
	if err := d.srv.authorizeNamespace(c.wr.AuthToken, dep.Namespace, acl.NamespaceCapabilitySubmitJob); err != nil {
		return err
	}
	c.wr.AuthToken = ""
	job, err := st.JobByID(nil, dep.Namespace, dep.JobID)
	if err != nil {
		return err
	}
	if !dep.Active() {
		return fmt.Errorf("%w: %s", structs.ErrInvalidRequest, c.terminal)
	}
	return apply(dep, job)
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

// commit applies the change's raft entry and answers with its index and
// the evaluation it carries.
func (d *Deployment) commit(t structs.MessageType, entry any, eval *structs.Evaluation, reply *structs.DeploymentUpdateResponse) error {
	_, index, err := d.srv.raftApply(t, entry)
	if err != nil {
		return err
	}
	reply.DeploymentModifyIndex, reply.Index = index, index
	if eval != nil {
		reply.EvalID, reply.EvalCreateIndex = eval.ID, index
	}
	return nil
}

// Promote promotes the canaries of a running deployment: every group, or
// the named ones. Every canary of those groups must be healthy.
func (d *Deployment) Promote(args *structs.DeploymentPromoteRequest, reply *structs.DeploymentUpdateResponse) error {
	c := deploymentChange{method: "Deployment.Promote", id: args.DeploymentID, args: args, wr: &args.WriteRequest, reply: reply,
		terminal: "can't promote terminal deployment"}
	return d.change(c, func(dep *structs.Deployment, job *structs.Job) error {
		in, err := deploymentInputFor(d.srv.State(), dep, d.srv.clock.Now())
		if err != nil {
			return err
		}
		if err := promotable(dep, in.Canaries, args); err != nil {
			return err
		}
		eval := d.deploymentEval(dep, job)
		return d.commit(structs.DeploymentPromoteRequestType, &structs.ApplyDeploymentPromoteRequest{
			DeploymentPromoteRequest: *args, Eval: eval, UpdatedAt: d.srv.clock.Now().UnixNano(),
		}, eval, reply)
	})
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
	action := "resume"
	if args.Pause {
		action = "pause"
	}
	c := deploymentChange{method: "Deployment.Pause", id: args.DeploymentID, args: args, wr: &args.WriteRequest, reply: reply,
		terminal: "can't " + action + " terminal deployment"}
	return d.change(c, func(dep *structs.Deployment, job *structs.Job) error {
		u := &structs.DeploymentStatusUpdate{DeploymentID: dep.ID, Status: structs.DeploymentStatusPaused, StatusDescription: structs.DeploymentStatusDescriptionPaused}
		var eval *structs.Evaluation
		if !args.Pause {
			u.Status, u.StatusDescription = structs.DeploymentStatusRunning, structs.DeploymentStatusDescriptionRunning
			if dep.RequiresPromotion() {
				u.StatusDescription = structs.DeploymentStatusDescriptionRunningNeedsPromotion
			}
			eval = d.deploymentEval(dep, job)
		}
		return d.applyStatus(&structs.DeploymentStatusUpdateRequest{DeploymentUpdate: u, Eval: eval}, reply)
	})
}

// Fail fails a running deployment, rolling back as auto_revert says.
func (d *Deployment) Fail(args *structs.DeploymentFailRequest, reply *structs.DeploymentUpdateResponse) error {
	c := deploymentChange{method: "Deployment.Fail", id: args.DeploymentID, args: args, wr: &args.WriteRequest, reply: reply,
		terminal: "can't fail terminal deployment"}
	return d.change(c, func(dep *structs.Deployment, job *structs.Job) error {
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
		return d.applyStatus(req, reply)
	})
}

func (d *Deployment) applyStatus(req *structs.DeploymentStatusUpdateRequest, reply *structs.DeploymentUpdateResponse) error {
	req.UpdatedAt = d.srv.clock.Now().UnixNano()
	return d.commit(structs.DeploymentStatusUpdateRequestType, req, req.Eval, reply)
}

// SetAllocHealth records allocation health by hand (health_check =
// "manual", or an operator's verdict). An unhealthy allocation fails the
// deployment through the watcher, as one the client reports does.
func (d *Deployment) SetAllocHealth(args *structs.DeploymentAllocHealthRequest, reply *structs.DeploymentUpdateResponse) error {
	c := deploymentChange{method: "Deployment.SetAllocHealth", id: args.DeploymentID, args: args, wr: &args.WriteRequest, reply: reply,
		terminal: "can't set health of allocations for a terminal deployment"}
	return d.change(c, func(dep *structs.Deployment, job *structs.Job) error {
		if len(args.HealthyAllocationIDs)+len(args.UnhealthyAllocationIDs) == 0 {
			return fmt.Errorf("%w: must specify at least one healthy/unhealthy allocation ID", structs.ErrMissingField)
		}
		eval := d.deploymentEval(dep, job)
		return d.commit(structs.DeploymentAllocHealthRequestType, &structs.ApplyDeploymentAllocHealthRequest{
			DeploymentAllocHealthRequest: *args, Timestamp: d.srv.clock.Now().UTC(), Eval: eval,
		}, eval, reply)
	})
}

// Deployments returns a job's deployments, newest first.
func (j *Job) Deployments(args *structs.JobDeploymentsRequest, reply *structs.JobDeploymentsResponse) error {
	return j.srv.readJobQuery("Job.Deployments", args, reply, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
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
	return j.srv.readJobQuery("Job.LatestDeployment", args, reply, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		dep, err := st.LatestDeploymentByJobID(ws, args.RequestNamespace(), args.JobID)
		if err != nil {
			return 0, err
		}
		reply.Deployment = dep
		return st.Index(state.TableDeployment)
	})
}
