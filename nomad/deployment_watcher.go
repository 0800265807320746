package nomad

import (
	"container/heap"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// deploymentRetry is how soon a failed watcher pass is retried.
const deploymentRetry = 5 * time.Second

// deploymentWatcher watches running deployments and carries out what
// decideDeployment says: promote, fail (and roll back), succeed (and mark
// the version stable), or ask the scheduler to go on with the rollout. It
// wakes on any deployment change (the state store counts health into the
// deployment) and at the nearest progress deadline.
func (s *Server) deploymentWatcher() watchLoop {
	w := newDeploymentWatch(s.State, s.clock, s.applyDeploymentStep)
	return watchLoop{
		state: s.State, clock: s.clock, logger: s.logger.Named("deployment_watcher"),
		failed: "deployment watcher pass failed", retry: deploymentRetry,
		pass: w.pass,
	}
}

// deploymentWatch is the deployment watcher's memory between passes. A
// pass decides only the deployments written since the last one and those
// whose progress deadline came: a decision reads nothing but the
// deployment, its job and the clock (canary health is counted into the
// deployment, a new job version makes a new deployment), so one that was
// not written and has no deadline due would be decided the same way as
// last time, and acting on it again would only repeat an evaluation.
// Walking every running deployment on each write made a registration's
// cost grow with the deployments stored.
type deploymentWatch struct {
	state func() *state.StateStore
	clock Clock
	apply func(d *structs.Deployment, job *structs.Job, step deploymentStep, now time.Time) error

	// store is the store of the last pass: a restore replaces it, and
	// then every deployment is decided again, as by a new leader.
	store *state.StateStore
	// seen is the highest ModifyIndex decided so far.
	seen uint64
	// lastHealthy is the healthy count each deployment was last acted
	// on at; a new leader starts empty and sends one evaluation per
	// running deployment, which is harmless.
	lastHealthy map[string]int
	// recheck is when each running deployment must be decided again
	// without a write (its nearest progress deadline); rechecks orders
	// them, soonest first, so a pass finds those due without walking
	// them all. An entry of rechecks whose time is no longer recheck's
	// for its deployment is stale and skipped.
	recheck  map[string]time.Time
	rechecks recheckQueue
}

// recheckAt is one deadline of deploymentWatch.rechecks.
type recheckAt struct {
	at time.Time
	id string
}

// recheckQueue is a min-heap of rechecks (container/heap).
type recheckQueue []recheckAt

func (q recheckQueue) Len() int           { return len(q) }
func (q recheckQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q recheckQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *recheckQueue) Push(x any)        { *q = append(*q, x.(recheckAt)) }
func (q *recheckQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// current reports whether r is still its deployment's recheck.
func (w *deploymentWatch) current(r recheckAt) bool {
	at, ok := w.recheck[r.id]
	return ok && at.Equal(r.at)
}

// setRecheck records when the deployment id must be decided again (zero:
// never).
func (w *deploymentWatch) setRecheck(id string, at time.Time) {
	if at.IsZero() {
		delete(w.recheck, id)
		return
	}
	if prev, ok := w.recheck[id]; ok && prev.Equal(at) {
		return
	}
	w.recheck[id] = at
	heap.Push(&w.rechecks, recheckAt{at: at, id: id})
	// Stale entries are dropped as they reach the top; compact when they
	// outnumber the live ones, so the heap stays within twice the
	// deployments that have a deadline.
	if len(w.rechecks) > 2*len(w.recheck)+64 {
		live := w.rechecks[:0]
		for _, r := range w.rechecks {
			if w.current(r) {
				live = append(live, r)
			}
		}
		w.rechecks = live
		heap.Init(&w.rechecks)
	}
}

func newDeploymentWatch(st func() *state.StateStore, c Clock, apply func(*structs.Deployment, *structs.Job, deploymentStep, time.Time) error) *deploymentWatch {
	return &deploymentWatch{state: st, clock: c, apply: apply, lastHealthy: map[string]int{}, recheck: map[string]time.Time{}}
}

// pass decides and applies the next step of every running deployment
// written since the last pass or whose recheck is due; it returns how long
// until the nearest recheck (zero: none). A failed pass leaves seen where
// it was, so the next one decides the same deployments again (what was
// applied changed the deployment or lastHealthy, so nothing is done twice).
func (w *deploymentWatch) pass(ws memdb.WatchSet) (time.Duration, error) {
	st := w.state()
	if st != w.store {
		w.store, w.seen = st, 0
		clear(w.lastHealthy)
		clear(w.recheck)
		w.rechecks = w.rechecks[:0]
	}
	// One snapshot, so what changed and what is due are read at the same
	// index; its watch channels still fire on later writes.
	snap, err := st.Snapshot()
	if err != nil {
		return 0, err
	}
	read := &snap.StateStore
	changed, err := read.DeploymentsModifiedSince(ws, w.seen+1)
	if err != nil {
		return 0, err
	}
	now := w.clock.Now()
	due := changed
	written := make(map[string]bool, len(changed))
	for _, d := range changed {
		written[d.ID] = true
	}
	// The rechecks due leave the heap; each decision below sets the
	// deployment's next one. A pass that fails puts back those it took
	// and did not decide.
	var taken []recheckAt
	for len(w.rechecks) > 0 && !now.Before(w.rechecks[0].at) {
		r := heap.Pop(&w.rechecks).(recheckAt)
		if !w.current(r) {
			continue
		}
		delete(w.recheck, r.id)
		if written[r.id] {
			continue
		}
		d, err := read.DeploymentByID(nil, r.id)
		if err != nil {
			w.putBack(append(taken, r))
			return 0, err
		}
		if d == nil {
			delete(w.lastHealthy, r.id)
			continue
		}
		taken = append(taken, r)
		due = append(due, d)
	}
	seen := w.seen
	for _, d := range changed {
		seen = max(seen, d.ModifyIndex)
	}
	for _, d := range due {
		if d.Status != structs.DeploymentStatusRunning {
			delete(w.lastHealthy, d.ID)
			delete(w.recheck, d.ID)
			continue
		}
		in, err := deploymentInputFor(read, d, now)
		if err == nil {
			in.LastHealthy = w.lastHealthy[d.ID]
			step := decideDeployment(in)
			if err = w.apply(d, in.Job, step, now); err == nil {
				w.lastHealthy[d.ID] = healthyTotal(d)
				w.setRecheck(d.ID, step.RecheckAt)
				continue
			}
		}
		w.putBack(taken)
		return 0, err
	}
	w.seen = seen
	for len(w.rechecks) > 0 && !w.current(w.rechecks[0]) {
		heap.Pop(&w.rechecks)
	}
	if len(w.rechecks) == 0 {
		return 0, nil
	}
	return max(w.rechecks[0].at.Sub(now), time.Millisecond), nil
}

// putBack restores rechecks a failed pass took but did not decide, so the
// retry finds them due again; those decided before the failure have a
// recheck of their own by then and are left alone.
func (w *deploymentWatch) putBack(taken []recheckAt) {
	for _, r := range taken {
		if _, ok := w.recheck[r.id]; !ok {
			w.setRecheck(r.id, r.at)
		}
	}
}

func healthyTotal(d *structs.Deployment) int {
	n := 0
	for _, g := range d.TaskGroups {
		n += g.HealthyAllocs
	}
	return n
}

func deploymentInputFor(st *state.StateStore, d *structs.Deployment, now time.Time) (deploymentInput, error) {
	in := deploymentInput{Deployment: d, Now: now}
	var err error
	if in.Job, err = st.JobByID(nil, d.Namespace, d.JobID); err != nil {
		return in, err
	}
	if in.Versions, err = st.JobVersionsByID(nil, d.Namespace, d.JobID); err != nil {
		return in, err
	}
	if d.RequiresPromotion() {
		allocs, err := st.AllocsByJob(nil, d.Namespace, d.JobID, false)
		if err != nil {
			return in, err
		}
		for _, a := range allocs {
			if a.DeploymentID == d.ID && a.DeploymentStatus.IsCanary() && !a.TerminalStatus() {
				in.Canaries = append(in.Canaries, a)
			}
		}
	}
	return in, nil
}

// applyDeploymentStep commits one step in one raft entry.
func (s *Server) applyDeploymentStep(d *structs.Deployment, job *structs.Job, step deploymentStep, now time.Time) error {
	var eval *structs.Evaluation
	if step.Eval && job != nil {
		src := job
		if step.Rollback != nil {
			src = step.Rollback
		}
		eval = src.NewEval(structs.EvalTriggerDeploymentWatcher, now)
		eval.DeploymentID = d.ID
		eval.Priority = d.EvalPriority
	}
	switch {
	case step.Update != nil:
		_, _, err := s.raftApply(structs.DeploymentStatusUpdateRequestType, &structs.DeploymentStatusUpdateRequest{
			DeploymentUpdate: step.Update, Job: step.Rollback, Eval: eval, StableVersion: step.Stable,
			UpdatedAt: now.UnixNano(),
		})
		if err == nil {
			s.logger.Info("deployment finished", "deployment_id", d.ID, "status", step.Update.Status, "description", step.Update.StatusDescription)
		}
		return err
	case step.Promote:
		_, _, err := s.raftApply(structs.DeploymentPromoteRequestType, &structs.ApplyDeploymentPromoteRequest{
			DeploymentPromoteRequest: structs.DeploymentPromoteRequest{DeploymentID: d.ID, All: true},
			Eval:                     eval, UpdatedAt: now.UnixNano(),
		})
		return err
	case eval != nil:
		_, _, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{
			Evals: []*structs.Evaluation{eval}, UpdatedAt: now.UnixNano(),
		})
		return err
	}
	return nil
}
