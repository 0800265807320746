package allocrunner

import (
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// healthInput is what an allocation's deployment health is judged from.
type healthInput struct {
	Update *structs.UpdateStrategy
	// Since is when the client began judging: the runner's start, or the
	// moment an in-place update moved the allocation into a deployment.
	Since  time.Time
	States map[string]*structs.TaskState
	Now    time.Time
	// ChecksPassing says whether the allocation's checks (those that
	// judge deployments) pass, and ChecksSince since when; an
	// allocation without checks passes since the zero time.
	ChecksPassing bool
	ChecksSince   time.Time
}

// deploymentHealth judges task_states health: healthy once every task has
// been running, without a restart, for min_healthy_time; unhealthy when a
// task fails or healthy_deadline passes first. Without a verdict it returns
// when to look again (zero: only when a task or a check changes). A
// "checks" health check (the default) also needs every check that judges
// deployments passing, and min_healthy_time counts from the later of the
// two, as upstream; a group without checks is judged by its tasks alone.
// "manual" is never judged here.
func deploymentHealth(in healthInput) (verdict *bool, recheckAt time.Time) {
	u := in.Update
	if u == nil || u.HealthCheck == structs.UpdateHealthCheckManual {
		return nil, time.Time{}
	}
	var deadline time.Time
	if u.HealthyDeadline > 0 {
		deadline = in.Since.Add(u.HealthyDeadline)
	}
	runningSince, allRunning := in.Since, len(in.States) > 0
	for _, st := range in.States {
		if st.State == structs.TaskStateDead && st.Failed {
			return new(false), time.Time{}
		}
		if st.State != structs.TaskStateRunning {
			allRunning = false
			continue
		}
		runningSince = latest(runningSince, st.StartedAt, st.LastRestart)
	}
	if allRunning && u.HealthCheck != structs.UpdateHealthCheckTaskStates {
		allRunning = in.ChecksPassing
		runningSince = latest(runningSince, in.ChecksSince)
	}
	if allRunning {
		healthyAt := runningSince.Add(u.MinHealthyTime)
		if !in.Now.Before(healthyAt) && (deadline.IsZero() || !healthyAt.After(deadline)) {
			return new(true), time.Time{}
		}
		if deadline.IsZero() || healthyAt.Before(deadline) {
			return nil, healthyAt
		}
	}
	if !deadline.IsZero() && !in.Now.Before(deadline) {
		return new(false), time.Time{}
	}
	return nil, deadline
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// healthTracker is an alloc runner's judgement of its allocation's health
// in the deployment it belongs to.
type healthTracker struct {
	deploymentID string
	since        time.Time
	status       *structs.AllocDeploymentStatus
	timer        interface{ Stop() bool }
}

func (h *healthTracker) stop() {
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}

// judgeHealthLocked returns the health to report for alloc, nil while there
// is none to report. A verdict is final for its deployment and goes with
// every later report, so the coalescing alloc updater cannot drop it. The
// caller holds stateMu.
func (ar *AllocRunner) judgeHealthLocked(alloc *structs.Allocation, states map[string]*structs.TaskState) *structs.AllocDeploymentStatus {
	if alloc.DeploymentID == "" || alloc.DeploymentStatus.HasHealth() {
		return nil
	}
	h := &ar.health
	now := ar.clock.Now()
	if h.deploymentID != alloc.DeploymentID {
		h.stop()
		*h = healthTracker{deploymentID: alloc.DeploymentID, since: now}
	}
	if h.status != nil {
		return h.status.Copy()
	}
	passing, since := ar.checks.passing(alloc)
	verdict, recheck := deploymentHealth(healthInput{
		Update: alloc.LookupTaskGroup().Update, Since: h.since, States: states, Now: now,
		ChecksPassing: passing, ChecksSince: since,
	})
	h.stop()
	if verdict != nil {
		h.status = &structs.AllocDeploymentStatus{Healthy: verdict, Timestamp: now.UTC(), Canary: alloc.DeploymentStatus.IsCanary()}
		ar.logger.Debug("allocation health judged", "deployment_id", alloc.DeploymentID, "healthy", *verdict)
		return h.status.Copy()
	}
	if !recheck.IsZero() && !ar.allTasksDead() {
		h.timer = ar.clock.AfterFunc(recheck.Sub(now), ar.requestUpdate)
	}
	return nil
}
