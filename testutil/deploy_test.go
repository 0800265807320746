package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// deployJob is a long-running service job of count allocations with an
// update block.
func deployJob(count int, u *structs.UpdateStrategy) *structs.Job {
	job := mock.Job()
	tg := job.TaskGroups[0]
	tg.Count = count
	tg.Tasks[0].Config = map[string]any{"run_for": "24h"}
	tg.Tasks[0].Resources = &structs.Resources{CPU: 50, MemoryMB: 32}
	tg.Update = u
	return job
}

func register(t *testing.T, s *nomad.Server, job *structs.Job) {
	t.Helper()
	var reg structs.JobRegisterResponse
	must.NoError(t, s.RPC("Job.Register", &structs.JobRegisterRequest{Job: job.Copy()}, &reg))
}

// deploymentOf waits for the job's deployment of version to reach status.
func deploymentOf(t *testing.T, s *nomad.Server, job *structs.Job, version uint64, status string, within time.Duration) *structs.Deployment {
	t.Helper()
	var got *structs.Deployment
	wait.Eventually(t, within, fmt.Sprintf("deployment of version %d %s", version, status), func() (bool, string) {
		all, err := s.State().DeploymentsByJobID(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		seen := ""
		for _, d := range all {
			seen += fmt.Sprintf("v%d %s (%s) %+v; ", d.JobVersion, d.Status, d.StatusDescription, *d.TaskGroups["web"])
			if d.JobVersion == version && d.Status == status {
				got = d
				return true, ""
			}
		}
		return false, seen
	})
	return got
}

// A rolling update of five allocations, two at a time: the new version
// never has more than max_parallel allocations without a health verdict,
// the old ones are replaced as the new ones turn healthy, the deployment
// ends successful and the version is marked stable — what `job run`
// promises an operator who changes a service.
func TestCluster_RollingUpdateMaxParallel(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 3})
		s := c.Leader()
		job := deployJob(5, &structs.UpdateStrategy{
			MaxParallel: 2, HealthCheck: structs.UpdateHealthCheckTaskStates,
			MinHealthyTime: 5 * time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 5 * time.Minute,
		})
		register(t, s, job)
		deploymentOf(t, s, job, 0, structs.DeploymentStatusSuccessful, 2*time.Minute)

		v1 := job.Copy()
		v1.TaskGroups[0].Tasks[0].Env = map[string]string{"FOO": "v1"}
		register(t, s, v1)
		maxInFlight := 0
		wait.Eventually(t, 5*time.Minute, "every allocation on version 1", func() (bool, string) {
			allocs, err := s.State().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			inFlight, done := 0, 0
			for _, a := range allocs {
				if a.Job.Version != 1 || a.TerminalStatus() {
					continue
				}
				if a.DeploymentStatus.IsHealthy() {
					done++
				} else {
					inFlight++
				}
			}
			maxInFlight = max(maxInFlight, inFlight)
			deps, _ := s.State().DeploymentsByJobID(nil, job.Namespace, job.ID)
			evals, _ := s.State().EvalsByJob(nil, job.Namespace, job.ID)
			ev := ""
			for _, e := range evals {
				ev += fmt.Sprintf("[%s %s %s] ", e.TriggeredBy, e.Status, e.StatusDescription)
			}
			dep := ""
			for _, d := range deps {
				dep += fmt.Sprintf("v%d %s %+v; ", d.JobVersion, d.Status, *d.TaskGroups["web"])
			}
			return done == 5, fmt.Sprintf("%d healthy, %d in flight: %s\n%s\n%s", done, inFlight, describe(allocs), dep, ev)
		})
		must.LessEq(t, 2, maxInFlight, must.Sprint("max_parallel = 2 allocations in flight at most"))
		must.Eq(t, 2, maxInFlight, must.Sprint("the rollout used its parallelism"))
		d := deploymentOf(t, s, job, 1, structs.DeploymentStatusSuccessful, time.Minute)
		must.Eq(t, 5, d.TaskGroups["web"].HealthyAllocs)
		got, err := s.State().JobByID(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		must.True(t, got.Stable, must.Sprint("a successful deployment marks the version stable"))
		allocs, err := s.State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		running := 0
		for _, a := range allocs {
			if !a.TerminalStatus() {
				running++
			}
		}
		must.Eq(t, 5, running, must.Sprint(describe(allocs)))
	})
}

// A canary of a broken version fails, the deployment fails and, with
// auto_revert, the job goes back to its last stable version: the old
// allocations were never touched, and a new version with the stable spec
// is deployed. An operator's bad release heals itself.
func TestCluster_FailingCanaryAutoReverts(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 2})
		s := c.Leader()
		job := deployJob(2, &structs.UpdateStrategy{
			MaxParallel: 1, Canary: 1, AutoRevert: true, HealthCheck: structs.UpdateHealthCheckTaskStates,
			MinHealthyTime: 5 * time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 5 * time.Minute,
		})
		register(t, s, job)
		deploymentOf(t, s, job, 0, structs.DeploymentStatusSuccessful, 2*time.Minute)
		original, err := s.State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)

		bad := job.Copy()
		bad.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "1s", "exit_code": 1}
		bad.TaskGroups[0].RestartPolicy = &structs.RestartPolicy{Attempts: 0, Mode: structs.RestartPolicyModeFail, Interval: time.Minute}
		register(t, s, bad)
		failed := deploymentOf(t, s, job, 1, structs.DeploymentStatusFailed, 3*time.Minute)
		must.Eq(t, "Failed due to unhealthy allocations - rolling back to job version 0", failed.StatusDescription)

		// The rollback is version 2 with version 0's spec; it deploys.
		deploymentOf(t, s, job, 2, structs.DeploymentStatusSuccessful, 3*time.Minute)
		got, err := s.State().JobByID(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		must.Eq(t, uint64(2), got.Version)
		must.Eq(t, "24h", got.TaskGroups[0].Tasks[0].Config["run_for"])
		for _, o := range original {
			a, err := s.State().AllocByID(nil, o.ID)
			must.NoError(t, err)
			must.Eq(t, structs.AllocClientStatusRunning, a.ClientStatus, must.Sprint("the stable allocations kept running"))
			must.Eq(t, structs.AllocDesiredStatusRun, a.DesiredStatus)
		}
	})
}

// A client drops off in the middle of a rolling update: its allocation is
// marked unknown, the rollout replaces it like any other (the stop waits
// for the client), the deployment still ends successful instead of
// stalling, and once the client is back exactly count allocations of the
// new version run. Nothing is duplicated along the way.
func TestCluster_DisconnectDuringRollingUpdate(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 3})
		s := c.Leader()
		job := deployJob(3, &structs.UpdateStrategy{
			MaxParallel: 1, HealthCheck: structs.UpdateHealthCheckTaskStates,
			MinHealthyTime: 5 * time.Second, HealthyDeadline: time.Minute, ProgressDeadline: 10 * time.Minute,
		})
		job.TaskGroups[0].Disconnect = &structs.DisconnectStrategy{LostAfter: time.Hour, Reconcile: structs.ReconcileOptionBestScore}
		register(t, s, job)
		deploymentOf(t, s, job, 0, structs.DeploymentStatusSuccessful, 2*time.Minute)

		v1 := job.Copy()
		v1.TaskGroups[0].Tasks[0].Env = map[string]string{"FOO": "v1"}
		register(t, s, v1)
		// Cut the client of an allocation still on version 0.
		allocs, err := s.State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		cut := -1
		for _, a := range allocs {
			if a.Job.Version == 0 && !a.TerminalStatus() && a.DesiredStatus == structs.AllocDesiredStatusRun {
				for i, cl := range c.Clients {
					if cl.NodeID() == a.NodeID {
						cut = i
					}
				}
			}
		}
		must.NotEq(t, -1, cut)
		c.Links[cut].Cut(fault.Blackhole)

		deploymentOf(t, s, job, 1, structs.DeploymentStatusSuccessful, 10*time.Minute)
		c.Links[cut].Heal()
		wait.Eventually(t, 5*time.Minute, "three allocations of version 1 running, nothing else live", func() (bool, string) {
			allocs, err := s.State().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			running, other := 0, 0
			for _, a := range allocs {
				switch {
				case a.TerminalStatus():
				case a.Job.Version == 1 && a.ClientStatus == structs.AllocClientStatusRunning:
					running++
				default:
					other++
				}
			}
			return running == 3 && other == 0, describe(allocs)
		})
	})
}
