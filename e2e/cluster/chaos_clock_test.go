package cluster

import (
	"fmt"
	"time"

	nomadapi "github.com/hashicorp/nomad/api"
)

// The chaos run's clock jumps: the first chaosClocked clients run ours
// built with the faultclock tag (harness.Agent.UseFaultClock), and before
// about one fault in four one of their wall clocks steps forward or back
// by minutes, or back to the machine's, while the servers keep theirs;
// the step stays through the settle, as a clock nobody corrects would.
// The others run the production binary. The steps are drawn from a
// random source of their own (clockRng, from the same seed), so a seed
// gives the other faults in the order it gave them before clocks jumped.
// What the jump makes worth checking: task times the servers record stay
// on their clock (checkTaskTimes, every check), and a node whose only
// fault in a round was its clock missed no heartbeat (checkClockRound,
// after every settle); no restart of a task and no allocation lost are
// the run's checks already.

// chaosClocked is how many of the run's clients have a fault clock.
const chaosClocked = 2

// chaosTouched is the key of roundTouched for a fault of the servers'.
const chaosTouched = "servers"

// useFaultClocks gives the first chaosClocked clients the fault clock,
// before anything starts.
func (c *chaos) useFaultClocks() {
	for _, cl := range c.nc.clients[:chaosClocked] {
		cl.UseFaultClock()
		c.clocked = append(c.clocked, cl)
	}
}

// maybeStepClock, one time in four, sets a clocked client's wall clock
// ahead of the servers' or behind them by 1 to 15 minutes, or back on
// theirs; a run without fault clocks (the soak's) never does.
func (c *chaos) maybeStepClock() {
	if len(c.clocked) == 0 || c.clockRng.IntN(4) != 0 {
		return
	}
	cl := c.clocked[c.clockRng.IntN(len(c.clocked))]
	minutes := time.Duration(1+c.clockRng.IntN(15)) * time.Minute
	step := []time.Duration{minutes, -minutes, 0}[c.clockRng.IntN(3)]
	was := cl.ClockOffset()
	cl.SetClockOffset(step)
	c.roundStepped[cl.Name] = true
	c.logf("clock", "%s %+v from the servers' (was %+v)", cl.Name, step, was)
}

// startRound forgets what the last round touched and notes when it
// began, on the servers' clock (the test's: every agent runs on this
// machine).
func (c *chaos) startRound() {
	c.roundTouched, c.roundStepped = map[string]bool{}, map[string]bool{}
	c.roundStart = time.Now()
}

// checkClockRound fails the run when a client whose clock stepped this
// round, and that was neither cut nor restarted while the servers had no
// fault either, had a heartbeat missed: nothing but its own clock moved,
// and its heartbeats and the servers' TTLs run on timers.
func (c *chaos) checkClockRound() {
	c.t.Helper()
	if c.roundTouched[chaosTouched] {
		return
	}
	api := c.nc.anyServer().API()
	for _, name := range sortedKeys(c.roundStepped) {
		if c.roundTouched[name] {
			continue
		}
		missed, err := heartbeatsMissedSince(api, c.nc.nodeID(name), c.roundStart)
		if err != nil {
			c.logf("clock-held", "%s: not known (%v)", name, err)
			continue
		}
		if !missed.IsZero() {
			c.fatalf("the servers missed %s's heartbeat at %s in round %d, where only its clock moved (now %+v from the servers')",
				name, missed.Format(time.RFC3339Nano), c.rounds, c.nc.client(name).ClockOffset())
		}
		c.logf("clock-held", "%s: no heartbeat missed at %+v", name, c.nc.client(name).ClockOffset())
	}
}

// checkTaskTimes fails the run when a task's start, finish or event time
// as the servers recorded it is before its allocation was created or
// after now, by their clock (the test's: every agent runs on this
// machine): a client whose clock is off gives its task times on the
// servers' clock (client/server_clock.go), and the servers count
// reschedule delays from them.
func (c *chaos) checkTaskTimes(all []*nomadapi.AllocationListStub) {
	c.t.Helper()
	now := time.Now()
	for _, a := range all {
		created := time.Unix(0, a.CreateTime)
		for task, st := range a.TaskStates {
			if st == nil {
				continue
			}
			if err := taskTimesWithin(created, now, st); err != nil {
				c.fatalf("allocation %s on %s, task %s: %v", a.ID[:8], a.NodeName, task, err)
			}
		}
	}
}

// taskTimesWithin says why a task's times are not between lo and hi,
// give or take clockSkewTolerance; a zero time is no time.
func taskTimesWithin(lo, hi time.Time, st *nomadapi.TaskState) error {
	check := func(what string, at time.Time) error {
		if at.IsZero() || at.Unix() == 0 {
			return nil
		}
		if at.Before(lo.Add(-clockSkewTolerance)) || at.After(hi.Add(clockSkewTolerance)) {
			return fmt.Errorf("%s %s is off the servers' clock: outside %s to %s",
				what, at.Format(time.RFC3339Nano), lo.Format(time.RFC3339Nano), hi.Format(time.RFC3339Nano))
		}
		return nil
	}
	if err := check("StartedAt", st.StartedAt); err != nil {
		return err
	}
	if err := check("FinishedAt", st.FinishedAt); err != nil {
		return err
	}
	for _, e := range st.Events {
		if err := check(fmt.Sprintf("event %q at", e.Type), time.Unix(0, e.Time)); err != nil {
			return err
		}
	}
	return nil
}
