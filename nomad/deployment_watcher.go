package nomad

import (
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// deploymentRetry is how soon a failed watcher pass is retried.
const deploymentRetry = 5 * time.Second

// deploymentWatcher watches running deployments and carries out what
// decideDeployment says: promote, fail (and roll back), succeed (and mark
// the version stable), or ask the scheduler to go on with the rollout. It
// wakes on any deployment change (the state store counts health into the
// deployment) and at the nearest progress deadline.
func (s *Server) deploymentWatcher() watchLoop {
	// lastHealthy is the healthy count each deployment was last acted on
	// at; a new leader starts empty and sends one evaluation per running
	// deployment, which is harmless.
	lastHealthy := map[string]int{}
	return watchLoop{
		state: s.State, clock: s.clock, logger: s.logger.Named("deployment_watcher"),
		failed: "deployment watcher pass failed", retry: deploymentRetry,
		pass: func(ws memdb.WatchSet) (time.Duration, error) { return s.deploymentPass(ws, lastHealthy) },
	}
}

// deploymentPass decides and applies the next step of every running
// deployment; it returns how long until the nearest recheck (zero: none).
func (s *Server) deploymentPass(ws memdb.WatchSet, lastHealthy map[string]int) (time.Duration, error) {
	st := s.State()
	all, err := st.Deployments(ws, state.AllNamespaces, "")
	if err != nil {
		return 0, err
	}
	now := s.clock.Now()
	var next time.Duration
	for _, d := range all {
		if d.Status != structs.DeploymentStatusRunning {
			delete(lastHealthy, d.ID)
			continue
		}
		in, err := deploymentInputFor(st, d, now)
		if err != nil {
			return 0, err
		}
		in.LastHealthy = lastHealthy[d.ID]
		step := decideDeployment(in)
		if err := s.applyDeploymentStep(d, in.Job, step, now); err != nil {
			return 0, err
		}
		lastHealthy[d.ID] = healthyTotal(d)
		if !step.RecheckAt.IsZero() {
			if wait := step.RecheckAt.Sub(now); next == 0 || wait < next {
				next = max(wait, time.Millisecond)
			}
		}
	}
	return next, nil
}

func healthyTotal(d *structs.Deployment) int {
	n := 0
	for _, g := range d.TaskGroups {
		n += g.HealthyAllocs
	}
	return n
}

func deploymentInputFor(st *state.StateStore, d *structs.Deployment, now time.Time) (deploymentInput, error) {
	in := deploymentInput{Deployment: d, Now: now}
	var err error
	if in.Job, err = st.JobByID(nil, d.Namespace, d.JobID); err != nil {
		return in, err
	}
	if in.Versions, err = st.JobVersionsByID(nil, d.Namespace, d.JobID); err != nil {
		return in, err
	}
	if d.RequiresPromotion() {
		allocs, err := st.AllocsByJob(nil, d.Namespace, d.JobID, false)
		if err != nil {
			return in, err
		}
		for _, a := range allocs {
			if a.DeploymentID == d.ID && a.DeploymentStatus.IsCanary() && !a.TerminalStatus() {
				in.Canaries = append(in.Canaries, a)
			}
		}
	}
	return in, nil
}

// applyDeploymentStep commits one step in one raft entry.
func (s *Server) applyDeploymentStep(d *structs.Deployment, job *structs.Job, step deploymentStep, now time.Time) error {
	var eval *structs.Evaluation
	if step.Eval && job != nil {
		src := job
		if step.Rollback != nil {
			src = step.Rollback
		}
		eval = src.NewEval(structs.EvalTriggerDeploymentWatcher, now)
		eval.DeploymentID = d.ID
		eval.Priority = d.EvalPriority
	}
	switch {
	case step.Update != nil:
		_, _, err := s.raftApply(structs.DeploymentStatusUpdateRequestType, &structs.DeploymentStatusUpdateRequest{
			DeploymentUpdate: step.Update, Job: step.Rollback, Eval: eval, StableVersion: step.Stable,
			UpdatedAt: now.UnixNano(),
		})
		if err == nil {
			s.logger.Info("deployment finished", "deployment_id", d.ID, "status", step.Update.Status, "description", step.Update.StatusDescription)
		}
		return err
	case step.Promote:
		_, _, err := s.raftApply(structs.DeploymentPromoteRequestType, &structs.ApplyDeploymentPromoteRequest{
			DeploymentPromoteRequest: structs.DeploymentPromoteRequest{DeploymentID: d.ID, All: true},
			Eval:                     eval, UpdatedAt: now.UnixNano(),
		})
		return err
	case eval != nil:
		_, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{
			Evals: []*structs.Evaluation{eval}, UpdatedAt: now.UnixNano(),
		})
		return err
	}
	return nil
}
