package agent_test

import (
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// A job from the official Go client with job-level reschedule and migrate
// blocks, canonicalized by that client as tools do, registers (it was
// refused with "unknown fields"), and each group gets the job's values
// under its own, as upstream merges them; shutdown_delay survives too.
func TestJobRegister_OfficialClientJobLevelPolicies(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	job := mockJob("policies", "mock_driver", map[string]any{"run_for": "1m"})
	job.Reschedule = &nomadapi.ReschedulePolicy{Attempts: new(4), Interval: new(2 * time.Hour), Unlimited: new(false)}
	job.Migrate = &nomadapi.MigrateStrategy{MaxParallel: new(2)}
	job.TaskGroups[0].ReschedulePolicy = &nomadapi.ReschedulePolicy{Attempts: new(1)}
	job.TaskGroups[0].ShutdownDelay = new(3 * time.Second)
	job.Canonicalize()

	_, _, err := c.Jobs().Register(job, nil)
	must.NoError(t, err)

	stored, _, err := c.Jobs().Info("policies", nil)
	must.NoError(t, err)
	tg := stored.TaskGroups[0]
	must.Eq(t, 1, *tg.ReschedulePolicy.Attempts, must.Sprint("the group's own field wins"))
	must.Eq(t, 2*time.Hour, *tg.ReschedulePolicy.Interval, must.Sprint("the job's field fills what the group left out"))
	must.Eq(t, 2, *tg.Migrate.MaxParallel)
	must.Eq(t, 3*time.Second, *tg.ShutdownDelay)

	// Sent as it is, not canonicalized: the agent merges the job's
	// blocks into the groups itself.
	raw := mockJob("raw-policies", "mock_driver", map[string]any{"run_for": "1m"})
	raw.Reschedule = &nomadapi.ReschedulePolicy{Attempts: new(4), Interval: new(2 * time.Hour), Unlimited: new(false)}
	raw.Migrate = &nomadapi.MigrateStrategy{MaxParallel: new(2)}
	_, _, err = c.Jobs().Register(raw, nil)
	must.NoError(t, err)
	stored, _, err = c.Jobs().Info("raw-policies", nil)
	must.NoError(t, err)
	tg = stored.TaskGroups[0]
	must.Eq(t, 4, *tg.ReschedulePolicy.Attempts)
	must.Eq(t, 2*time.Hour, *tg.ReschedulePolicy.Interval)
	must.Eq(t, 2, *tg.Migrate.MaxParallel)
}
