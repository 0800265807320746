package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// settled waits until no evaluation of the job is waiting for a worker.
func settled(t *testing.T, c *testutil.MemCluster, job *structs.Job) {
	t.Helper()
	wait.Eventually(t, time.Minute, "evaluations settled", func() (bool, string) {
		evals, err := c.Leader().State().EvalsByJob(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		for _, e := range evals {
			if e.Status == structs.EvalStatusPending && e.WaitUntil.IsZero() {
				return false, fmt.Sprintf("eval %s (%s) pending", e.ID[:8], e.TriggeredBy)
			}
		}
		return true, ""
	})
}

func planJob(t *testing.T, c *testutil.MemCluster, job *structs.Job) *structs.JobPlanResponse {
	t.Helper()
	var resp structs.JobPlanResponse
	must.NoError(t, c.Leader().RPC("Job.Plan", &structs.JobPlanRequest{Job: job.Copy(), Diff: true}, &resp))
	return &resp
}

// What `job plan` reports while a client is cut off and its allocation is
// unknown: the allocation is kept (Ignore) and nothing replaces or stops
// it, with replace = false as with the default; a count increase places
// only the new instance; a job update treats it as spec 8 says. An
// operator planning an update during an outage must not be told that the
// unreachable instance will be duplicated.
func TestCluster_PlanWhileClientCut(t *testing.T) {
	for _, replace := range []bool{false, true} {
		t.Run(fmt.Sprintf("replace=%t", replace), func(t *testing.T) {
			testutil.Bubble(t, func(t *testing.T) {
				c := twoClients(t)
				job := disconnectJob()
				job.TaskGroups[0].Disconnect.Replace = &replace
				original, cut := runOne(t, c, job)
				c.Links[cut].Cut(fault.Blackhole)
				wait.Eventually(t, time.Minute, "original unknown", func() (bool, string) {
					a, err := c.Leader().State().AllocByID(nil, original.ID)
					must.NoError(t, err)
					return a.ClientStatus == structs.AllocClientStatusUnknown, a.ClientStatus
				})
				settled(t, c, job)
				live := 1
				if replace {
					live = 2 // the original, unknown, and its replacement
					wait.Eventually(t, time.Minute, "replacement placed", func() (bool, string) {
						allocs, err := c.Leader().State().AllocsByJob(nil, job.Namespace, job.ID, true)
						must.NoError(t, err)
						return len(allocs) == 2, describe(allocs)
					})
					settled(t, c, job)
				}

				same := planJob(t, c, job)
				u := same.Annotations.DesiredTGUpdates["app"]
				must.Eq(t, 0, u.Place, must.Sprintf("nothing more is placed: %+v", u))
				must.Eq(t, 0, u.Stop, must.Sprintf("the unknown allocation is not stopped: %+v", u))
				must.Eq(t, uint64(live), u.Ignore, must.Sprintf("%+v", u))
				must.MapEmpty(t, same.FailedTGAllocs)
				must.Eq(t, structs.DiffTypeNone, same.Diff.Type)

				bigger := job.Copy()
				bigger.TaskGroups[0].Count = 2
				more := planJob(t, c, bigger)
				u = more.Annotations.DesiredTGUpdates["app"]
				must.Eq(t, 1, u.Place, must.Sprintf("only the new instance is placed: %+v", u))
				must.Eq(t, 0, u.Stop, must.Sprintf("%+v", u))

				// Spec 8: the unknown allocation takes an in-place update
				// and is replaced by a destructive one; with a replacement
				// running, the replacement takes the update and the unknown
				// original is left to lose on its return.
				changed := job.Copy()
				changed.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "2h"}
				destructive := planJob(t, c, changed).Annotations.DesiredTGUpdates["app"]
				if replace {
					must.Eq(t, structs.DesiredUpdates{Ignore: 1, Place: 1, InPlaceUpdate: 1}, *u)
					must.Eq(t, structs.DesiredUpdates{Ignore: 1, DestructiveUpdate: 1}, *destructive)
				} else {
					must.Eq(t, structs.DesiredUpdates{Place: 1, InPlaceUpdate: 1}, *u)
					must.Eq(t, structs.DesiredUpdates{DestructiveUpdate: 1}, *destructive)
				}
			})
		})
	}
}
