package allocrunner

import (
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var t0 = time.Unix(1_700_000_000, 0)

func tracker(p structs.RestartPolicy, jobType string) *RestartTracker {
	r := NewRestartTracker(&p, jobType, nil)
	r.jitter = func(time.Duration) time.Duration { return 0 }
	return r
}

var failed = &drivers.ExitResult{ExitCode: 1}

// TestRestartTracker_FailMode checks that a task is restarted Attempts times
// within the interval and then fails, and that the budget is restored once
// the interval has passed.
func TestRestartTracker_FailMode(t *testing.T) {
	r := tracker(structs.RestartPolicy{Attempts: 2, Interval: time.Minute, Delay: 5 * time.Second, Mode: structs.RestartPolicyModeFail}, structs.JobTypeService)

	d := r.OnExit(failed, t0)
	must.True(t, d.Restart())
	must.Eq(t, 5*time.Second, d.Delay)
	must.Eq(t, ReasonWithinPolicy, d.Reason)
	must.True(t, r.OnExit(failed, t0.Add(10*time.Second)).Restart())
	d = r.OnExit(failed, t0.Add(20*time.Second))
	must.True(t, d.Failed())
	must.StrContains(t, d.Reason, `"fail"`)

	// A new interval starts from the next failure after the window.
	r = tracker(structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeFail}, structs.JobTypeService)
	must.True(t, r.OnExit(failed, t0).Restart())
	must.True(t, r.OnExit(failed, t0.Add(time.Minute)).Restart())
	must.True(t, r.OnExit(failed, t0.Add(time.Minute+time.Second)).Failed())
}

// TestRestartTracker_DelayMode checks that mode delay waits for the end of
// the interval instead of failing.
func TestRestartTracker_DelayMode(t *testing.T) {
	r := tracker(structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeDelay}, structs.JobTypeService)
	must.True(t, r.OnExit(failed, t0).Restart())
	d := r.OnExit(failed, t0.Add(15*time.Second))
	must.True(t, d.Restart())
	must.Eq(t, 45*time.Second, d.Delay)
	// After the wait a fresh interval begins.
	d = r.OnExit(failed, t0.Add(time.Minute))
	must.Eq(t, ReasonWithinPolicy, d.Reason)
}

// TestRestartTracker_Success checks the job-type split: a batch task that
// exits 0 is complete; a service task that exits 0 is restarted within the
// same budget, since a service is supposed to keep running.
func TestRestartTracker_Success(t *testing.T) {
	p := structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeFail}
	ok := &drivers.ExitResult{}

	b := tracker(p, structs.JobTypeBatch)
	d := b.OnExit(ok, t0)
	must.Eq(t, structs.TaskTerminated, d.EventType)
	must.False(t, d.Restart())
	must.False(t, d.Failed())

	s := tracker(p, structs.JobTypeService)
	must.True(t, s.OnExit(ok, t0).Restart())
	must.True(t, s.OnExit(ok, t0.Add(time.Second)).Failed())

	// An exit whose status is unknown (re-attached task) is no success.
	must.True(t, tracker(p, structs.JobTypeBatch).OnExit(&drivers.ExitResult{Err: drivers.ErrExitCodeUnknown}, t0).Restart())
}

// TestRestartTracker_StartErrors checks that only recoverable start errors
// are retried, and that they count against the budget.
func TestRestartTracker_StartErrors(t *testing.T) {
	p := structs.RestartPolicy{Attempts: 1, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeFail}
	r := tracker(p, structs.JobTypeService)
	d := r.OnStartError(errors.New("no such binary"), t0)
	must.True(t, d.Failed())
	must.Eq(t, ReasonUnrecoverable, d.Reason)

	transient := drivers.NewRecoverableError(errors.New("EAGAIN"), true)
	must.True(t, r.OnStartError(transient, t0).Restart())
	must.True(t, r.OnStartError(transient, t0.Add(time.Second)).Failed())
}

// TestRestartTracker_NoAttempts checks that attempts = 0 fails at once.
func TestRestartTracker_NoAttempts(t *testing.T) {
	r := tracker(structs.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: structs.RestartPolicyModeFail}, structs.JobTypeService)
	must.True(t, r.OnExit(failed, t0).Failed())
}

// TestRestartTracker_Jitter checks that restart delays are spread by up to a
// quarter, so that tasks failing together do not restart together.
func TestRestartTracker_Jitter(t *testing.T) {
	p := structs.RestartPolicy{Attempts: 100, Interval: time.Hour, Delay: 4 * time.Second, Mode: structs.RestartPolicyModeFail}
	r := NewRestartTracker(&p, structs.JobTypeService, nil)
	seen := map[time.Duration]bool{}
	for i := range 50 {
		d := r.OnExit(failed, t0.Add(time.Duration(i)*time.Second))
		must.True(t, d.Delay >= 4*time.Second && d.Delay < 5*time.Second, must.Sprintf("delay %s", d.Delay))
		seen[d.Delay] = true
	}
	must.Greater(t, 1, len(seen))
}

// TestClientStatus checks the derivation of an allocation's status from its
// tasks, the rule the servers' scheduling decisions rest on.
func TestClientStatus(t *testing.T) {
	st := func(state string, failed bool) *structs.TaskState {
		return &structs.TaskState{State: state, Failed: failed}
	}
	cases := []struct {
		name  string
		tasks map[string]*structs.TaskState
		want  string
	}{
		{"none", map[string]*structs.TaskState{}, structs.AllocClientStatusPending},
		{"pending", map[string]*structs.TaskState{"a": st("pending", false)}, structs.AllocClientStatusPending},
		{"one not yet running", map[string]*structs.TaskState{"a": st("running", false), "b": st("pending", false)}, structs.AllocClientStatusPending},
		{"running", map[string]*structs.TaskState{"a": st("running", false), "b": st("running", false)}, structs.AllocClientStatusRunning},
		{"one done one running", map[string]*structs.TaskState{"a": st("dead", false), "b": st("running", false)}, structs.AllocClientStatusRunning},
		{"complete", map[string]*structs.TaskState{"a": st("dead", false), "b": st("dead", false)}, structs.AllocClientStatusComplete},
		{"failed wins", map[string]*structs.TaskState{"a": st("dead", true), "b": st("running", false)}, structs.AllocClientStatusFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, desc := ClientStatus(tc.tasks)
			must.Eq(t, tc.want, got)
			must.NotEq(t, "", desc)
		})
	}
}
