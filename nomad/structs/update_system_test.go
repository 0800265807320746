package structs_test

import (
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// systemWithUpdate returns a valid system job whose job-level update block
// is u, canonicalized.
func systemWithUpdate(u *structs.UpdateStrategy) *structs.Job {
	job := mock.Job()
	job.Type = structs.JobTypeSystem
	job.TaskGroups[0].Count = 1
	job.TaskGroups[0].ReschedulePolicy = nil
	job.TaskGroups[0].RestartPolicy = structs.NewRestartPolicy(structs.JobTypeSystem)
	job.TaskGroups[0].Update = nil
	job.Update = u
	job.Canonicalize()
	return job
}

// A system job keeps its update block, inherited by its groups, since the
// system scheduler rolls by its max_parallel and stagger; the seed dropped
// it, so the block was accepted without effect.
func TestJob_SystemKeepsUpdateBlock(t *testing.T) {
	job := systemWithUpdate(&structs.UpdateStrategy{MaxParallel: 2, Stagger: 45 * time.Second})
	must.NotNil(t, job.TaskGroups[0].Update)
	must.Eq(t, 2, job.TaskGroups[0].Update.MaxParallel)
	must.Eq(t, 45*time.Second, job.TaskGroups[0].Update.Stagger)
	must.NoError(t, job.Validate())

	// The defaults the official client fills in are accepted.
	d := structs.DefaultUpdateStrategy()
	must.NoError(t, systemWithUpdate(d).Validate())

	// Batch and sysbatch jobs keep it too, so that validation refuses
	// it in upstream's words rather than drop it unread.
	job = systemWithUpdate(&structs.UpdateStrategy{MaxParallel: 2})
	job.Type = structs.JobTypeSysBatch
	job.Update = &structs.UpdateStrategy{MaxParallel: 2}
	job.TaskGroups[0].Update = nil
	job.Canonicalize()
	must.NotNil(t, job.TaskGroups[0].Update)
	must.ErrorContains(t, job.Validate(), `Job type "sysbatch" does not allow update block`)
}

// What a system job cannot honour in its update block (no deployment:
// canaries, promotion, reverts, health timings other than the defaults) is
// refused by name, as a key we accept is a key we honour.
func TestJob_SystemUpdateRefusesDeploymentSettings(t *testing.T) {
	for field, u := range map[string]*structs.UpdateStrategy{
		"canary":            {MaxParallel: 1, Canary: 1},
		"auto_revert":       {MaxParallel: 1, AutoRevert: true},
		"auto_promote":      {MaxParallel: 1, AutoPromote: true},
		"health_check":      {MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckManual},
		"min_healthy_time":  {MaxParallel: 1, MinHealthyTime: time.Second},
		"healthy_deadline":  {MaxParallel: 1, HealthyDeadline: time.Minute},
		"progress_deadline": {MaxParallel: 1, ProgressDeadline: time.Hour},
	} {
		t.Run(field, func(t *testing.T) {
			problems := validationProblems(t, systemWithUpdate(u))
			found := false
			for _, p := range problems {
				found = found || (strings.Contains(p, "update: "+field) && strings.Contains(p, "system jobs"))
			}
			must.True(t, found, must.Sprintf("%q", problems))
		})
	}
}

// A service job's stagger is refused unless it is the default the official
// client fills in: upstream ignores it there, so any other value would be a
// setting accepted without effect.
func TestJob_ServiceStaggerOnlyDefault(t *testing.T) {
	job := systemWithUpdate(&structs.UpdateStrategy{MaxParallel: 1, Stagger: 45 * time.Second})
	job.Type = structs.JobTypeService
	must.ErrorContains(t, job.Validate(), "update: stagger 45s has no effect on service jobs")
	for _, ok := range []time.Duration{0, structs.DefaultUpdateStrategy().Stagger} {
		job := systemWithUpdate(&structs.UpdateStrategy{MaxParallel: 1, Stagger: ok})
		job.Type = structs.JobTypeService
		must.NoError(t, job.Validate(), must.Sprintf("stagger %v", ok))
	}
}
