package allocrunner

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Reasons given in restart events.
const (
	ReasonWithinPolicy  = "Restart within policy"
	ReasonUnrecoverable = "Error was unrecoverable"
	ReasonSuccess       = "Task completed successfully"
)

// RestartDecision is what a RestartTracker says to do after a task ended.
type RestartDecision struct {
	// EventType is TaskRestarting (restart after Delay), TaskNotRestarting
	// (the task has failed) or TaskTerminated (it completed and stays dead,
	// successfully).
	EventType string
	Delay     time.Duration
	Reason    string
}

// Restart reports whether the task is to be started again.
func (d RestartDecision) Restart() bool { return d.EventType == structs.TaskRestarting }

// Failed reports whether the task is dead and failed.
func (d RestartDecision) Failed() bool { return d.EventType == structs.TaskNotRestarting }

// RestartTracker applies a group's restart policy to one task: at most
// Attempts restarts per Interval, each after Delay plus jitter; past that,
// mode "fail" fails the task and mode "delay" waits for the interval to end
// and starts counting again.
//
// A batch task that exits successfully is complete. A service task has no
// "complete": a successful exit is restarted like a failure, within the same
// budget. A task's lifecycle overrides the job type, as upstream: an
// ephemeral prestart or poststart task and a poststop task complete on a
// successful exit in any job, and a sidecar is restarted after one in any
// job (it is meant to run beside the main tasks).
//
// It is not safe for concurrent use; the task runner's goroutine owns it.
type RestartTracker struct {
	policy structs.RestartPolicy
	// completesOnSuccess: a successful exit is the task's end.
	completesOnSuccess bool

	count       int
	windowStart time.Time

	// jitter returns a random duration in [0, max); replaced in tests.
	jitter func(max time.Duration) time.Duration
}

// NewRestartTracker returns a tracker for a task of a job of jobType with
// the given lifecycle (nil for a main task). A nil policy means the job
// type's default.
func NewRestartTracker(policy *structs.RestartPolicy, jobType string, lifecycle *structs.TaskLifecycleConfig) *RestartTracker {
	if policy == nil {
		policy = structs.NewRestartPolicy(jobType)
	}
	completes := jobType == structs.JobTypeBatch || jobType == structs.JobTypeSysBatch
	if lifecycle != nil && lifecycle.Hook != "" {
		completes = !lifecycle.Sidecar || lifecycle.Hook == structs.TaskLifecycleHookPoststop
	}
	return &RestartTracker{
		policy:             *policy,
		completesOnSuccess: completes,
		jitter: func(max time.Duration) time.Duration {
			if max <= 0 {
				return 0
			}
			return rand.N(max)
		},
	}
}

// OnExit decides what follows an exit with result res at now.
func (r *RestartTracker) OnExit(res *drivers.ExitResult, now time.Time) RestartDecision {
	if r.completesOnSuccess && res.Successful() {
		return RestartDecision{EventType: structs.TaskTerminated, Reason: ReasonSuccess}
	}
	return r.next(now)
}

// OnStartError decides what follows a failed start. Only errors the driver
// marked recoverable are retried; the others would fail the same way again.
func (r *RestartTracker) OnStartError(err error, now time.Time) RestartDecision {
	if !drivers.IsRecoverable(err) {
		return RestartDecision{EventType: structs.TaskNotRestarting, Reason: ReasonUnrecoverable}
	}
	return r.next(now)
}

// next counts one restart against the policy.
func (r *RestartTracker) next(now time.Time) RestartDecision {
	p := r.policy
	if r.windowStart.IsZero() || (p.Interval > 0 && !now.Before(r.windowStart.Add(p.Interval))) {
		r.windowStart = now
		r.count = 0
	}
	r.count++
	if r.count <= p.Attempts {
		return RestartDecision{
			EventType: structs.TaskRestarting,
			Delay:     p.Delay + r.jitter(p.Delay/4),
			Reason:    ReasonWithinPolicy,
		}
	}
	if p.Mode == structs.RestartPolicyModeDelay {
		delay := p.Delay
		if p.Interval > 0 {
			delay = r.windowStart.Add(p.Interval).Sub(now)
		}
		return RestartDecision{
			EventType: structs.TaskRestarting,
			Delay:     delay,
			Reason: fmt.Sprintf("Exceeded %d restart attempts in %s; mode %q waits for the interval to end",
				p.Attempts, p.Interval, p.Mode),
		}
	}
	if p.Attempts == 0 {
		return RestartDecision{EventType: structs.TaskNotRestarting, Reason: "Policy allows no restarts"}
	}
	return RestartDecision{
		EventType: structs.TaskNotRestarting,
		Reason:    fmt.Sprintf("Exceeded %d restart attempts in %s; mode is %q", p.Attempts, p.Interval, p.Mode),
	}
}
