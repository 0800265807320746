package checks

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Modes of a check, as upstream reports them: a readiness check
// (on_update "ignore") does not judge a deployment.
const (
	ModeHealthiness = "healthiness"
	ModeReadiness   = "readiness"
)

// Statuses in a Result, upstream's words for the Nomad provider:
// "success" is passing, "failure" critical, "pending" no result yet.
// "warning" has no upstream word (its Nomad checks have no warning); it
// is a 429 answer or a script's exit code 1.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
	ResultPending = "pending"
	ResultWarning = "warning"
)

// Check is one check of one service of an allocation, resolved by the
// caller.
type Check struct {
	// Group is the allocation's name ("example.cache[0]"), Task the
	// task of a task-level service ("" for a group's), as upstream.
	Group   string
	Task    string
	Service string
	Spec    *structs.ServiceCheck
	// Address is host:port, for http and tcp checks.
	Address string
	// Exec runs a script check's command in its task.
	Exec ExecFunc
	// Restart, with a check_restart, restarts the task through its
	// restart policy; reason goes on its Restart Signaled event.
	Restart func(reason string)
	// TaskStarted is when the task last (re)started, for check_restart's
	// grace; zero while it is not running.
	TaskStarted func() time.Time
}

// ID is the check's identity: the same check of the same allocation
// always has the same ID, as upstream's MakeCheckID.
func ID(allocID string, c Check) string {
	h := md5.New()
	for _, s := range []string{allocID, c.Group, c.Task, c.Service, c.Spec.Name, c.Spec.Type, c.Spec.PortLabel, c.Spec.Path} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Result is a check's latest result in upstream's CheckQueryResult
// shape (/v1/client/allocation/:id/checks).
type Result struct {
	ID         string
	Check      string
	Group      string
	Task       string
	Service    string
	Status     string
	StatusCode int
	Output     string
	Mode       string
	// Timestamp is the result's time in Unix seconds.
	Timestamp int64
}

// Config is the input of New.
type Config struct {
	Logger  hclog.Logger
	Clock   clock.Clock
	AllocID string
	// OnChange is called, on a check's goroutine, when a check's status
	// changes; it must not block.
	OnChange func()
}

// Runner runs an allocation's checks. Its methods are safe for concurrent
// use.
type Runner struct {
	cfg Config

	mu      sync.Mutex
	checks  map[string]*checkState
	stopped bool
}

// checkState is one running check; its goroutine writes the fields below
// mu under the runner's lock.
type checkState struct {
	id    string
	check Check
	mode  string
	// ctx ends when the check is removed or the runner stopped; a run
	// in progress is cancelled with it.
	ctx    context.Context
	cancel context.CancelFunc

	status    string    // "" until a result, or initial_status
	since     time.Time // when status last changed
	code      int
	output    string
	at        time.Time
	successes int // consecutive, for success_before_passing
	failures  int // consecutive, for failures_before_critical
	unhealthy int // consecutive, for check_restart
}

// New returns a runner with no checks.
func New(cfg Config) *Runner {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	cfg.Logger = cfg.Logger.Named("checks")
	return &Runner{cfg: cfg, checks: map[string]*checkState{}}
}

// Set makes checks the running set: checks no longer listed stop, new
// ones start with their initial status, and those still listed unchanged
// keep their state and goroutine (an in-place update that keeps a check
// does not reset it). After Stop it does nothing.
func (r *Runner) Set(checks []Check) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	want := map[string]Check{}
	for _, c := range checks {
		want[ID(r.cfg.AllocID, c)] = c
	}
	for id, st := range r.checks {
		// A check whose definition or address changed starts afresh.
		if c, ok := want[id]; !ok || c.Address != st.check.Address || !reflect.DeepEqual(c.Spec, st.check.Spec) {
			st.cancel()
			delete(r.checks, id)
		}
	}
	now := r.cfg.Clock.Now()
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if _, ok := r.checks[id]; ok {
			continue
		}
		c := want[id]
		st := &checkState{id: id, check: c, mode: modeOf(c.Spec), status: c.Spec.InitialStatus, since: now}
		st.ctx, st.cancel = context.WithCancel(context.Background())
		r.checks[id] = st
		go r.run(st)
	}
}

func modeOf(c *structs.ServiceCheck) string {
	if c.OnUpdate == structs.OnUpdateIgnore {
		return ModeReadiness
	}
	return ModeHealthiness
}

// Stop stops every check for good: the allocation has stopped.
func (r *Runner) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
	for id, st := range r.checks {
		st.cancel()
		delete(r.checks, id)
	}
}

// Results returns every check's latest result by check ID.
func (r *Runner) Results() map[string]Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Result, len(r.checks))
	for id, st := range r.checks {
		res := Result{
			ID: id, Check: st.check.Spec.Name, Group: st.check.Group, Task: st.check.Task,
			Service: st.check.Service, Mode: st.mode, Status: resultStatus(st.status),
			StatusCode: st.code, Output: st.output,
		}
		if !st.at.IsZero() {
			res.Timestamp = st.at.Unix()
		}
		out[id] = res
	}
	return out
}

func resultStatus(s string) string {
	switch s {
	case structs.CheckStatusPassing:
		return ResultSuccess
	case structs.CheckStatusWarning:
		return ResultWarning
	case structs.CheckStatusCritical:
		return ResultFailure
	}
	return ResultPending
}

// Passing reports whether every check that judges a deployment passes,
// and since when they all have (the latest of their changes). A check of
// on_update "ignore" is left out, one of "ignore_warnings" passes with a
// warning too. No checks pass since the zero time.
func (r *Runner) Passing() (bool, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var since time.Time
	for _, st := range r.checks {
		switch {
		case st.check.Spec.OnUpdate == structs.OnUpdateIgnore:
			continue
		case st.status == structs.CheckStatusPassing:
		case st.status == structs.CheckStatusWarning && st.check.Spec.OnUpdate == structs.OnUpdateIgnoreWarn:
		default:
			return false, time.Time{}
		}
		if st.since.After(since) {
			since = st.since
		}
	}
	return true, since
}

// Len is the number of running checks.
func (r *Runner) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.checks)
}

// run is a check's goroutine: a run at once, then one every interval,
// until the check is removed or the runner stopped. The interval is on
// the injected clock; a run's timeout bounds real I/O (a connection, a
// process) and is on the time package.
func (r *Runner) run(st *checkState) {
	c := st.check.Spec
	var t clock.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		ctx, cancel := context.WithTimeout(st.ctx, c.Timeout)
		out := probe(ctx, st.check)
		cancel()
		r.record(st, out)
		if t == nil {
			t = r.cfg.Clock.NewTimer(c.Interval)
		} else {
			t.Reset(c.Interval)
		}
		select {
		case <-st.ctx.Done():
			return
		case <-t.C():
		}
	}
}

func probe(ctx context.Context, c Check) outcome {
	switch c.Spec.Type {
	case structs.ServiceCheckHTTP:
		return probeHTTP(ctx, c.Spec, c.Address)
	case structs.ServiceCheckTCP:
		return probeTCP(ctx, c.Address)
	case structs.ServiceCheckScript:
		return probeScript(ctx, c.Spec, c.Exec)
	}
	return outcome{status: structs.CheckStatusCritical, output: "unsupported check type " + c.Spec.Type}
}

// record applies one outcome: the status moves to passing after
// success_before_passing successes in a row, and to warning or critical
// after failures_before_critical failures in a row (at least one each);
// then check_restart counts it.
func (r *Runner) record(st *checkState, out outcome) {
	now := r.cfg.Clock.Now()
	c := st.check.Spec
	r.mu.Lock()
	if r.checks[st.id] != st {
		r.mu.Unlock()
		return // removed while it ran
	}
	st.code, st.output, st.at = out.statusCode, out.output, now
	next := st.status
	if out.status == structs.CheckStatusPassing {
		st.successes, st.failures = st.successes+1, 0
		if st.successes >= max(1, c.SuccessBeforePassing) {
			next = out.status
		}
	} else {
		st.successes, st.failures = 0, st.failures+1
		if st.failures >= max(1, c.FailuresBeforeCritical) {
			next = out.status
		}
	}
	changed := next != st.status
	if changed {
		st.status, st.since = next, now
	}
	restart := r.countUnhealthyLocked(st, now)
	r.mu.Unlock()

	if changed {
		r.cfg.Logger.Debug("check status changed", "check", c.Name, "service", st.check.Service, "status", next)
		if r.cfg.OnChange != nil {
			r.cfg.OnChange()
		}
	}
	if restart {
		reason := fmt.Sprintf("healthcheck: check %q unhealthy", c.Name)
		r.cfg.Logger.Info("restarting task: check unhealthy", "check", c.Name, "task", st.check.Task, "limit", c.CheckRestart.Limit)
		st.check.Restart(reason)
	}
}

// countUnhealthyLocked counts a result for check_restart and reports
// whether the task is to be restarted now: after limit unhealthy results
// in a row (critical, or warning without ignore_warnings), none of them
// within grace of the task's last start. The count starts again after a
// restart.
func (r *Runner) countUnhealthyLocked(st *checkState, now time.Time) bool {
	cr := st.check.Spec.CheckRestart
	if cr == nil || cr.Limit <= 0 || st.check.Restart == nil {
		return false
	}
	healthy := st.status == structs.CheckStatusPassing || st.status == "" ||
		(st.status == structs.CheckStatusWarning && cr.IgnoreWarnings)
	if healthy {
		st.unhealthy = 0
		return false
	}
	if st.check.TaskStarted != nil {
		started := st.check.TaskStarted()
		if started.IsZero() || now.Before(started.Add(cr.Grace)) {
			return false
		}
	}
	st.unhealthy++
	if st.unhealthy < cr.Limit {
		return false
	}
	st.unhealthy = 0
	return true
}
