package allocrunner

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Health from task states (and, with "checks", the checks) decides when a rolling update may go on and when
// it fails; each rule of the update block is one row.
func TestDeploymentHealth(t *testing.T) {
	t0 := time.Unix(1000, 0)
	u := &structs.UpdateStrategy{MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckTaskStates,
		MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute}
	running := func(at time.Time) *structs.TaskState {
		return &structs.TaskState{State: structs.TaskStateRunning, StartedAt: at}
	}
	checksU := &structs.UpdateStrategy{HealthCheck: structs.UpdateHealthCheckChecks, MinHealthyTime: 10 * time.Second, HealthyDeadline: time.Minute}
	cases := []struct {
		name    string
		update  *structs.UpdateStrategy
		states  map[string]*structs.TaskState
		now     time.Time
		verdict *bool
		recheck time.Time
		// failing checks; checksSince: when they all began to pass.
		failing     bool
		checksSince time.Time
	}{
		{"pending waits for the deadline", u, map[string]*structs.TaskState{"a": {State: structs.TaskStatePending}}, t0.Add(time.Second), nil, t0.Add(time.Minute), false, time.Time{}},
		{"running waits min_healthy_time", u, map[string]*structs.TaskState{"a": running(t0.Add(2 * time.Second))}, t0.Add(5 * time.Second), nil, t0.Add(12 * time.Second), false, time.Time{}},
		{"running long enough is healthy", u, map[string]*structs.TaskState{"a": running(t0.Add(2 * time.Second))}, t0.Add(12 * time.Second), new(true), time.Time{}, false, time.Time{}},
		{"every task must run", u, map[string]*structs.TaskState{"a": running(t0), "b": {State: structs.TaskStatePending}}, t0.Add(20 * time.Second), nil, t0.Add(time.Minute), false, time.Time{}},
		{"a restart starts the wait again", u, map[string]*structs.TaskState{"a": {State: structs.TaskStateRunning, StartedAt: t0, LastRestart: t0.Add(8 * time.Second)}}, t0.Add(12 * time.Second), nil, t0.Add(18 * time.Second), false, time.Time{}},
		{"a failed task is unhealthy at once", u, map[string]*structs.TaskState{"a": {State: structs.TaskStateDead, Failed: true}}, t0.Add(time.Second), new(false), time.Time{}, false, time.Time{}},
		{"the deadline passes", u, map[string]*structs.TaskState{"a": {State: structs.TaskStatePending}}, t0.Add(time.Minute), new(false), time.Time{}, false, time.Time{}},
		{"healthy too late for the deadline waits for it", u, map[string]*structs.TaskState{"a": running(t0.Add(55 * time.Second))}, t0.Add(56 * time.Second), nil, t0.Add(time.Minute), false, time.Time{}},
		{"checks is judged by task states without services", &structs.UpdateStrategy{HealthCheck: structs.UpdateHealthCheckChecks, MinHealthyTime: time.Second, HealthyDeadline: time.Minute},
			map[string]*structs.TaskState{"a": running(t0)}, t0.Add(time.Second), new(true), time.Time{}, false, time.Time{}},
		{"manual is never judged by the client", &structs.UpdateStrategy{HealthCheck: structs.UpdateHealthCheckManual},
			map[string]*structs.TaskState{"a": running(t0)}, t0.Add(time.Hour), nil, time.Time{}, false, time.Time{}},
		{"checks waits for failing checks until the deadline", checksU,
			map[string]*structs.TaskState{"a": running(t0)}, t0.Add(30 * time.Second), nil, t0.Add(time.Minute), true, time.Time{}},
		{"failing checks past the deadline are unhealthy", checksU,
			map[string]*structs.TaskState{"a": running(t0)}, t0.Add(time.Minute), new(false), time.Time{}, true, time.Time{}},
		{"min_healthy_time counts from the checks passing", checksU,
			map[string]*structs.TaskState{"a": running(t0)}, t0.Add(25 * time.Second), nil, t0.Add(30 * time.Second), false, t0.Add(20 * time.Second)},
		{"passing checks for min_healthy_time are healthy", checksU,
			map[string]*structs.TaskState{"a": running(t0)}, t0.Add(30 * time.Second), new(true), time.Time{}, false, t0.Add(20 * time.Second)},
		{"task_states ignores the checks", u,
			map[string]*structs.TaskState{"a": running(t0)}, t0.Add(30 * time.Second), new(true), time.Time{}, true, time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			verdict, recheck := deploymentHealth(healthInput{Update: c.update, Since: t0, States: c.states, Now: c.now,
				ChecksPassing: !c.failing, ChecksSince: c.checksSince})
			must.Eq(t, c.verdict, verdict)
			must.Eq(t, c.recheck, recheck)
		})
	}
}
