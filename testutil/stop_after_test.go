package testutil_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// stopAfter is longer than upstream's heartbeat TTL and grace (a node is
// given up on 20-22.5 s after its last heartbeat), so the servers find
// the allocation lost while its client still runs it: only the wait the
// servers add before the replacement keeps two copies from running.
const (
	stopAfter   = time.Minute
	killTimeout = time.Second
)

// stopAfterJob is a group of one whose client stops it after stopAfter
// without the servers. Its task ignores the kill signal, so the kill takes
// the whole kill_timeout, which the servers must wait out too.
func stopAfterJob() *structs.Job {
	stop := stopAfter
	job := &structs.Job{
		ID: "edge-stop", Datacenters: []string{"dc1"},
		TaskGroups: []*structs.TaskGroup{{
			Name:                      "app",
			Count:                     1,
			StopAfterClientDisconnect: &stop,
			Tasks: []*structs.Task{{
				Name: "app", Driver: "mock_driver",
				Config:      map[string]any{"run_for": "1h", "kill_after": "10s"},
				KillTimeout: killTimeout,
				Resources:   &structs.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	job.Canonicalize()
	return job
}

// "stop_on_client_after" (docs/concepts/disconnected-clients.md) end to end:
// a client cut off from the servers stops a
// stop_after_client_disconnect allocation by itself once that long has
// passed, while still cut off; the servers mark it lost and place its
// replacement on the other client only at lost-time + stop_after + kill_timeout,
// after the original was dead: never two copies at once. When the link
// returns nothing is restarted and the original's own report (complete) is
// recorded over lost.
func TestCluster_StopAfterClientDisconnect_ClientStopsThenReplaced(t *testing.T) {
	testutil.Bubble(t, func(t *testing.T) {
		c := twoClients(t)
		st := c.Leader().State
		job := stopAfterJob()
		original, cut := runOne(t, c, job)
		c.Links[cut].Cut(fault.Reset)

		// The cut-off client stops the task on its own, with the reason.
		var local *structs.Allocation
		wait.Eventually(t, 3*time.Minute, "cut-off client completes the allocation itself", func() (bool, string) {
			local = clientAlloc(t, c, cut, original.ID)
			return local.ClientStatus == structs.AllocClientStatusComplete, localView(local)
		})
		ts := local.TaskStates["app"]
		must.False(t, ts.Failed)
		must.Eq(t, 1, countEvents(ts, structs.TaskStarted))
		var killing *structs.TaskEvent
		for _, e := range ts.Events {
			if e.Type == structs.TaskKilling {
				killing = e
			}
		}
		must.NotNil(t, killing, must.Sprint(localView(local)))
		must.StrContains(t, killing.KillReason, "stop_on_client_after (1m0s)")
		must.Eq(t, killTimeout, killing.KillTimeout)
		lastOK := c.Clients[cut].LastHeartbeat()
		must.False(t, time.Unix(0, killing.Time).Before(lastOK.Add(stopAfter)),
			must.Sprintf("kill at %s, last heartbeat %s", time.Unix(0, killing.Time), lastOK))
		clientDone := ts.FinishedAt

		// The servers: lost now, replacement on the other client later.
		var lost, repl *structs.Allocation
		wait.Eventually(t, 3*time.Minute, "original lost, replacement running on the other client", func() (bool, string) {
			allocs, err := st().AllocsByJob(nil, job.Namespace, job.ID, true)
			must.NoError(t, err)
			n, err := st().NodeByID(nil, original.NodeID)
			must.NoError(t, err)
			lost, repl = nil, nil
			for _, a := range allocs {
				switch {
				case a.ID == original.ID:
					lost = a
				case a.ClientStatus == structs.AllocClientStatusRunning:
					repl = a
				}
			}
			ok := lost != nil && lost.ClientStatus == structs.AllocClientStatusLost &&
				lost.DesiredStatus == structs.AllocDesiredStatusStop && repl != nil
			return ok, fmt.Sprintf("node %s; %s", n.Status, describe(allocs))
		})
		n, err := st().NodeByID(nil, original.NodeID)
		must.NoError(t, err)
		must.Eq(t, structs.NodeStatusDown, n.Status, must.Sprint("no lost window: down, not disconnected"))
		must.Eq(t, original.ID, repl.PreviousAllocation)
		must.Eq(t, original.Name, repl.Name)
		must.Eq(t, c.Clients[1-cut].NodeID(), repl.NodeID)
		must.True(t, clientAlloc(t, c, cut, original.ID).ClientStatus == structs.AllocClientStatusComplete)

		// The evaluation that found it lost timed the replacement's follow-up.
		followup, err := st().EvalByID(nil, lost.FollowupEvalID)
		must.NoError(t, err)
		must.NotNil(t, followup, must.Sprintf("no follow-up %q on the lost allocation", lost.FollowupEvalID))
		must.Eq(t, structs.EvalTriggerRetryFailedAlloc, followup.TriggeredBy)
		lostTime := time.Unix(0, followup.CreateTime)
		must.Eq(t, lostTime.Add(stopAfter+killTimeout), followup.WaitUntil)
		must.True(t, lostTime.Before(time.Unix(0, killing.Time)),
			must.Sprintf("the servers found it lost at %s, after its client killed it at %s", lostTime, time.Unix(0, killing.Time)))
		must.False(t, time.Unix(0, lost.ModifyTime).Before(lostTime), must.Sprint("the loss commits after its decision"))
		placed := time.Unix(0, repl.CreateTime)
		must.False(t, placed.Before(followup.WaitUntil),
			must.Sprintf("replacement placed at %s, before lost %s + %s + %s", placed, lostTime, stopAfter, killTimeout))
		must.True(t, clientDone.Before(placed),
			must.Sprintf("the original died at %s, after its replacement was placed at %s", clientDone, placed))

		// The link returns: nothing restarts, the client's complete replaces
		// lost, one copy runs.
		c.Links[cut].Heal()
		wait.Eventually(t, time.Minute, "node ready again, the lost allocation's task states reported", func() (bool, string) {
			n, err := st().NodeByID(nil, original.NodeID)
			must.NoError(t, err)
			a, err := st().AllocByID(nil, original.ID)
			must.NoError(t, err)
			dead := a.TaskStates["app"] != nil && a.TaskStates["app"].State == structs.TaskStateDead
			return n.Status == structs.NodeStatusReady && dead, fmt.Sprintf("node %s; %s", n.Status, describe([]*structs.Allocation{a}))
		})
		back := clientAlloc(t, c, cut, original.ID)
		must.Eq(t, structs.AllocClientStatusComplete, back.ClientStatus)
		must.Eq(t, 1, countEvents(back.TaskStates["app"], structs.TaskStarted), must.Sprint(localView(back)))
		stored, err := st().AllocByID(nil, original.ID)
		must.NoError(t, err)
		must.Eq(t, structs.AllocClientStatusComplete, stored.ClientStatus, must.Sprint("the client's final report is recorded over lost"))
		wait.Eventually(t, time.Minute, "one running in the summary", func() (bool, string) {
			s, err := st().JobSummaryByID(nil, job.Namespace, job.ID)
			must.NoError(t, err)
			return s.Summary["app"].Running == 1 && s.Summary["app"].Lost == 0 && s.Summary["app"].Complete == 1, fmt.Sprintf("%+v", s.Summary["app"])
		})
	})
}

func countEvents(ts *structs.TaskState, typ string) int {
	n := 0
	for _, e := range ts.Events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// localView renders a client's own view of an allocation for failure
// messages.
func localView(a *structs.Allocation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "client sees %s", a.ClientStatus)
	for name, ts := range a.TaskStates {
		fmt.Fprintf(&b, "; task %s %s:", name, ts.State)
		for _, e := range ts.Events {
			fmt.Fprintf(&b, " [%s %s]", e.Type, e.DisplayMessage)
		}
	}
	return b.String()
}
