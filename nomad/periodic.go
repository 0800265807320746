package nomad

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// launchRequest is one child job to register with its evaluation.
type launchRequest struct {
	child   *structs.Job
	trigger string
	now     time.Time
}

// launchResult is what the registration of a child wrote.
type launchResult struct {
	EvalID string
	Index  uint64
}

// launchChild registers a child job of a periodic or parameterized parent
// and its evaluation in one raft entry, as Job.Register does for a user's
// job. It runs on the leader.
func (s *Server) launchChild(req launchRequest) (launchResult, error) {
	req.child.Canonicalize()
	args := &structs.JobRegisterRequest{
		Job:        req.child,
		SubmitTime: req.now.UnixNano(),
		Eval:       req.child.NewEval(req.trigger, req.now),
	}
	_, index, err := s.raftApply(structs.JobRegisterRequestType, args)
	if err != nil {
		return launchResult{}, err
	}
	return launchResult{EvalID: args.Eval.ID, Index: index}, nil
}

// runPeriodicDispatcher runs the leader's periodic dispatcher until stopCh
// closes.
func (s *Server) runPeriodicDispatcher(stopCh <-chan struct{}) {
	d := newPeriodicDispatcher(periodicDeps{
		state:  s.State,
		launch: s.launchChild,
		logger: s.logger.Named("periodic"),
	})
	d.run(stopCh, s.clock)
}

// periodicDeps are what the dispatcher needs from the server.
type periodicDeps struct {
	state  func() *state.StateStore
	launch func(launchRequest) (launchResult, error)
	logger hclog.Logger
}

// periodicDispatcher launches the children of periodic jobs at their cron
// instants. It keeps no state that matters across leaders: the last launch
// of each job is read back from its children's IDs (which carry the launch
// second), so a new leader re-arms every job where the old one left off.
// It is owned by one goroutine (run); tick is its whole decision.
type periodicDispatcher struct {
	deps periodicDeps
	// last is each job's latest launch this dispatcher knows of.
	last map[structs.NamespacedID]time.Time
	// restored is set after the first tick, which takes over from the
	// previous leader; jobs that become active later start afresh.
	restored bool
}

func newPeriodicDispatcher(deps periodicDeps) *periodicDispatcher {
	return &periodicDispatcher{deps: deps, last: map[structs.NamespacedID]time.Time{}}
}

// run ticks at each job's next launch and whenever the jobs change, until
// stopCh closes. A failed tick is retried soon rather than left to wait
// for a job change that may not come.
func (d *periodicDispatcher) run(stopCh <-chan struct{}, clock Clock) {
	watchLoop{
		state: d.deps.state, clock: clock, logger: d.deps.logger,
		failed: "periodic launch pass failed", retry: 5 * time.Second,
		pass: func(ws memdb.WatchSet) (time.Duration, error) {
			now := clock.Now()
			next, err := d.tick(ws, now)
			return wakeIn(next, now), err
		},
	}.run(stopCh)
}

// wakeIn is how long to wait for next; a zero next means only a job change
// wakes the dispatcher.
func wakeIn(next, now time.Time) time.Duration {
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(now), time.Nanosecond)
}

// tick launches every active periodic job due at now and returns the
// earliest next launch (zero when none). ws watches the periodic jobs
// alone (state's periodic index): while there is one, a registration of
// any other job does not wake it, and none has it walk every job (at
// 3,000 jobs that walk was 7 % of a registering leader's CPU). With no
// periodic job at all, memdb's watch is the whole index's, so any job
// change wakes it to an empty read.
func (d *periodicDispatcher) tick(ws memdb.WatchSet, now time.Time) (time.Time, error) {
	st := d.deps.state()
	iter, err := st.PeriodicJobs(ws)
	if err != nil {
		return time.Time{}, err
	}
	seen := map[structs.NamespacedID]bool{}
	var earliest time.Time
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		job := raw.(*structs.Job)
		if !job.IsPeriodicActive() {
			continue
		}
		id := job.NamespacedID()
		seen[id] = true
		next, err := d.due(st, job, now)
		if err != nil {
			d.deps.logger.Warn("periodic job skipped", "job", id, "error", err)
			continue
		}
		if !next.After(now) {
			d.launchDue(st, job, next, now)
			if next, err = job.Periodic.Next(d.last[id]); err != nil {
				continue
			}
		}
		if !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
			earliest = next
		}
	}
	for id := range d.last {
		if !seen[id] {
			delete(d.last, id) // stopped or deleted: start afresh if it returns
		}
	}
	d.restored = true
	return earliest, nil
}

// due returns the job's next launch after its last one. On the first tick
// (a new leader taking over) a job starts from its newest child, the
// previous leader's last launch, so a launch missed while no leader ran
// happens now. A job that becomes active later (registered, started again
// after a stop, enabled) starts from now: it does not run for instants
// before that.
func (d *periodicDispatcher) due(st *state.StateStore, job *structs.Job, now time.Time) (time.Time, error) {
	id := job.NamespacedID()
	last, ok := d.last[id]
	if !ok {
		last = now
		if !d.restored {
			newest, err := newestPeriodicChild(st, job)
			if err != nil {
				return time.Time{}, err
			}
			if !newest.IsZero() {
				last = newest
			}
		}
		d.last[id] = last
	}
	return job.Periodic.Next(last)
}

// launchDue launches job for the instant at (at most one launch however
// many instants were missed, as upstream) unless prohibit_overlap holds it
// back, and records the instant as handled either way.
func (d *periodicDispatcher) launchDue(st *state.StateStore, job *structs.Job, at, now time.Time) {
	id := job.NamespacedID()
	d.last[id] = now
	if now.Sub(at) > time.Second {
		// A catch-up after downtime is named for when it ran, as upstream.
		at = now
	}
	if job.Periodic.ProhibitOverlap {
		running, err := runningChildren(st, job)
		if err != nil || running {
			d.deps.logger.Debug("periodic launch skipped: a previous child is still running", "job", id, "error", err)
			return
		}
	}
	res, err := d.deps.launch(launchRequest{child: job.PeriodicChild(at), trigger: structs.EvalTriggerPeriodicJob, now: now})
	if err != nil {
		d.deps.logger.Error("periodic launch failed", "job", id, "error", err)
		return
	}
	d.deps.logger.Debug("periodic job launched", "job", id, "launch", at, "eval_id", res.EvalID)
}

// newestPeriodicChild returns the launch instant of the job's newest
// periodic child, or the zero time.
func newestPeriodicChild(st *state.StateStore, job *structs.Job) (time.Time, error) {
	var newest time.Time
	err := eachChild(st, job, structs.PeriodicLaunchSuffix, func(c *structs.Job) {
		if t, ok := structs.LaunchTimeFromChildID(job.ID, c.ID); ok && t.After(newest) {
			newest = t
		}
	})
	return newest, err
}

// runningChildren reports whether any periodic child of job is not dead.
func runningChildren(st *state.StateStore, job *structs.Job) (bool, error) {
	running := false
	err := eachChild(st, job, structs.PeriodicLaunchSuffix, func(c *structs.Job) {
		running = running || c.Status != structs.JobStatusDead
	})
	return running, err
}

// eachChild calls fn for each child of job whose ID continues with infix.
func eachChild(st *state.StateStore, job *structs.Job, infix string, fn func(*structs.Job)) error {
	iter, err := st.JobsByIDPrefix(nil, job.Namespace, job.ID+infix)
	if err != nil {
		return fmt.Errorf("listing children of %s: %w", job.ID, err)
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if c := raw.(*structs.Job); c.ParentID == job.ID {
			fn(c)
		}
	}
	return nil
}
