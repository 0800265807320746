package testutil_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// describeTags is the instances' allocations and tags, for a failed wait.
func describeTags(regs []*structs.ServiceRegistration) string {
	s := fmt.Sprintf("%d: ", len(regs))
	for _, r := range regs {
		s += fmt.Sprintf("[alloc=%s tags=%v idx=%d/%d] ", r.AllocID[:8], r.Tags, r.CreateIndex, r.ModifyIndex)
	}
	return s
}

// canary_tags through a promotion (issue 20, item 3): the canary of a new
// version registers its service with canary_tags while unpromoted, so
// consumers can send it test traffic only; promoting the deployment
// switches that same registration to tags (updated in place, the task not
// restarted), as upstream, and the rollout ends with every instance on
// tags.
func TestCluster_CanaryTagsSwitchOnPromotion(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 2})
		s := c.Leader()
		job := deployJob(2, &structs.UpdateStrategy{
			MaxParallel: 1, Canary: 1, HealthCheck: structs.UpdateHealthCheckTaskStates,
			MinHealthyTime: 5 * time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 5 * time.Minute,
		})
		job.TaskGroups[0].Services = []*structs.Service{{
			Name: "canary-svc", PortLabel: "8080", Tags: []string{"live"}, CanaryTags: []string{"canary"},
		}}
		register(t, s, job)
		deploymentOf(t, s, job, 0, structs.DeploymentStatusSuccessful, 2*time.Minute)

		v1 := job.Copy()
		v1.TaskGroups[0].Tasks[0].Env = map[string]string{"FOO": "v1"}
		register(t, s, v1)
		var canary *structs.ServiceRegistration
		wait.Eventually(t, 2*time.Minute, "the canary registered with canary_tags beside two live instances", func() (bool, string) {
			regs := lookup(t, s, "canary-svc", false)
			canary = nil
			live := 0
			for _, r := range regs {
				switch {
				case slices.Equal(r.Tags, []string{"canary"}):
					canary = r
				case slices.Equal(r.Tags, []string{"live"}):
					live++
				}
			}
			return canary != nil && live == 2, describeTags(regs)
		})
		a := mustAlloc(t, s.State(), canary.AllocID)
		must.True(t, a.DeploymentStatus.IsCanary())
		must.Eq(t, uint64(1), a.Job.Version)

		d := deploymentOf(t, s, job, 1, structs.DeploymentStatusRunning, time.Minute)
		wait.Eventually(t, time.Minute, "the canary healthy", func() (bool, string) {
			a := mustAlloc(t, s.State(), canary.AllocID)
			return a.DeploymentStatus.IsHealthy(), fmt.Sprintf("%+v", a.DeploymentStatus)
		})
		var resp structs.DeploymentUpdateResponse
		must.NoError(t, s.RPC("Deployment.Promote", &structs.DeploymentPromoteRequest{DeploymentID: d.ID, All: true}, &resp))

		wait.Eventually(t, time.Minute, "the promoted canary's registration on tags", func() (bool, string) {
			regs := lookup(t, s, "canary-svc", false)
			for _, r := range regs {
				if r.ID == canary.ID {
					return slices.Equal(r.Tags, []string{"live"}), describeTags(regs)
				}
			}
			return false, describeTags(regs)
		})
		promoted := mustAlloc(t, s.State(), canary.AllocID)
		must.False(t, promoted.DeploymentStatus.IsCanary(), must.Sprint("promotion clears the flag, as upstream"))
		for _, r := range lookup(t, s, "canary-svc", false) {
			if r.ID == canary.ID {
				must.Eq(t, canary.CreateIndex, r.CreateIndex, must.Sprint("updated in place, not registered anew"))
			}
		}
		must.Eq(t, uint64(0), promoted.TaskStates["web"].Restarts)

		deploymentOf(t, s, job, 1, structs.DeploymentStatusSuccessful, 3*time.Minute)
		wait.Eventually(t, time.Minute, "two instances of version 1, both on tags", func() (bool, string) {
			regs := lookup(t, s, "canary-svc", false)
			ok := len(regs) == 2
			for _, r := range regs {
				ok = ok && slices.Equal(r.Tags, []string{"live"}) && mustAlloc(t, s.State(), r.AllocID).Job.Version == 1
			}
			return ok, describeTags(regs)
		})
	})
}
