package scheduler_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/scheduler"
	"github.com/nomad-edge/nomad/scheduler/schedtest"
)

// For any sequence of job versions, health reports, promotions and
// evaluations, a rollout keeps its promises: at most max_parallel
// allocations of the current deployment are without a health verdict
// (canaries aside), at most `canary` canaries run, never more than count
// non-canary allocations are desired running, and once every allocation
// is healthy and promoted the group runs count allocations of the newest
// version.
func TestProperty_DeploymentLimits(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := schedtest.NewHarness(rt)
		var nodes []*structs.Node
		for range 4 {
			n := mock.Node()
			nodes = append(nodes, n)
		}
		h.UpsertNodes(nodes...)
		count := rapid.IntRange(1, 6).Draw(rt, "count")
		update := &structs.UpdateStrategy{
			MaxParallel: rapid.IntRange(1, 3).Draw(rt, "max_parallel"),
			Canary:      rapid.IntRange(0, count).Draw(rt, "canary"),
			HealthCheck: structs.UpdateHealthCheckTaskStates, MinHealthyTime: time.Second,
			HealthyDeadline: time.Minute, ProgressDeadline: time.Hour,
		}
		job := mock.Job()
		job.TaskGroups[0].Count = count
		job.TaskGroups[0].Tasks[0].Resources = &structs.Resources{CPU: 10, MemoryMB: 10}
		job.TaskGroups[0].Update = update
		stored := h.UpsertJob(job)
		eval := func() {
			e := schedtest.JobEval(stored, structs.EvalTriggerJobRegister)
			h.UpsertEval(e)
			must.NoError(rt, h.Process(scheduler.NewServiceScheduler, e))
			checkDeploymentLimits(rt, h, stored, update)
		}
		eval()
		steps := rapid.SliceOfN(rapid.SampledFrom([]string{"version", "healthy", "promote", "eval"}), 1, 30).Draw(rt, "steps")
		for i, step := range steps {
			switch step {
			case "version":
				next := stored.Copy()
				next.TaskGroups[0].Tasks[0].Env = map[string]string{"V": fmt.Sprint(i)}
				stored = h.UpsertJob(next)
			case "healthy":
				reportHealthy(rt, h, stored)
			case "promote":
				promote(rt, h, stored)
			}
			eval()
		}
		// Settle: report, promote and evaluate until nothing changes.
		for range 3 * count {
			reportHealthy(rt, h, stored)
			promote(rt, h, stored)
			eval()
		}
		live := 0
		for _, a := range h.JobAllocs(stored) {
			if !a.TerminalStatus() {
				must.Eq(rt, stored.Version, a.Job.Version, must.Sprintf("alloc %s of an older version still runs", a.Name))
				live++
			}
		}
		must.Eq(rt, count, live)
	})
}

func latestDeployment(t *rapid.T, h *schedtest.Harness, job *structs.Job) *structs.Deployment {
	d, err := h.State.LatestDeploymentByJobID(nil, job.Namespace, job.ID)
	must.NoError(t, err)
	return d
}

func reportHealthy(t *rapid.T, h *schedtest.Harness, job *structs.Job) {
	var updates []*structs.Allocation
	for _, a := range h.JobAllocs(job) {
		if !a.TerminalStatus() && a.DeploymentID != "" && !a.DeploymentStatus.HasHealth() {
			updates = append(updates, &structs.Allocation{ID: a.ID, ClientStatus: structs.AllocClientStatusRunning,
				DeploymentStatus: &structs.AllocDeploymentStatus{Healthy: new(true), Timestamp: h.Now}})
		}
	}
	must.NoError(t, h.State.UpdateAllocsFromClient(h.NextIndex(), updates))
}

func promote(t *rapid.T, h *schedtest.Harness, job *structs.Job) {
	d := latestDeployment(t, h, job)
	if d == nil || !d.RequiresPromotion() {
		return
	}
	must.NoError(t, h.State.UpdateDeploymentPromotion(h.NextIndex(), &structs.ApplyDeploymentPromoteRequest{
		DeploymentPromoteRequest: structs.DeploymentPromoteRequest{DeploymentID: d.ID, All: true},
	}))
}

func checkDeploymentLimits(t *rapid.T, h *schedtest.Harness, job *structs.Job, u *structs.UpdateStrategy) {
	d := latestDeployment(t, h, job)
	inFlight, canaries, counted := 0, 0, 0
	for _, a := range h.JobAllocs(job) {
		if a.TerminalStatus() {
			continue
		}
		// Promotion clears the flag, as upstream; PlacedCanaries keeps them.
		placedCanary := d != nil && a.DeploymentID == d.ID && (a.DeploymentStatus.IsCanary() || slices.Contains(d.TaskGroups["web"].PlacedCanaries, a.ID))
		canary := placedCanary && !d.TaskGroups["web"].Promoted
		switch {
		case canary:
			canaries++
		default:
			counted++
		}
		if d != nil && a.DeploymentID == d.ID && !a.DeploymentStatus.HasHealth() && !placedCanary && d.JobVersion > 0 && a.Job.Version > 0 {
			inFlight++
		}
	}
	must.LessEq(t, job.TaskGroups[0].Count, counted, must.Sprint("never more than count non-canary allocations"))
	must.LessEq(t, u.Canary, canaries, must.Sprint("never more canaries than asked for"))
	must.LessEq(t, u.MaxParallel, inFlight, must.Sprint("at most max_parallel replacements in flight"))
}
