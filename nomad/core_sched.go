package nomad

import (
	"fmt"
	"math"
	"time"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Garbage collection on the leader: upstream's core jobs eval-gc, job-gc,
// node-gc, deployment-gc and force-gc. Each collection reads a state snapshot, decides
// what is finished and old enough (gcPass, pure given the snapshot and the
// time), and removes it through raft in bounded batches (gcRequests). The
// FSM re-checks jobs and nodes when it applies the removal, because the
// leader decided on a snapshot that may be stale by then.
//
// What is never collected, whatever its age: an allocation whose client
// status is not terminal (pending, running, unknown; a stopped unknown
// allocation may still run on its disconnected client), the evaluation
// that placed it, its job, and its node; a node that is not down
// (disconnected is not down); a deployment that is active, its job's
// newest, or referenced by a live allocation.
//
// Age is measured on the times the servers stamp before raft, not on
// upstream's raft index ↔ time table: an evaluation's and an allocation's
// ModifyTime (CreateTime when unset), a node's StatusUpdatedAt (when it
// went down), a job's SubmitTime (when it was registered or stopped), a
// deployment's ModifyTime (its last status change). An
// object with no recorded time counts as old.

// gcKind names one collection, as upstream's core job IDs do.
type gcKind string

const (
	gcEvals       gcKind = structs.CoreJobEvalGC
	gcJobs        gcKind = structs.CoreJobJobGC
	gcNodes       gcKind = structs.CoreJobNodeGC
	gcDeployments gcKind = structs.CoreJobDeploymentGC
)

// gcForever is the cutoff of a forced collection: everything finished is
// old enough, even if a former leader's clock stamped it in the future.
var gcForever = time.Unix(0, math.MaxInt64)

// gcPass is one collection's view: the snapshot it reads, the time, and
// the cutoff before which a finished object is old enough to go.
type gcPass struct {
	snap   *state.StateSnapshot
	now    time.Time
	cutoff time.Time

	// held caches, per job, the replacement chains with an unknown member
	// (see chainHeld).
	held map[structs.NamespacedID]*heldChains
}

// heldChains are a job's replacement chains, keyed by their first member,
// that hold an unknown allocation.
type heldChains struct {
	rootOf map[string]string
	held   map[string]bool
}

// garbage is what a collection removes.
type garbage struct {
	allocs []string
	evals  []string
	jobs   []structs.NamespacedID
	// nodes maps a node ID to the ModifyIndex the collector saw.
	nodes       map[string]uint64
	deployments []string
}

func (g *garbage) empty() bool {
	return len(g.allocs) == 0 && len(g.evals) == 0 && len(g.jobs) == 0 && len(g.nodes) == 0 && len(g.deployments) == 0
}

// old reports whether an object last changed at t (Unix nanoseconds) is
// past the cutoff.
func (p *gcPass) old(t time.Time) bool { return !t.After(p.cutoff) }

func objectTime(modify, create int64) time.Time {
	if modify != 0 {
		return time.Unix(0, modify)
	}
	return time.Unix(0, create)
}

// find returns the garbage of one kind.
func (p *gcPass) find(kind gcKind) (*garbage, error) {
	switch kind {
	case gcEvals:
		return p.evalGarbage()
	case gcJobs:
		return p.jobGarbage()
	case gcNodes:
		return p.nodeGarbage()
	case gcDeployments:
		return p.deploymentGarbage()
	}
	return nil, fmt.Errorf("%w: unknown garbage collection %q", structs.ErrInvalidRequest, kind)
}

// evalGarbage finds terminal evaluations past eval_gc_threshold whose
// allocations can all go, and every collectable allocation of terminal
// evaluations even when the evaluation itself must stay.
func (p *gcPass) evalGarbage() (*garbage, error) {
	iter, err := p.snap.Evals(nil)
	if err != nil {
		return nil, err
	}
	g := &garbage{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		ev := raw.(*structs.Evaluation)
		collect, allocs, err := p.evalCollectable(ev)
		if err != nil {
			return nil, err
		}
		if collect {
			g.evals = append(g.evals, ev.ID)
		}
		g.allocs = append(g.allocs, allocs...)
	}
	return g, nil
}

// evalCollectable reports whether ev can go and which of its allocations
// can. A batch job that is not both stopped and dead keeps the
// allocations of its current version (and so their evaluation): were they
// removed, the scheduler would see the work as never done and run it
// again. Those of older versions may go. Dead batch jobs are the job
// collector's, with job_gc_threshold.
func (p *gcPass) evalCollectable(ev *structs.Evaluation) (bool, []string, error) {
	if !ev.TerminalStatus() || !p.old(objectTime(ev.ModifyTime, ev.CreateTime)) {
		return false, nil, nil
	}
	job, err := p.snap.JobByID(nil, ev.Namespace, ev.JobID)
	if err != nil {
		return false, nil, err
	}
	allocs, err := p.snap.AllocsByEval(nil, ev.ID)
	if err != nil {
		return false, nil, err
	}
	keepCurrent := ev.Type == structs.JobTypeBatch && job != nil &&
		!(job.Stop && job.Status == structs.JobStatusDead)
	collect := true
	var ids []string
	for _, a := range allocs {
		ok, err := p.allocCollectable(a, job)
		if err != nil {
			return false, nil, err
		}
		if ok && keepCurrent && a.CreateIndex >= job.JobModifyIndex {
			ok = false
		}
		if ok {
			ids = append(ids, a.ID)
		} else {
			collect = false
		}
	}
	return collect, ids, nil
}

// allocCollectable reports whether an allocation is finished for good and
// old enough. Only a terminal client status counts: unknown is never
// terminal, and a server-side stop is not enough while the client may
// still run the tasks. A failed allocation that its job will still
// reschedule stays, since its replacement inherits its reschedule history,
// and so does any member of a replacement chain that has an unknown
// member (chainHeld).
func (p *gcPass) allocCollectable(a *structs.Allocation, job *structs.Job) (bool, error) {
	if !a.ClientTerminalStatus() || !p.old(objectTime(a.ModifyTime, a.CreateTime)) {
		return false, nil
	}
	if held, err := p.chainHeld(a); err != nil || held {
		return false, err
	}
	if job == nil || job.Stop || job.Status == structs.JobStatusDead ||
		a.ServerTerminalStatus() || a.ClientStatus != structs.AllocClientStatusFailed {
		return true, nil
	}
	tg := job.LookupTaskGroup(a.TaskGroup)
	if tg == nil {
		return true, nil
	}
	return !p.awaitsReschedule(a, tg.ReschedulePolicy), nil
}

// chainHeld reports whether a's replacement chain, the allocations of its
// job linked by PreviousAllocation as the scheduler links them, has an
// unknown member. Collecting a finished member in between would split the
// chain in two, and when the unknown allocation came back the scheduler
// would count two instances where there is one.
func (p *gcPass) chainHeld(a *structs.Allocation) (bool, error) {
	id := a.JobNamespacedID()
	c, ok := p.held[id]
	if !ok {
		allocs, err := p.snap.AllocsByJob(nil, id.Namespace, id.ID, true)
		if err != nil {
			return false, err
		}
		c = chainsWithUnknown(allocs)
		if p.held == nil {
			p.held = map[structs.NamespacedID]*heldChains{}
		}
		p.held[id] = c
	}
	return c.held[c.rootOf[a.ID]], nil
}

func chainsWithUnknown(allocs []*structs.Allocation) *heldChains {
	byID := make(map[string]*structs.Allocation, len(allocs))
	for _, a := range allocs {
		byID[a.ID] = a
	}
	c := &heldChains{rootOf: map[string]string{}, held: map[string]bool{}}
	for _, a := range allocs {
		root, seen := a, map[string]bool{a.ID: true}
		for prev := byID[root.PreviousAllocation]; prev != nil && !seen[prev.ID]; prev = byID[prev.PreviousAllocation] {
			seen[prev.ID] = true
			root = prev
		}
		c.rootOf[a.ID] = root.ID
		if a.ClientStatus == structs.AllocClientStatusUnknown {
			c.held[root.ID] = true
		}
	}
	return c
}

// awaitsReschedule reports whether a failed allocation may still be
// replaced under policy, as upstream judges it: not when the policy allows
// no attempts or the replacement exists; always with unlimited attempts;
// otherwise while its last reschedule is within the policy's interval (or
// it has none yet).
func (p *gcPass) awaitsReschedule(a *structs.Allocation, policy *structs.ReschedulePolicy) bool {
	if policy == nil || (!policy.Unlimited && policy.Attempts == 0) || a.NextAllocation != "" {
		return false
	}
	if policy.Unlimited {
		return true
	}
	if a.RescheduleTracker == nil || len(a.RescheduleTracker.Events) == 0 {
		return true
	}
	last := a.RescheduleTracker.Events[len(a.RescheduleTracker.Events)-1]
	return p.now.Sub(time.Unix(0, last.RescheduleTime)) <= policy.Interval
}

// jobGarbage finds dead jobs past job_gc_threshold, with their evaluations
// and allocations. A job qualifies when it is dead and finishesOnItsOwn (a
// dead service job that was not stopped stays, as upstream),
// and only when every one of its evaluations is terminal and every one of
// its allocations collectable, all past the same threshold: a job goes
// whole or not at all.
func (p *gcPass) jobGarbage() (*garbage, error) {
	iter, err := p.snap.Jobs(nil)
	if err != nil {
		return nil, err
	}
	g := &garbage{}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		job := raw.(*structs.Job)
		if job.Status != structs.JobStatusDead || !finishesOnItsOwn(job) || !p.old(time.Unix(0, job.SubmitTime)) {
			continue
		}
		evals, allocs, ok, err := p.jobObjects(job)
		if err != nil {
			return nil, err
		}
		if ok {
			g.jobs = append(g.jobs, job.NamespacedID())
			g.evals = append(g.evals, evals...)
			g.allocs = append(g.allocs, allocs...)
		}
	}
	return g, nil
}

// finishesOnItsOwn reports whether a dead job is done for good: stopped,
// a batch job, or a child of a periodic or parameterized job (batch or
// sysbatch work launched once, like a batch job).
func finishesOnItsOwn(job *structs.Job) bool {
	switch {
	case job.Stop, job.Type == structs.JobTypeBatch:
		return true
	case job.ParentID != "" && job.Type == structs.JobTypeSysBatch:
		return true
	}
	return false
}

// jobObjects returns the IDs of a job's evaluations and allocations (of
// any incarnation), and whether all of them can go.
func (p *gcPass) jobObjects(job *structs.Job) (evals, allocs []string, ok bool, err error) {
	evs, err := p.snap.EvalsByJob(nil, job.Namespace, job.ID)
	if err != nil {
		return nil, nil, false, err
	}
	for _, ev := range evs {
		if !ev.TerminalStatus() || !p.old(objectTime(ev.ModifyTime, ev.CreateTime)) {
			return nil, nil, false, nil
		}
		evals = append(evals, ev.ID)
	}
	as, err := p.snap.AllocsByJob(nil, job.Namespace, job.ID, true)
	if err != nil {
		return nil, nil, false, err
	}
	for _, a := range as {
		collect, err := p.allocCollectable(a, job)
		if err != nil || !collect {
			return nil, nil, false, err
		}
		allocs = append(allocs, a.ID)
	}
	return evals, allocs, true, nil
}

// nodeGarbage finds nodes down past node_gc_threshold (counted from when
// they went down) with no allocation whose client status is not terminal.
// Their finished allocations stay for the evaluation collector.
func (p *gcPass) nodeGarbage() (*garbage, error) {
	iter, err := p.snap.Nodes(nil)
	if err != nil {
		return nil, err
	}
	g := &garbage{nodes: map[string]uint64{}}
NODES:
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		node := raw.(*structs.Node)
		if !node.TerminalStatus() || !p.old(time.Unix(node.StatusUpdatedAt, 0)) {
			continue
		}
		allocs, err := p.snap.AllocsByNode(nil, node.ID)
		if err != nil {
			return nil, err
		}
		for _, a := range allocs {
			if !a.ClientTerminalStatus() {
				continue NODES
			}
		}
		g.nodes[node.ID] = node.ModifyIndex
	}
	return g, nil
}

// deploymentGarbage finds finished deployments past
// deployment_gc_threshold, counted from their last status change, that
// nothing needs any more (state.DeploymentKept): each job keeps its newest,
// so the table holds at most one finished deployment per job beyond the
// active ones; a purged job takes all of its own with it.
func (p *gcPass) deploymentGarbage() (*garbage, error) {
	all, err := p.snap.Deployments(nil, state.AllNamespaces, "")
	if err != nil {
		return nil, err
	}
	g := &garbage{}
	for _, d := range all {
		if d.Active() || !p.old(objectTime(d.ModifyTime, d.CreateTime)) {
			continue
		}
		kept, err := p.snap.DeploymentKept(d)
		if err != nil {
			return nil, err
		}
		if !kept {
			g.deployments = append(g.deployments, d.ID)
		}
	}
	return g, nil
}

// gcRequest is one raft entry of a collection.
type gcRequest struct {
	typ structs.MessageType
	msg any
}

// gcRequests splits g into raft entries of at most batchSize IDs each.
// Allocations go first, then evaluations, then jobs and nodes: a leader
// that dies midway leaves an evaluation with fewer allocations, or a job
// with fewer evaluations, for the next pass to finish, never an
// allocation whose evaluation is gone (no evaluation pass would find it)
// nor a job removed before its objects (the FSM would refuse it anyway).
func gcRequests(g *garbage, batchSize int) []gcRequest {
	batchSize = max(batchSize, 1)
	var out []gcRequest
	ids := append(append([]string(nil), g.allocs...), g.evals...)
	for start := 0; start < len(ids); start += batchSize {
		end := min(start+batchSize, len(ids))
		split := min(max(len(g.allocs), start), end)
		out = append(out, gcRequest{structs.EvalDeleteRequestType, &structs.EvalDeleteRequest{
			Allocs: ids[start:split], Evals: ids[split:end],
		}})
	}
	for start := 0; start < len(g.jobs); start += batchSize {
		end := min(start+batchSize, len(g.jobs))
		out = append(out, gcRequest{structs.JobBatchDeregisterRequestType, &structs.JobBatchDeregisterRequest{
			Jobs: g.jobs[start:end],
		}})
	}
	batch := map[string]uint64{}
	for id, index := range g.nodes {
		batch[id] = index
		if len(batch) == batchSize {
			out = append(out, gcRequest{structs.NodeBatchDeregisterRequestType, &structs.NodeBatchDeregisterRequest{Nodes: batch}})
			batch = map[string]uint64{}
		}
	}
	if len(batch) > 0 {
		out = append(out, gcRequest{structs.NodeBatchDeregisterRequestType, &structs.NodeBatchDeregisterRequest{Nodes: batch}})
	}
	for start := 0; start < len(g.deployments); start += batchSize {
		end := min(start+batchSize, len(g.deployments))
		out = append(out, gcRequest{structs.DeploymentDeleteRequestType, &structs.DeploymentDeleteRequest{
			Deployments: g.deployments[start:end],
		}})
	}
	return out
}

// gcThreshold returns the configured threshold of a collection.
func (s *Server) gcThreshold(kind gcKind) time.Duration {
	switch kind {
	case gcEvals:
		return s.config.EvalGCThreshold
	case gcJobs:
		return s.config.JobGCThreshold
	case gcNodes:
		return s.config.NodeGCThreshold
	case gcDeployments:
		return s.config.DeploymentGCThreshold
	}
	return 0
}

// collectGarbage runs one collection on the current state. force ignores
// the threshold. It must run on the leader: the removals go through raft.
func (s *Server) collectGarbage(kind gcKind, force bool) error {
	snap, err := s.State().Snapshot()
	if err != nil {
		return err
	}
	now := s.clock.Now()
	p := &gcPass{snap: snap, now: now, cutoff: now.Add(-s.gcThreshold(kind))}
	if force {
		p.cutoff = gcForever
	}
	g, err := p.find(kind)
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	if g.empty() {
		return nil
	}
	s.logger.Debug("garbage collection found eligible objects", "kind", kind,
		"evals", len(g.evals), "allocs", len(g.allocs), "jobs", len(g.jobs), "nodes", len(g.nodes))
	for _, req := range gcRequests(g, structs.MaxUUIDsPerWriteRequest) {
		if _, _, err := s.raftApply(req.typ, req.msg); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
	}
	return nil
}

// forceGC runs every collection now, ignoring the thresholds, as upstream's
// force-gc: jobs first (taking their evaluations and allocations), then
// evaluations, then nodes, whose allocations the others may have cleared,
// then deployments, whose allocations are gone or finished by then.
func (s *Server) forceGC() error {
	for _, kind := range []gcKind{gcJobs, gcEvals, gcNodes, gcDeployments} {
		if err := s.collectGarbage(kind, true); err != nil {
			return err
		}
	}
	return nil
}

// gcInterval returns the configured interval of a collection.
func (s *Server) gcInterval(kind gcKind) time.Duration {
	switch kind {
	case gcEvals:
		return s.config.EvalGCInterval
	case gcJobs:
		return s.config.JobGCInterval
	case gcNodes:
		return s.config.NodeGCInterval
	case gcDeployments:
		return s.config.DeploymentGCInterval
	}
	return 0
}

// runCoreGC runs the periodic collections on the leader, each kind on its
// own interval (EvalGCInterval, JobGCInterval, NodeGCInterval,
// DeploymentGCInterval; zero turns one off), until stopCh closes. It is one
// of the leaderDuties.
func (s *Server) runCoreGC(stopCh <-chan struct{}) { s.armCoreGC().run(stopCh) }

// gcKinds are the periodic collections, in the order of gcSchedule's
// arrays.
var gcKinds = [4]gcKind{gcEvals, gcJobs, gcNodes, gcDeployments}

// gcSchedule holds the timers of the periodic collections. Timers come
// from the server's clock, so tests drive the schedule with a fake one;
// arming is apart from running so a test knows the timers are set before
// it moves the clock.
type gcSchedule struct {
	srv   *Server
	due   [len(gcKinds)]<-chan struct{}
	stops [len(gcKinds)]func()
}

// armCoreGC sets every collection's first timer.
func (s *Server) armCoreGC() *gcSchedule {
	g := &gcSchedule{srv: s}
	for i := range gcKinds {
		g.arm(i)
	}
	return g
}

func (g *gcSchedule) arm(i int) {
	g.due[i], g.stops[i] = clockExpiry(g.srv.clock, g.srv.gcInterval(gcKinds[i]))
}

// run waits for the timers until stopCh closes. A failed collection is
// logged and tried again on its next interval.
func (g *gcSchedule) run(stopCh <-chan struct{}) {
	defer func() {
		for _, stop := range g.stops {
			stop()
		}
	}()
	for {
		select {
		case <-stopCh:
			return
		case <-g.due[0]:
			g.fire(0)
		case <-g.due[1]:
			g.fire(1)
		case <-g.due[2]:
			g.fire(2)
		case <-g.due[3]:
			g.fire(3)
		}
	}
}

func (g *gcSchedule) fire(i int) {
	if err := g.srv.collectGarbage(gcKinds[i], false); err != nil {
		g.srv.logger.Error("garbage collection failed", "kind", gcKinds[i], "error", err)
	}
	g.arm(i)
}
