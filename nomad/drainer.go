package nomad

import (
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// drainRetry is how long the drainer waits after a failed raft write.
const drainRetry = time.Second

// drainer is the leader's node drainer: it watches draining nodes, marks
// their allocations for migration (the scheduler stops and replaces them,
// as for `alloc stop`), stops what remains at the deadline, and ends each
// drain once nothing is left.
func (s *Server) drainer() watchLoop {
	forced := map[string]time.Time{}
	return watchLoop{
		state: s.State, clock: s.clock, logger: s.logger.Named("drainer"),
		failed: "node drain pass failed", retry: drainRetry,
		pass: func(ws memdb.WatchSet) (time.Duration, error) { return s.drainPass(ws, forced) },
	}
}

// drainPass does one round of work for every draining node and returns
// how long until the nearest deadline (zero when none is pending). forced
// holds, per node, the deadline whose passing the drainer already acted
// on; a new leader acts on it once more, which is harmless.
func (s *Server) drainPass(ws memdb.WatchSet, forced map[string]time.Time) (time.Duration, error) {
	st := s.State()
	iter, err := st.Nodes(ws)
	if err != nil {
		return 0, err
	}
	now := s.clock.Now()
	var next time.Duration
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		node := raw.(*structs.Node)
		if node.DrainStrategy == nil {
			continue
		}
		_, deadline := node.DrainStrategy.DeadlineTime()
		plan, err := planNodeDrain(ws, st, node, drainClock{now: now, forcedDone: forced[node.ID].Equal(deadline)})
		if err != nil {
			return 0, err
		}
		if err := s.applyDrainPlan(node, plan, now); err != nil {
			return 0, err
		}
		switch {
		case plan.forced:
			forced[node.ID] = deadline
		case plan.done:
			delete(forced, node.ID)
		}
		if has, at := node.DrainStrategy.DeadlineTime(); has && at.After(now) {
			if d := at.Sub(now); next == 0 || d < next {
				next = d
			}
		}
	}
	return next, nil
}

// drainPlan is what the drainer does for one node in one pass.
type drainPlan struct {
	// migrate are the allocations to mark for migration now.
	migrate []*structs.Allocation
	// done ends the drain: nothing it covers is left on the node.
	done bool
	// forced says migrate holds everything left at the deadline, marked
	// before or not: the scheduler then stops them without waiting for
	// their replacements' placement.
	forced bool
}

// drainClock is the time of a pass and whether the node's passed deadline
// was already acted on.
type drainClock struct {
	now        time.Time
	forcedDone bool
}

// planNodeDrain decides which of node's allocations move now. Service
// allocations move the group's migrate max_parallel (1 by default) at a time; batch ones are
// left to finish until the deadline; system ones go last, once nothing
// else remains, unless the drain ignores them. Unknown allocations (their
// node disconnected) are not serving, so they all move at once. A
// disconnected node's drain completes only when it returns or goes down:
// until then its client may still run what the servers stopped.
func planNodeDrain(ws memdb.WatchSet, st *state.StateStore, node *structs.Node, clk drainClock) (drainPlan, error) {
	if node.Status == structs.NodeStatusDown {
		return drainPlan{done: true}, nil
	}
	allocs, err := st.AllocsByNode(ws, node.ID)
	if err != nil {
		return drainPlan{}, err
	}
	d := node.DrainStrategy
	has, deadline := d.DeadlineTime()
	forced := has && !clk.now.Before(deadline)
	var left, system []*structs.Allocation
	for _, a := range allocs {
		if a.TerminalStatus() {
			continue
		}
		switch drainJobType(a) {
		case structs.JobTypeSystem, structs.JobTypeSysBatch:
			if !d.IgnoreSystemJobs {
				system = append(system, a)
			}
		default:
			left = append(left, a)
		}
	}
	if len(left) == 0 && len(system) == 0 {
		return drainPlan{done: node.Status != structs.NodeStatusDisconnected}, nil
	}
	var plan drainPlan
	switch {
	case forced && !clk.forcedDone:
		return drainPlan{migrate: append(left, system...), forced: true}, nil
	case forced:
		plan.migrate = unmarked(append(left, system...))
		return plan, nil
	}
	if len(left) == 0 {
		plan.migrate = unmarked(system)
		return plan, nil
	}
	budget := map[groupKey]int{}
	for _, a := range unmarked(left) {
		switch {
		case a.ClientStatus == structs.AllocClientStatusUnknown:
			plan.migrate = append(plan.migrate, a)
			continue
		case drainJobType(a) == structs.JobTypeBatch:
			continue
		}
		k := groupKey{job: a.JobNamespacedID(), group: a.TaskGroup}
		n, seen := budget[k]
		if !seen {
			inFlight, err := migrationsInFlight(ws, st, k)
			if err != nil {
				return drainPlan{}, err
			}
			// The group's migrate block says how many move at a time
			// (upstream's default 1).
			n = a.LookupTaskGroup().DrainMaxParallel() - inFlight
		}
		if n > 0 {
			plan.migrate = append(plan.migrate, a)
		}
		budget[k] = n - 1
	}
	return plan, nil
}

type groupKey struct {
	job   structs.NamespacedID
	group string
}

// migrationsInFlight counts a group's allocations that are moving: marked
// for migration but not stopped yet, or placed and not running yet.
func migrationsInFlight(ws memdb.WatchSet, st *state.StateStore, k groupKey) (int, error) {
	allocs, err := st.AllocsByJob(ws, k.job.Namespace, k.job.ID, false)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range allocs {
		if a.TaskGroup != k.group || a.TerminalStatus() {
			continue
		}
		if a.DesiredTransition.ShouldMigrate() || a.ClientStatus == structs.AllocClientStatusPending {
			n++
		}
	}
	return n, nil
}

func drainJobType(a *structs.Allocation) string {
	if a.Job == nil {
		return structs.JobTypeService
	}
	return a.Job.Type
}

func unmarked(allocs []*structs.Allocation) []*structs.Allocation {
	var out []*structs.Allocation
	for _, a := range allocs {
		if !a.DesiredTransition.ShouldMigrate() {
			out = append(out, a)
		}
	}
	return out
}

// applyDrainPlan writes a pass's decisions through raft: the migration
// marks with one node-drain evaluation per job, or the end of the drain.
func (s *Server) applyDrainPlan(node *structs.Node, plan drainPlan, now time.Time) error {
	if plan.done {
		req := &structs.NodeUpdateDrainRequest{
			NodeID: node.ID, Complete: true, UpdatedAt: now,
			NodeEvent: structs.NewNodeEvent(structs.NodeEventSubsystemDrain, structs.NodeDrainEventComplete, now),
		}
		_, _, err := s.raftApply(structs.NodeUpdateDrainRequestType, req)
		if err == nil {
			s.logger.Info("node drain complete", "node_id", node.ID)
		}
		return err
	}
	if len(plan.migrate) == 0 {
		return nil
	}
	yes := true
	req := &structs.AllocUpdateDesiredTransitionRequest{Allocs: map[string]*structs.DesiredTransition{}}
	seen := map[structs.NamespacedID]bool{}
	for _, a := range plan.migrate {
		req.Allocs[a.ID] = &structs.DesiredTransition{Migrate: &yes}
		k := a.JobNamespacedID()
		if seen[k] {
			continue
		}
		seen[k] = true
		job, err := s.State().JobByID(nil, a.Namespace, a.JobID)
		if err != nil {
			return err
		}
		if job == nil {
			job = a.Job
		}
		if job == nil {
			continue
		}
		ev := job.NewEval(structs.EvalTriggerNodeDrain, now)
		ev.NodeID = node.ID
		req.Evals = append(req.Evals, ev)
	}
	slices.SortFunc(req.Evals, func(a, b *structs.Evaluation) int { return strings.Compare(a.JobID, b.JobID) })
	_, _, err := s.raftApply(structs.AllocUpdateDesiredTransitionRequestType, req)
	return err
}
