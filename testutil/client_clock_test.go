package testutil_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// skewedClock is a node's clock that is off by a constant: an edge box
// whose clock NTP has not set, or set wrong.
type skewedClock struct {
	clock.Clock
	by time.Duration
}

func (c skewedClock) Now() time.Time { return c.Clock.Now().Add(c.by) }

// A client whose clock is ten minutes behind or ahead of the servers'
// reports its failed task's finish on the servers' clock, so the
// reschedule delay counts from the real failure: behind, the replacement
// would otherwise come at once (the delay already "over"), a crash loop
// faster than the policy; ahead, ten minutes late.
func TestMemCluster_ClientClockOffDoesNotMoveRescheduleDelay(t *testing.T) {
	for _, skew := range []time.Duration{0, -10 * time.Minute, 10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			testutil.Bubble(t, func(t *testing.T) {
				c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 1, Client: func(_ int, cc *client.Config) {
					cc.Clock = skewedClock{Clock: clock.Real(), by: skew}
				}})
				job := crashingEdgeJob(1)
				tg := job.TaskGroups[0]
				tg.ReschedulePolicy.Delay = time.Minute
				tg.Tasks[0].Config = map[string]any{"run_for": "30s", "exit_code": 1}
				var reg structs.JobRegisterResponse
				must.NoError(t, c.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
				allocs := func() []*structs.Allocation {
					out, err := c.Leader().State().AllocsByJob(nil, job.Namespace, job.ID, true)
					must.NoError(t, err)
					return out
				}
				var failed *structs.Allocation
				wait.Eventually(t, 20*time.Minute, "the first allocation failed", func() (bool, string) {
					for _, a := range allocs() {
						if a.ClientStatus == structs.AllocClientStatusFailed {
							failed = a
							return true, ""
						}
					}
					return false, describe(allocs())
				})
				seen := time.Now()
				finished := failed.TaskStates[tg.Tasks[0].Name].FinishedAt
				must.True(t, finished.After(seen.Add(-5*time.Second)) && !finished.After(seen),
					must.Sprintf("finish %v reported on the servers' clock (the servers saw it at %v)", finished, seen))

				testutil.Settle(45 * time.Second)
				must.Len(t, 1, allocs(), must.Sprintf("no replacement before the delay: %s", describe(allocs())))
				wait.Eventually(t, time.Minute, "the replacement after the delay", func() (bool, string) {
					return len(allocs()) == 2, describe(allocs())
				})
			})
		})
	}
}
