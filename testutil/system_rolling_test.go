package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// A system job with update { max_parallel = 1, stagger = "30s" }, end to
// end on fake time: a destructive change reaches one node per batch, the
// batches stagger apart (the rolling-update evaluations wait in the broker),
// and every node runs the new version in the end.
func TestMemCluster_SystemJob_RollingUpdate(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 3})
		st := func() *state.StateStore { return c.Leader().State() }
		job := systemEdgeJob(0)
		job.TaskGroups[0].Disconnect = nil
		job.Update = &structs.UpdateStrategy{MaxParallel: 1, Stagger: 30 * time.Second}
		job.TaskGroups[0].Update = nil
		job.Canonicalize()
		systemRunning(t, c, job)

		next := job.Copy()
		next.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "11h"}
		var reg structs.JobRegisterResponse
		must.NoError(t, c.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: next}, &reg))
		updated := func() (int, string) {
			all, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			n := 0
			for _, a := range all {
				if a.DesiredStatus == structs.AllocDesiredStatusRun && a.Job.Version > job.Version {
					n++
				}
			}
			return n, describe(all)
		}
		testutil.Settle(10 * time.Second)
		n, seen := updated()
		must.Eq(t, 1, n, must.Sprintf("the first batch only: %s", seen))
		testutil.Settle(30 * time.Second)
		n, seen = updated()
		must.Eq(t, 2, n, must.Sprintf("the second batch a stagger later: %s", seen))
		wait.Eventually(t, time.Minute, "every node updated", func() (bool, string) {
			n, seen := updated()
			return n == 3, fmt.Sprintf("%d updated: %s", n, seen)
		})
	})
}
