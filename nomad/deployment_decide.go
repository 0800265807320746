package nomad

import (
	"fmt"
	"sort"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// deploymentInput is what the watcher decides a deployment's next step
// from. It is read from one state snapshot; decideDeployment does no I/O.
type deploymentInput struct {
	Deployment *structs.Deployment
	// Job is the current job; nil when purged.
	Job *structs.Job
	// Versions are the job's stored versions, newest first.
	Versions []*structs.Job
	// Canaries are the deployment's live canary allocations.
	Canaries []*structs.Allocation
	// LastHealthy is the healthy count the watcher last acted on; a
	// higher one means the scheduler may go on with the rollout.
	LastHealthy int
	Now         time.Time
}

// deploymentStep is the decision: at most one raft entry.
type deploymentStep struct {
	// Update changes the status (Rollback, when set, is the job to register
	// with it; Stable, when set, the version to mark stable).
	Update   *structs.DeploymentStatusUpdate
	Rollback *structs.Job
	Stable   *uint64
	// Promote promotes every group's canaries.
	Promote bool
	// Eval asks the scheduler to continue (more healthy allocations, a
	// promotion or a rollback).
	Eval bool
	// RecheckAt is when to look again without any change (a progress
	// deadline); zero for never.
	RecheckAt time.Time
}

// decideDeployment applies the deployment rules in order: a failed
// allocation or a passed progress deadline fails it (rolling back when
// auto_revert asks and a stable version exists); every group healthy and
// promoted makes it successful; healthy canaries of auto_promote groups are
// promoted; new health lets the rollout go on.
func decideDeployment(in deploymentInput) deploymentStep {
	d := in.Deployment
	if d.Status != structs.DeploymentStatusRunning {
		return deploymentStep{}
	}
	names := make([]string, 0, len(d.TaskGroups))
	for n := range d.TaskGroups {
		names = append(names, n)
	}
	sort.Strings(names)
	var recheck time.Time
	done, healthy := true, 0
	for _, n := range names {
		g := d.TaskGroups[n]
		healthy += g.HealthyAllocs
		if g.UnhealthyAllocs > 0 {
			return failDeployment(in, structs.DeploymentStatusDescriptionFailedAllocations, g.AutoRevert)
		}
		groupDone := g.HealthyAllocs >= g.DesiredTotal && (g.DesiredCanaries == 0 || g.Promoted)
		if !groupDone && !g.RequireProgressBy.IsZero() {
			if !in.Now.Before(g.RequireProgressBy) {
				return failDeployment(in, structs.DeploymentStatusDescriptionProgressDeadline, g.AutoRevert)
			}
			if recheck.IsZero() || g.RequireProgressBy.Before(recheck) {
				recheck = g.RequireProgressBy
			}
		}
		done = done && groupDone
	}
	if done {
		v := d.JobVersion
		return deploymentStep{Update: &structs.DeploymentStatusUpdate{
			DeploymentID: d.ID, Status: structs.DeploymentStatusSuccessful,
			StatusDescription: structs.DeploymentStatusDescriptionSuccessful,
		}, Stable: &v}
	}
	if d.HasAutoPromote() && d.RequiresPromotion() && canariesHealthy(d, in.Canaries) {
		return deploymentStep{Promote: true, Eval: true, RecheckAt: recheck}
	}
	return deploymentStep{Eval: healthy > in.LastHealthy, RecheckAt: recheck}
}

// canariesHealthy reports whether every group waiting for promotion has
// all its canaries placed and healthy.
func canariesHealthy(d *structs.Deployment, canaries []*structs.Allocation) bool {
	healthy := map[string]int{}
	for _, a := range canaries {
		if a.DeploymentStatus.IsHealthy() {
			healthy[a.TaskGroup]++
		}
	}
	for name, g := range d.TaskGroups {
		if g.DesiredCanaries > 0 && !g.Promoted && healthy[name] < g.DesiredCanaries {
			return false
		}
	}
	return true
}

// failDeployment fails the deployment with desc, rolling back to the
// newest stable version older than the deployed one when revert is set.
func failDeployment(in deploymentInput, desc string, revert bool) deploymentStep {
	d := in.Deployment
	step := deploymentStep{Update: &structs.DeploymentStatusUpdate{
		DeploymentID: d.ID, Status: structs.DeploymentStatusFailed, StatusDescription: desc,
	}}
	if !revert || in.Job == nil || in.Job.Version != d.JobVersion {
		// A newer version was registered meanwhile: nothing to roll back.
		return step
	}
	for _, v := range in.Versions {
		if v.Stable && v.Version < d.JobVersion {
			if diff, err := v.Diff(in.Job, false); err == nil && diff.Type == structs.DiffTypeNone {
				// The failing version is the stable spec itself: rolling
				// back would only fail again, forever.
				step.Update.StatusDescription = fmt.Sprintf("%s - not rolling back to stable job version %d as current job has same specification", desc, v.Version)
				return step
			}
			job := v.Copy()
			job.Version, job.Stop, job.Stable = in.Job.Version, false, false
			step.Rollback, step.Eval = job, true
			step.Update.StatusDescription = structs.DeploymentStatusDescriptionRollback(desc, v.Version)
			return step
		}
	}
	step.Update.StatusDescription = structs.DeploymentStatusDescriptionNoRollbackTarget(desc)
	return step
}
