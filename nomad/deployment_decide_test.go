package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Each deployment rule, alone: the watcher's decisions are a pure function
// so that every verdict an operator sees can be traced to one row here.
func TestDecideDeployment(t *testing.T) {
	now := time.Unix(1000, 0)
	job := mock.Job()
	job.Version = 2
	stable := job.Copy()
	stable.Version, stable.Stable = 1, true
	stable.TaskGroups[0].Tasks[0].Env = map[string]string{"STABLE": "yes"}
	newDep := func(edit func(*structs.DeploymentState)) *structs.Deployment {
		d := structs.NewDeployment(job, 50, now)
		g := &structs.DeploymentState{DesiredTotal: 3, PlacedAllocs: 3, RequireProgressBy: now.Add(time.Minute)}
		if edit != nil {
			edit(g)
		}
		d.TaskGroups["web"] = g
		return d
	}
	canary := func(healthy bool) *structs.Allocation {
		a := mock.Alloc()
		a.TaskGroup = "web"
		a.DeploymentStatus = &structs.AllocDeploymentStatus{Canary: true, Healthy: &healthy}
		return a
	}

	t.Run("every allocation healthy: successful, version stable", func(t *testing.T) {
		step := decideDeployment(deploymentInput{Deployment: newDep(func(g *structs.DeploymentState) { g.HealthyAllocs = 3 }), Job: job, Now: now})
		must.Eq(t, structs.DeploymentStatusSuccessful, step.Update.Status)
		must.Eq(t, uint64(2), *step.Stable)
	})
	t.Run("an unhealthy allocation fails it", func(t *testing.T) {
		step := decideDeployment(deploymentInput{Deployment: newDep(func(g *structs.DeploymentState) { g.UnhealthyAllocs = 1 }), Job: job, Now: now})
		must.Eq(t, structs.DeploymentStatusFailed, step.Update.Status)
		must.Eq(t, structs.DeploymentStatusDescriptionFailedAllocations, step.Update.StatusDescription)
		must.Nil(t, step.Rollback)
	})
	t.Run("auto_revert rolls back to the newest stable version", func(t *testing.T) {
		d := newDep(func(g *structs.DeploymentState) { g.UnhealthyAllocs, g.AutoRevert = 1, true })
		step := decideDeployment(deploymentInput{Deployment: d, Job: job, Versions: []*structs.Job{job, stable}, Now: now})
		must.Eq(t, "Failed due to unhealthy allocations - rolling back to job version 1", step.Update.StatusDescription)
		must.NotNil(t, step.Rollback)
		must.Eq(t, job.Version, step.Rollback.Version)
		must.True(t, step.Eval)
	})
	t.Run("auto_revert never rolls back to the same spec", func(t *testing.T) {
		d := newDep(func(g *structs.DeploymentState) { g.UnhealthyAllocs, g.AutoRevert = 1, true })
		same := job.Copy()
		same.Version, same.Stable = 1, true
		step := decideDeployment(deploymentInput{Deployment: d, Job: job, Versions: []*structs.Job{job, same}, Now: now})
		must.Nil(t, step.Rollback)
		must.StrContains(t, step.Update.StatusDescription, "current job has same specification")
	})
	t.Run("auto_revert without a stable version says so", func(t *testing.T) {
		d := newDep(func(g *structs.DeploymentState) { g.UnhealthyAllocs, g.AutoRevert = 1, true })
		step := decideDeployment(deploymentInput{Deployment: d, Job: job, Versions: []*structs.Job{job}, Now: now})
		must.Nil(t, step.Rollback)
		must.StrContains(t, step.Update.StatusDescription, "no stable job version")
	})
	t.Run("the progress deadline passes", func(t *testing.T) {
		step := decideDeployment(deploymentInput{Deployment: newDep(nil), Job: job, Now: now.Add(time.Minute)})
		must.Eq(t, structs.DeploymentStatusDescriptionProgressDeadline, step.Update.StatusDescription)
	})
	t.Run("before the deadline it waits for it", func(t *testing.T) {
		step := decideDeployment(deploymentInput{Deployment: newDep(nil), Job: job, Now: now})
		must.Nil(t, step.Update)
		must.False(t, step.Eval)
		must.Eq(t, now.Add(time.Minute), step.RecheckAt)
	})
	t.Run("new health lets the scheduler go on", func(t *testing.T) {
		step := decideDeployment(deploymentInput{Deployment: newDep(func(g *structs.DeploymentState) { g.HealthyAllocs = 1 }), Job: job, Now: now})
		must.True(t, step.Eval)
		step = decideDeployment(deploymentInput{Deployment: newDep(func(g *structs.DeploymentState) { g.HealthyAllocs = 1 }), Job: job, Now: now, LastHealthy: 1})
		must.False(t, step.Eval)
	})
	t.Run("healthy canaries of an auto_promote group are promoted", func(t *testing.T) {
		d := newDep(func(g *structs.DeploymentState) { g.DesiredCanaries, g.AutoPromote, g.HealthyAllocs = 1, true, 1 })
		step := decideDeployment(deploymentInput{Deployment: d, Job: job, Canaries: []*structs.Allocation{canary(true)}, Now: now})
		must.True(t, step.Promote)
		step = decideDeployment(deploymentInput{Deployment: d, Job: job, Canaries: []*structs.Allocation{canary(false)}, Now: now})
		must.False(t, step.Promote)
	})
	t.Run("all healthy but unpromoted is not done", func(t *testing.T) {
		d := newDep(func(g *structs.DeploymentState) { g.DesiredCanaries, g.HealthyAllocs = 1, 3 })
		step := decideDeployment(deploymentInput{Deployment: d, Job: job, Now: now, LastHealthy: 3})
		must.Nil(t, step.Update)
		must.False(t, step.Promote)
	})
	t.Run("a paused deployment is left alone", func(t *testing.T) {
		d := newDep(func(g *structs.DeploymentState) { g.UnhealthyAllocs = 1 })
		d.Status = structs.DeploymentStatusPaused
		must.Eq(t, deploymentStep{}, decideDeployment(deploymentInput{Deployment: d, Job: job, Now: now}))
	})
}
