package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// clockSkewTolerance is how far a task time the servers record may be
// from their own clock: the client keeps its own clock for task times
// while it is within a second of the servers' (client/server_clock.go),
// and the test reads the servers' clock a poll later.
const clockSkewTolerance = 3 * time.Second

// clockSteps are the steps a client's clock takes: forward by minutes,
// back by minutes (past the real time, as NTP correcting a clock that ran
// ahead does), and back to the machine's.
var clockSteps = []time.Duration{10 * time.Minute, -10 * time.Minute, 0}

// TestClientClockJump checks that a client whose wall clock steps forward
// ten minutes, then back ten minutes, then back to the servers', keeps
// its node ready (heartbeats and the servers' TTLs are on timers, not on
// the wall), keeps its running task (same process, no restart), and that
// the task times the servers record for a task started and finished
// while the clock is off are on the servers' clock: the servers count a
// reschedule delay from a task's finish, so a client ten minutes ahead
// would otherwise have its failed allocations replaced at once, and one
// behind, ten minutes late. The client's clock is stepped with the fault
// clock (harness.SetClockOffset: its agent built with the faultclock
// tag), which moves the wall readings of the agent's clock and not its
// monotonic clock, as a step of CLOCK_REALTIME does.
func TestClientClockJump(t *testing.T) {
	nc := newNetCluster(t, 1, 2)
	stepped := nc.clients[0]
	stepped.UseFaultClock()
	nc.startAll()

	first := nc.run(edgeJob("clocked", 1, time.Hour, stepped.Name))[0]
	nodeID := nc.nodeID(stepped.Name)
	since := time.Now()

	for i, step := range clockSteps {
		stepped.SetClockOffset(step)
		waitClientClock(t, stepped, step)

		// Task times recorded while the clock is off.
		id := fmt.Sprintf("stamp-%d", i)
		st := runStamp(t, nc, id, stepped.Name)
		must.NoError(t, taskTimesOnServerClock(st.submitted, st.done, st.state), must.Sprintf("clock %+v: %s", step, id))
		t.Logf("clock %+v: %s ran %s to %s by the servers' record, submitted at %s",
			step, id, st.state.StartedAt.Format(time.TimeOnly+".000"), st.state.FinishedAt.Format(time.TimeOnly+".000"), st.submitted.Format(time.TimeOnly+".000"))

		// Two heartbeat TTLs and grace on the stepped clock: the node
		// stays ready, the task keeps its process.
		harness.Hold(t, 8*time.Second, fmt.Sprintf("clock %+v: %s ready, its task running as pid %d", step, stepped.Name, first.PID), func() error {
			if s := nc.nodeStatus(stepped.Name); s != "ready" {
				return fmt.Errorf("node %s is %s", stepped.Name, s)
			}
			return sameRun(nc, "clocked", first)
		})
	}
	missed, err := heartbeatsMissedSince(nc.anyServer().API(), nodeID, since)
	must.NoError(t, err)
	if !missed.IsZero() {
		t.Fatalf("the servers missed %s's heartbeat at %s, while its clock jumped", stepped.Name, missed.Format(time.RFC3339Nano))
	}
}

// waitClientClock polls the client's own clock (the timestamp of its
// host stats, read on the agent's clock) until it stands offset from the
// test's, which is the servers' (every agent runs on this machine).
func waitClientClock(t *testing.T, a *harness.Agent, offset time.Duration) {
	t.Helper()
	var seen string
	wait.Poll(t, 10*time.Second, fmt.Sprintf("%s's clock %+v from the servers'", a.Name, offset), func() (bool, string) {
		var stats struct{ Timestamp int64 }
		before := time.Now()
		if err := a.GetJSON("/v1/client/stats", &stats); err != nil {
			return false, err.Error()
		}
		theirs := time.Unix(0, stats.Timestamp)
		off := theirs.Sub(before)
		seen = fmt.Sprintf("its clock reads %s, %v from the test's", theirs.Format(time.RFC3339Nano), off.Round(time.Millisecond))
		return off >= offset-clockSkewTolerance && off <= offset+clockSkewTolerance, seen
	})
	t.Logf("%s: %s", a.Name, seen)
}

// stamp is a short batch task's run as the servers recorded it.
type stamp struct {
	submitted, done time.Time // the servers' clock around the run
	state           *nomadapi.TaskState
}

// runStamp runs a one-second batch task on the named node and returns
// its task state once the servers have it complete.
func runStamp(t *testing.T, nc *netCluster, id, node string) stamp {
	t.Helper()
	job := nomadapi.NewBatchJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	tg := nomadapi.NewTaskGroup("sleep", 1)
	tg.Constrain(&nomadapi.Constraint{LTarget: "${node.unique.name}", Operand: "=", RTarget: node})
	tg.RestartPolicy = &nomadapi.RestartPolicy{Attempts: new(0), Mode: new("fail")}
	task := nomadapi.NewTask("sleep", "raw_exec")
	task.SetConfig("command", "/bin/sleep")
	task.SetConfig("args", []string{"1"})
	cpu, mem := 50, 32
	task.Require(&nomadapi.Resources{CPU: &cpu, MemoryMB: &mem})
	tg.AddTask(task)
	job.AddTaskGroup(tg)

	api := nc.anyServer().API()
	submitted := time.Now()
	_, _, err := api.Jobs().Register(job, nil)
	must.NoError(t, err)
	var st *nomadapi.TaskState
	wait.Poll(t, settle, fmt.Sprintf("%s complete on %s", id, node), func() (bool, string) {
		list, _, err := api.Jobs().Allocations(id, true, nil)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, stub := range list {
			seen = append(seen, stub.ID[:8]+" "+stub.ClientStatus)
			if stub.ClientStatus != "complete" {
				continue
			}
			a, _, err := api.Allocations().Info(stub.ID, nil)
			if err != nil {
				return false, err.Error()
			}
			if st = a.TaskStates["sleep"]; st != nil && !st.FinishedAt.IsZero() {
				return true, ""
			}
		}
		return false, strings.Join(seen, ", ")
	})
	return stamp{submitted: submitted, done: time.Now(), state: st}
}

// taskTimesOnServerClock says why a task's recorded times, or its
// events', are not on the servers' clock between submitted and done, or
// a one-second task did not take about a second.
func taskTimesOnServerClock(submitted, done time.Time, st *nomadapi.TaskState) error {
	if err := taskTimesWithin(submitted, done, st); err != nil {
		return err
	}
	if ran := st.FinishedAt.Sub(st.StartedAt); ran < 500*time.Millisecond || ran > 2*clockSkewTolerance {
		return fmt.Errorf("a one-second task ran %v from StartedAt to FinishedAt", ran)
	}
	return nil
}

// sameRun says why the job's one allocation is not still first, running
// as the same process with no restart.
func sameRun(nc *netCluster, jobID string, first allocView) error {
	as, err := nc.allocs(jobID)
	if err != nil {
		return err
	}
	if len(as) != 1 {
		return fmt.Errorf("%s has allocations %s, want only %s", jobID, describeAllocs(as), first)
	}
	if a := as[0]; a.ID != first.ID || a.Client != "running" || a.PID != first.PID || a.Restarts != 0 {
		return fmt.Errorf("%s is %s, was %s", jobID, a, first)
	}
	return nil
}

// heartbeatsMissedSince is when the servers last missed the node's
// heartbeat after since, by their "heartbeat missed" events (of the ten
// newest a node keeps); the zero time when they did not.
func heartbeatsMissedSince(api *nomadapi.Client, nodeID string, since time.Time) (time.Time, error) {
	n, _, err := api.Nodes().Info(nodeID, nil)
	if err != nil {
		return time.Time{}, err
	}
	var last time.Time
	for _, e := range n.Events {
		if e.Message == "Node heartbeat missed" && e.Timestamp.After(since) && e.Timestamp.After(last) {
			last = e.Timestamp
		}
	}
	return last, nil
}
