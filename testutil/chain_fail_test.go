package testutil_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// crashingEdgeJob is one instance with a one-hour window whose task exits
// with an error after two minutes and is not restarted: every copy fails,
// the original too, but the original's failure stays on its cut-off node.
func crashingEdgeJob(attempts int) *structs.Job {
	job := disconnectJob()
	tg := job.TaskGroups[0]
	tg.ReschedulePolicy = &structs.ReschedulePolicy{
		Attempts: attempts, Interval: time.Hour, Delay: 5 * time.Second, DelayFunction: structs.DelayFunctionConstant,
	}
	tg.RestartPolicy = &structs.RestartPolicy{Attempts: 0, Mode: structs.RestartPolicyModeFail, Interval: time.Minute}
	tg.Tasks[0].Config = map[string]any{"run_for": "2m", "exit_code": 1}
	return job
}

// The crash loop of issue 18, end to end on fake time: O's client is cut,
// its replacement R1 fails on its node. With attempts = 1 nothing more is
// placed for an hour and R1 is never stopped as not needed; with
// attempts = 2, R2 follows R1 (PreviousAllocation, tracker), on the third
// node, and then nothing. The real cluster placed nine allocations in a
// minute, all on R1's node.
func TestMemCluster_FailedReplacementFollowsReschedulePolicy(t *testing.T) {
	for _, attempts := range []int{1, 2} {
		t.Run(fmt.Sprint("attempts=", attempts), func(t *testing.T) {
			testutil.Bubble(t, func(t *testing.T) {
				c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 3})
				st := func() *state.StateStore { return c.Leader().State() }
				job := crashingEdgeJob(attempts)
				var reg structs.JobRegisterResponse
				must.NoError(t, c.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
				allocs := func() []*structs.Allocation {
					out, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
					must.NoError(t, err)
					return out
				}
				var o *structs.Allocation
				wait.Eventually(t, time.Minute, "O running", func() (bool, string) {
					all := allocs()
					if len(all) == 1 && all[0].ClientStatus == structs.AllocClientStatusRunning {
						o = all[0]
						return true, ""
					}
					return false, describe(all)
				})
				for i, cl := range c.Clients {
					if cl.NodeID() == o.NodeID {
						c.Net.Isolate(testutil.ClientHost(i), fault.Blackhole)
					}
				}

				// R1 replaces O, runs two minutes and fails; then an hour
				// passes, well past every reschedule delay.
				wait.Eventually(t, 10*time.Minute, "R1 placed and failed", func() (bool, string) {
					for _, a := range allocs() {
						if a.PreviousAllocation == o.ID && a.ClientStatus == structs.AllocClientStatusFailed {
							return true, ""
						}
					}
					return false, describe(allocs())
				})
				testutil.Settle(50 * time.Minute)

				all := allocs()
				must.Len(t, 1+attempts, all, must.Sprintf("one placement per attempt: %s", describe(all)))
				byID := map[string]*structs.Allocation{}
				nodes := map[string]bool{}
				for _, a := range all {
					byID[a.ID] = a
					nodes[a.NodeID] = true
				}
				must.MapLen(t, 1+attempts, nodes, must.Sprint("each attempt on a node the chain has not failed on"))
				got := byID[o.ID]
				must.Eq(t, structs.AllocClientStatusUnknown, got.ClientStatus)
				must.Eq(t, structs.AllocDesiredStatusRun, got.DesiredStatus)
				// Walk the chain O → R1 → R2.
				prev, n := got, 0
				for next := byID[prev.NextAllocation]; next != nil; next = byID[prev.NextAllocation] {
					n++
					must.Eq(t, prev.ID, next.PreviousAllocation)
					must.Len(t, n, next.RescheduleTracker.Events)
					must.Eq(t, structs.AllocClientStatusFailed, next.ClientStatus)
					if next.NextAllocation == "" {
						must.Eq(t, structs.AllocDesiredStatusRun, next.DesiredStatus, must.Sprintf("the last one stays, failed: %q", next.DesiredDescription))
					} else {
						must.Eq(t, structs.AllocRescheduled, next.DesiredDescription)
					}
					prev = next
				}
				must.Eq(t, attempts, n, must.Sprint(describe(all)))
			})
		})
	}
}

// nomad alloc stop of an unknown allocation, then its node goes down (see
// docs/concepts/disconnected-clients.md, "Operator actions"), end to end:
// the servers keep it unknown and desired stop, since its task may still
// run on the cut-off node; they never record lost for it. The base tree
// marked it lost when the node went down.
func TestMemCluster_StoppedUnknownStaysUnknownWhenNodeDown(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 2})
		st := func() *state.StateStore { return c.Leader().State() }
		job := disconnectJob()
		var reg structs.JobRegisterResponse
		must.NoError(t, c.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
		var o *structs.Allocation
		wait.Eventually(t, time.Minute, "O running", func() (bool, string) {
			all, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			if len(all) == 1 && all[0].ClientStatus == structs.AllocClientStatusRunning {
				o = all[0]
				return true, ""
			}
			return false, describe(all)
		})
		for i, cl := range c.Clients {
			if cl.NodeID() == o.NodeID {
				c.Net.Isolate(testutil.ClientHost(i), fault.Blackhole)
			}
		}
		wait.Eventually(t, 5*time.Minute, "O unknown", func() (bool, string) {
			a, err := st().AllocByID(nil, o.ID)
			must.NoError(t, err)
			return a.ClientStatus == structs.AllocClientStatusUnknown, a.ClientStatus
		})

		var resp structs.AllocStopResponse
		must.NoError(t, c.Leader().RPC("Alloc.Stop", &structs.AllocStopRequest{AllocID: o.ID}, &resp))
		// Nothing on the node may come back now: it goes down.
		wait.Eventually(t, 10*time.Minute, "node down", func() (bool, string) {
			n, err := st().NodeByID(nil, o.NodeID)
			must.NoError(t, err)
			return n.Status == structs.NodeStatusDown, n.Status
		})
		testutil.Settle(time.Minute)

		a, err := st().AllocByID(nil, o.ID)
		must.NoError(t, err)
		must.Eq(t, structs.AllocDesiredStatusStop, a.DesiredStatus)
		must.Eq(t, structs.AllocClientStatusUnknown, a.ClientStatus)
	})
}
