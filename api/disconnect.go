package api

import "time"

// These helpers read an allocation the way the servers' scheduler does
// when its node is disconnected (docs/concepts/disconnected-clients.md,
// "Disconnecting allocations"), so that a CLI or a dashboard can say what
// will happen to an unknown allocation, and when, without asking the
// servers to decide it. They read the allocation's own copy of its job, as
// the scheduler does.

// UnknownSince returns when the servers marked the allocation unknown, if
// that is the newest change of its client status (AllocStates).
func (a *Allocation) UnknownSince() (time.Time, bool) {
	for i := len(a.AllocStates) - 1; i >= 0; i-- {
		s := a.AllocStates[i]
		if s == nil || s.Field != AllocStateFieldClientStatus {
			continue
		}
		return s.Time, s.Value == AllocClientStatusUnknown
	}
	return time.Time{}, false
}

// LostAt returns when an unknown allocation's disconnect window ends: then
// the servers mark it lost and replace it if its group is short. ok is
// false when it is not unknown or its group has no window.
func (a *Allocation) LostAt() (time.Time, bool) {
	since, unknown := a.UnknownSince()
	window := a.lostAfter()
	if !unknown || window <= 0 {
		return time.Time{}, false
	}
	return since.Add(window), true
}

// Replacement is when the servers replace an unknown allocation, and why.
type Replacement struct {
	At time.Time
	// WhenLost is true when the replacement waits for the disconnect window
	// to end (the group has replace = false, or its reschedule attempts are
	// used up); false when the reschedule policy's delay decides.
	WhenLost bool
}

// NextReplacement returns when the servers will replace the allocation
// while it is unknown. ok is false when they will not: it is not unknown,
// it is stopped, it has a replacement already, or it waits for its node or
// an operator with no window to end.
func (a *Allocation) NextReplacement() (Replacement, bool) {
	since, unknown := a.UnknownSince()
	if !unknown || a.ServerTerminalStatus() || a.NextAllocation != "" {
		return Replacement{}, false
	}
	if a.replaceOnDisconnect() {
		if at, ok := nextRescheduleTime(a.reschedulePolicy(), a.RescheduleTracker, since); ok {
			return Replacement{At: at}, true
		}
	}
	if at, ok := a.LostAt(); ok {
		return Replacement{At: at, WhenLost: true}, true
	}
	return Replacement{}, false
}

func (a *Allocation) group() *TaskGroup {
	if a.Job == nil {
		return nil
	}
	return a.Job.LookupTaskGroup(a.TaskGroup)
}

// lostAfter is the group's window: the disconnect block's lost_after, else
// the legacy max_client_disconnect.
func (a *Allocation) lostAfter() time.Duration {
	g := a.group()
	if g == nil {
		return 0
	}
	if d := g.Disconnect; d != nil && d.LostAfter != nil && *d.LostAfter > 0 {
		return *d.LostAfter
	}
	if g.MaxClientDisconnect != nil {
		return *g.MaxClientDisconnect
	}
	return 0
}

func (a *Allocation) replaceOnDisconnect() bool {
	g := a.group()
	if g == nil || g.Disconnect == nil || g.Disconnect.Replace == nil {
		return true
	}
	return *g.Disconnect.Replace
}

func (a *Allocation) reschedulePolicy() *ReschedulePolicy {
	if g := a.group(); g != nil {
		return g.ReschedulePolicy
	}
	return nil
}

// nextRescheduleTime is since plus the policy's next delay; ok is false
// when the policy allows no further attempt within its interval (attempts
// = 0 means never).
func nextRescheduleTime(p *ReschedulePolicy, tracker *RescheduleTracker, since time.Time) (time.Time, bool) {
	if p == nil || since.IsZero() {
		return time.Time{}, false
	}
	unlimited := deref(p.Unlimited)
	attempts, interval := deref(p.Attempts), deref(p.Interval)
	if !unlimited && (attempts <= 0 || interval <= 0) {
		return time.Time{}, false
	}
	var events []*RescheduleEvent
	if tracker != nil {
		events = tracker.Events
	}
	if !unlimited {
		floor, used := since.Add(-interval).UnixNano(), 0
		for _, e := range events {
			if e.RescheduleTime >= floor {
				used++
			}
		}
		if used >= attempts {
			return time.Time{}, false
		}
	}
	return since.Add(rescheduleDelay(p, events)), true
}

// rescheduleDelay is the policy's delay after the given attempts: constant,
// or growing from the previous attempts' delays, at least Delay and at most
// MaxDelay.
func rescheduleDelay(p *ReschedulePolicy, events []*RescheduleEvent) time.Duration {
	base, limit := deref(p.Delay), deref(p.MaxDelay)
	d := base
	switch n := len(events); {
	case deref(p.DelayFunction) == DelayFunctionExponential && n > 0:
		d = events[n-1].Delay * 2
	case deref(p.DelayFunction) == DelayFunctionFibonacci && n > 1:
		d = events[n-1].Delay + events[n-2].Delay
	}
	d = max(d, base)
	if limit > 0 {
		d = min(d, limit)
	}
	return d
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
