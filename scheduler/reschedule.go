package scheduler

import (
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

const (
	// rescheduleWindow lets an allocation whose reschedule time is this
	// close be replaced now rather than through a follow-up evaluation
	// that would fire a moment later.
	rescheduleWindow = time.Second

	// followupBatchWindow groups allocations whose follow-up times fall
	// this close together into one evaluation (see
	// docs/concepts/disconnected-clients.md, "Disconnecting allocations").
	followupBatchWindow = 5 * time.Second

	// maxUnlimitedRescheduleEvents bounds the tracker of a group with
	// unlimited reschedules: only the recent delays matter.
	maxUnlimitedRescheduleEvents = 5
)

// lastEventTime is when the allocation last changed on its client: the
// latest task finish, or its modify time when no task has finished.
func lastEventTime(a *structs.Allocation) time.Time {
	var last time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.After(last) {
			last = ts.FinishedAt
		}
	}
	if last.IsZero() && a.ModifyTime != 0 {
		last = time.Unix(0, a.ModifyTime)
	}
	return last
}

// nextRescheduleTime is when the allocation may be replaced, counting its
// group's delay from since. ok is false when its own job version's policy
// forbids another attempt (disabled, or attempts used up in the interval;
// attempts = 0 means never, see docs/concepts/disconnected-clients.md,
// "Replacement while unknown").
func nextRescheduleTime(a *structs.Allocation, since time.Time) (time.Time, bool) {
	policy := a.LookupTaskGroup().ReschedulePolicy
	if !policy.Enabled() || since.IsZero() {
		return time.Time{}, false
	}
	if !policy.Unlimited {
		attempts := 0
		if a.RescheduleTracker != nil {
			floor := since.Add(-policy.Interval).UnixNano()
			for _, e := range a.RescheduleTracker.Events {
				if e.RescheduleTime >= floor {
					attempts++
				}
			}
		}
		if attempts >= policy.Attempts {
			return time.Time{}, false
		}
	}
	return since.Add(rescheduleDelay(policy, a.RescheduleTracker)), true
}

// rescheduleDelay is the delay before the next attempt: constant, or
// growing from the previous attempts' delays, capped at MaxDelay.
func rescheduleDelay(policy *structs.ReschedulePolicy, tracker *structs.RescheduleTracker) time.Duration {
	var events []*structs.RescheduleEvent
	if tracker != nil {
		events = tracker.Events
	}
	d := policy.Delay
	switch n := len(events); {
	case policy.DelayFunction == structs.DelayFunctionExponential && n > 0:
		d = events[n-1].Delay * 2
	case policy.DelayFunction == structs.DelayFunctionFibonacci && n > 1:
		d = events[n-1].Delay + events[n-2].Delay
	}
	if d < policy.Delay {
		d = policy.Delay
	}
	if policy.MaxDelay > 0 && d > policy.MaxDelay {
		d = policy.MaxDelay
	}
	return d
}

// extendRescheduleTracker returns prev's tracker with one more attempt,
// keeping only the events the policy still needs.
func extendRescheduleTracker(prev *structs.Allocation, now time.Time, delay time.Duration) *structs.RescheduleTracker {
	var events []*structs.RescheduleEvent
	policy := prev.LookupTaskGroup().ReschedulePolicy
	if prev.RescheduleTracker != nil {
		for _, e := range prev.RescheduleTracker.Events {
			if policy != nil && !policy.Unlimited && e.RescheduleTime < now.Add(-policy.Interval).UnixNano() {
				continue
			}
			c := *e
			events = append(events, &c)
		}
	}
	events = append(events, &structs.RescheduleEvent{
		RescheduleTime: now.UnixNano(),
		PrevAllocID:    prev.ID,
		PrevNodeID:     prev.NodeID,
		Delay:          delay,
	})
	if policy == nil || policy.Unlimited {
		if over := len(events) - maxUnlimitedRescheduleEvents; over > 0 {
			events = events[over:]
		}
	}
	return &structs.RescheduleTracker{Events: events}
}
