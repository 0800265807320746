package api_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
)

var since = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// unknownAlloc is an allocation the servers marked unknown at since, in a
// group with a one-hour window and the given policy and replace flag.
func unknownAlloc(policy *api.ReschedulePolicy, replace bool) *api.Allocation {
	job := &api.Job{ID: new("web"), Type: new(api.JobTypeService), TaskGroups: []*api.TaskGroup{{
		Name:             new("web"),
		Disconnect:       &api.DisconnectStrategy{LostAfter: new(time.Hour), Replace: new(replace)},
		ReschedulePolicy: policy,
	}}}
	return &api.Allocation{
		ID: "a1", TaskGroup: "web", Job: job, DesiredStatus: api.AllocDesiredStatusRun,
		ClientStatus: api.AllocClientStatusUnknown,
		AllocStates: []*api.AllocState{
			{Field: api.AllocStateFieldClientStatus, Value: api.AllocClientStatusRunning, Time: since.Add(-time.Hour)},
			{Field: api.AllocStateFieldClientStatus, Value: api.AllocClientStatusUnknown, Time: since},
		},
	}
}

// When an unknown allocation is replaced is what operators read from
// `alloc status` as its reschedule eligibility; it must be what the
// scheduler does: the reschedule policy's delay counted from the moment it
// became unknown, or the end of the window when the group does not replace
// or its attempts are used up, or never.
func TestAllocation_NextReplacement(t *testing.T) {
	exp := api.DefaultReschedulePolicy(api.JobTypeService) // 30s exponential, max 1h, unlimited
	limited := &api.ReschedulePolicy{Attempts: new(1), Interval: new(time.Hour), Delay: new(10 * time.Second),
		DelayFunction: new(api.DelayFunctionConstant), MaxDelay: new(time.Duration(0)), Unlimited: new(false)}
	never := &api.ReschedulePolicy{Attempts: new(0), Interval: new(time.Duration(0)), Delay: new(time.Second),
		DelayFunction: new(api.DelayFunctionConstant), MaxDelay: new(time.Duration(0)), Unlimited: new(false)}
	tracker := func(delays ...time.Duration) *api.RescheduleTracker {
		tr := &api.RescheduleTracker{}
		for i, d := range delays {
			tr.Events = append(tr.Events, &api.RescheduleEvent{RescheduleTime: since.Add(time.Duration(i-10) * time.Minute).UnixNano(), Delay: d})
		}
		return tr
	}
	cases := []struct {
		name    string
		alloc   func() *api.Allocation
		want    api.Replacement
		replace bool
	}{
		{"first delay of the policy", func() *api.Allocation { return unknownAlloc(exp, true) },
			api.Replacement{At: since.Add(30 * time.Second)}, true},
		{"exponential from the last attempt's delay", func() *api.Allocation {
			a := unknownAlloc(exp, true)
			a.RescheduleTracker = tracker(30*time.Second, time.Minute)
			return a
		}, api.Replacement{At: since.Add(2 * time.Minute)}, true},
		{"capped at max_delay", func() *api.Allocation {
			a := unknownAlloc(exp, true)
			a.RescheduleTracker = tracker(45 * time.Minute)
			return a
		}, api.Replacement{At: since.Add(time.Hour)}, true},
		{"replace = false waits for the window", func() *api.Allocation { return unknownAlloc(exp, false) },
			api.Replacement{At: since.Add(time.Hour), WhenLost: true}, true},
		{"attempts used up wait for the window", func() *api.Allocation {
			a := unknownAlloc(limited, true)
			a.RescheduleTracker = tracker(10 * time.Second)
			return a
		}, api.Replacement{At: since.Add(time.Hour), WhenLost: true}, true},
		{"attempts = 0 waits for the window", func() *api.Allocation { return unknownAlloc(never, true) },
			api.Replacement{At: since.Add(time.Hour), WhenLost: true}, true},
		{"already replaced", func() *api.Allocation {
			a := unknownAlloc(exp, true)
			a.NextAllocation = "r1"
			return a
		}, api.Replacement{}, false},
		{"stopped by an operator", func() *api.Allocation {
			a := unknownAlloc(exp, true)
			a.DesiredStatus = api.AllocDesiredStatusStop
			return a
		}, api.Replacement{}, false},
		{"no window and no replacement: waits for its node", func() *api.Allocation {
			a := unknownAlloc(exp, false)
			a.Job.TaskGroups[0].Disconnect.LostAfter = nil
			return a
		}, api.Replacement{}, false},
		{"reported again since", func() *api.Allocation {
			a := unknownAlloc(exp, true)
			a.AllocStates = append(a.AllocStates, &api.AllocState{Value: api.AllocClientStatusRunning, Time: since.Add(time.Minute)})
			return a
		}, api.Replacement{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := c.alloc().NextReplacement()
			must.Eq(t, c.replace, ok)
			must.Eq(t, c.want, got)
		})
	}
}

// The window of the legacy max_client_disconnect counts like lost_after.
func TestAllocation_LostAtLegacyField(t *testing.T) {
	a := unknownAlloc(nil, true)
	a.Job.TaskGroups[0].Disconnect = nil
	a.Job.TaskGroups[0].MaxClientDisconnect = new(10 * time.Minute)
	at, ok := a.LostAt()
	must.True(t, ok)
	must.Eq(t, since.Add(10*time.Minute), at)
}
