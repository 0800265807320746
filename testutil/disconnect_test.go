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

// twoClients starts one in-memory server with upstream's heartbeat
// timings and two clients. Call it inside testutil.Bubble: the TTL, its
// grace and the waits below are fake time.
func twoClients(t *testing.T) *testutil.MemCluster {
	return testutil.NewMemCluster(t, testutil.MemClusterConfig{Servers: 1, Clients: 2})
}

// runOne registers a single-instance job, waits until its allocation runs
// and returns it with the index of the client that runs it.
func runOne(t *testing.T, c *testutil.MemCluster, job *structs.Job) (*structs.Allocation, int) {
	t.Helper()
	var reg structs.JobRegisterResponse
	must.NoError(t, c.Leader().RPC("Job.Register", &structs.JobRegisterRequest{Job: job}, &reg))
	var original *structs.Allocation
	wait.Eventually(t, time.Minute, "original running", func() (bool, string) {
		allocs, err := c.Leader().State().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		if len(allocs) == 1 && allocs[0].ClientStatus == structs.AllocClientStatusRunning {
			original = allocs[0]
			return true, ""
		}
		return false, describe(allocs)
	})
	for i, cl := range c.Clients {
		if cl.NodeID() == original.NodeID {
			return original, i
		}
	}
	t.Fatalf("no client runs node %s", original.NodeID)
	return nil, 0
}

func disconnectJob() *structs.Job {
	replace := true
	job := &structs.Job{
		ID: "edge-app", Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name:  "app",
			Count: 1,
			Disconnect: &structs.DisconnectStrategy{
				LostAfter: time.Hour, Replace: &replace, Reconcile: structs.ReconcileOptionKeepOriginal,
			},
			ReschedulePolicy: &structs.ReschedulePolicy{Delay: 0, DelayFunction: structs.DelayFunctionConstant, Unlimited: true},
			Tasks: []*structs.Task{{
				Name: "app", Driver: "mock_driver",
				Config:    map[string]any{"run_for": "1h"},
				Resources: &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

func clientAlloc(t *testing.T, c *testutil.MemCluster, i int, id string) *structs.Allocation {
	t.Helper()
	for _, a := range c.Clients[i].Allocs() {
		if a.ID == id {
			return a
		}
	}
	t.Fatalf("client %d has no allocation %s", i, id)
	return nil
}

func hasEvent(ts *structs.TaskState, typ string) bool {
	for _, e := range ts.Events {
		if e.Type == typ {
			return true
		}
	}
	return false
}

func describe(allocs []*structs.Allocation) string {
	s := ""
	for _, a := range allocs {
		s += fmt.Sprintf("[%s node=%s desired=%s client=%s] ", a.ID[:8], a.NodeID[:8], a.DesiredStatus, a.ClientStatus)
	}
	return s
}

// A job without a disconnect window behaves as before the feature: when its
// client drops, the node goes down, the allocation is lost and replaced;
// when the client returns it stops the lost allocation, and its final
// report (complete) is recorded over lost, as upstream does.
func TestCluster_NoWindow_LostAndReplaced(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		st := c.Leader().State
		job := disconnectJob()
		job.TaskGroups[0].Disconnect = nil
		original, cut := runOne(t, c, job)
		c.Links[cut].Cut(fault.Reset)

		wait.Eventually(t, time.Minute, "node down, original lost, replacement running", func() (bool, string) {
			allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			n, err := st().NodeByID(nil, original.NodeID)
			must.NoError(t, err)
			lost, running := false, false
			for _, a := range allocs {
				if a.ID == original.ID {
					lost = a.ClientStatus == structs.AllocClientStatusLost && a.DesiredStatus == structs.AllocDesiredStatusStop
				} else if a.ClientStatus == structs.AllocClientStatusRunning {
					running = true
				}
			}
			return n.Status == structs.NodeStatusDown && lost && running, fmt.Sprintf("node %s; %s", n.Status, describe(allocs))
		})

		c.Links[cut].Heal()
		wait.Eventually(t, time.Minute, "returned client stops the lost allocation and its report is recorded", func() (bool, string) {
			a := clientAlloc(t, c, cut, original.ID)
			n, err := st().NodeByID(nil, original.NodeID)
			must.NoError(t, err)
			stored, err := st().AllocByID(nil, original.ID)
			must.NoError(t, err)
			return n.Status == structs.NodeStatusReady && a.ClientStatus == structs.AllocClientStatusComplete &&
					stored.ClientStatus == structs.AllocClientStatusComplete,
				fmt.Sprintf("node %s; client sees %s; servers hold %s", n.Status, a.ClientStatus, stored.ClientStatus)
		})
		summary, err := st().JobSummaryByID(nil, job.Namespace, job.ID)
		must.NoError(t, err)
		must.Eq(t, 0, summary.Summary["app"].Lost)
		must.Eq(t, 1, summary.Summary["app"].Complete)
		must.Eq(t, 1, summary.Summary["app"].Running)
	})
}

// With replace = false nothing is placed while the original is unknown
// (upstream's 1.8+ releases still replace; we must not), and the original
// carries on when its client returns.
func TestCluster_ReplaceFalse_NoReplacementWhileUnknown(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		st := c.Leader().State
		job := disconnectJob()
		no := false
		job.TaskGroups[0].Disconnect.Replace = &no
		original, cut := runOne(t, c, job)
		c.Links[cut].Cut(fault.Blackhole)
		wait.Eventually(t, time.Minute, "original unknown", func() (bool, string) {
			a, err := st().AllocByID(nil, original.ID)
			must.NoError(t, err)
			return a.ClientStatus == structs.AllocClientStatusUnknown, a.ClientStatus
		})
		// The scheduler has acted on the disconnect (the allocation is
		// unknown); wait for every evaluation of the job to finish, then check
		// that none of them placed anything.
		wait.Eventually(t, time.Minute, "evaluations settled", func() (bool, string) {
			evals, err := st().EvalsByJob(nil, job.Namespace, job.ID)
			must.NoError(t, err)
			for _, e := range evals {
				if e.Status == structs.EvalStatusPending && e.WaitUntil.IsZero() {
					return false, fmt.Sprintf("eval %s (%s) pending", e.ID[:8], e.TriggeredBy)
				}
			}
			return true, ""
		})
		allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		must.Len(t, 1, allocs, must.Sprint("no replacement while the original is unknown"))
		var scale structs.JobScaleStatusResponse
		must.NoError(t, c.Leader().RPC("Job.ScaleStatus", &structs.JobSpecificRequest{JobID: job.ID,
			QueryOptions: structs.QueryOptions{Namespace: job.Namespace}}, &scale))
		must.Eq(t, &structs.TaskGroupScaleStatus{Desired: 1, Placed: 1, Unknown: 1, Events: []*structs.ScalingEvent{},
			Unstable: "1 allocation unknown (node disconnected): Running undercounts the group until they reconnect or are lost"},
			scale.JobScaleStatus.TaskGroups["app"], must.Sprint("an autoscaler sees the unknown allocation as placed, not running, and why the group is not stable"))

		c.Links[cut].Heal()
		wait.Eventually(t, time.Minute, "original back, node ready", func() (bool, string) {
			a, err := st().AllocByID(nil, original.ID)
			must.NoError(t, err)
			n, err := st().NodeByID(nil, original.NodeID)
			must.NoError(t, err)
			return n.Status == structs.NodeStatusReady && a.ClientStatus == structs.AllocClientStatusRunning && !a.NeedsToReconnect(),
				fmt.Sprintf("node %s alloc %s", n.Status, a.ClientStatus)
		})
		allocs, err = st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		must.Len(t, 1, allocs)
		must.Eq(t, uint64(0), allocs[0].TaskStates["app"].Restarts)
	})
}

// nomad alloc stop on an unknown allocation (see
// docs/concepts/disconnected-clients.md, "Operator actions"): stopped on the
// servers at once and replaced; its client stops it when it returns, and
// it never runs again.
func TestCluster_AllocStopWhileUnknown(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		st := c.Leader().State
		job := disconnectJob()
		no := false
		job.TaskGroups[0].Disconnect.Replace = &no // only the operator's stop replaces it
		original, cut := runOne(t, c, job)
		c.Links[cut].Cut(fault.Blackhole)
		wait.Eventually(t, time.Minute, "original unknown", func() (bool, string) {
			a, err := st().AllocByID(nil, original.ID)
			must.NoError(t, err)
			return a.ClientStatus == structs.AllocClientStatusUnknown, a.ClientStatus
		})

		var stop structs.AllocStopResponse
		must.NoError(t, c.Leader().RPC("Alloc.Stop", &structs.AllocStopRequest{AllocID: original.ID}, &stop))
		wait.Eventually(t, time.Minute, "original stopped on the servers, replacement running", func() (bool, string) {
			allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			stopped, running := false, false
			for _, a := range allocs {
				if a.ID == original.ID {
					stopped = a.DesiredStatus == structs.AllocDesiredStatusStop
				} else if a.ClientStatus == structs.AllocClientStatusRunning {
					running = true
				}
			}
			return stopped && running, describe(allocs)
		})

		c.Links[cut].Heal()
		wait.Eventually(t, time.Minute, "returned client stops the original", func() (bool, string) {
			a := clientAlloc(t, c, cut, original.ID)
			return a.ClientStatus == structs.AllocClientStatusComplete, a.ClientStatus
		})
		allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		running := 0
		for _, a := range allocs {
			if a.DesiredStatus == structs.AllocDesiredStatusRun {
				running++
				must.NotEq(t, original.ID, a.ID)
			}
		}
		must.Eq(t, 1, running)
	})
}

// nomad alloc stop on an unknown allocation that already has a running
// replacement stops it on the servers at once and places nothing more: the
// replacement already stands for the instance.
func TestCluster_AllocStopWhileUnknown_AlreadyReplaced(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		st := c.Leader().State
		job := disconnectJob()
		original, cut := runOne(t, c, job)
		c.Links[cut].Cut(fault.Blackhole)
		wait.Eventually(t, time.Minute, "original unknown and replaced", func() (bool, string) {
			allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			unknown, replaced := false, false
			for _, a := range allocs {
				if a.ID == original.ID {
					unknown = a.ClientStatus == structs.AllocClientStatusUnknown
				} else if a.ClientStatus == structs.AllocClientStatusRunning {
					replaced = true
				}
			}
			return unknown && replaced, describe(allocs)
		})

		var stop structs.AllocStopResponse
		must.NoError(t, c.Leader().RPC("Alloc.Stop", &structs.AllocStopRequest{AllocID: original.ID}, &stop))
		wait.Eventually(t, time.Minute, "original stopped on the servers", func() (bool, string) {
			ev, err := st().EvalByID(nil, stop.EvalID)
			must.NoError(t, err)
			a, err := st().AllocByID(nil, original.ID)
			must.NoError(t, err)
			return ev.Status == structs.EvalStatusComplete && a.DesiredStatus == structs.AllocDesiredStatusStop,
				fmt.Sprintf("eval %s, original desired %s", ev.Status, a.DesiredStatus)
		})
		allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
		must.NoError(t, err)
		must.Len(t, 2, allocs, must.Sprint("nothing placed beyond the existing replacement: ", describe(allocs)))

		c.Links[cut].Heal()
		wait.Eventually(t, time.Minute, "returned client stops the original", func() (bool, string) {
			a := clientAlloc(t, c, cut, original.ID)
			return a.ClientStatus == structs.AllocClientStatusComplete, a.ClientStatus
		})
	})
}
