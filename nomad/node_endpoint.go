package nomad

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/hashicorp/go-memdb"
	metrics "github.com/hashicorp/go-metrics"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Node is the Node.* RPC endpoint: registration, heartbeats and the
// client's view of its allocations.
type Node struct {
	srv *Server
}

// Register creates or updates a node and starts its heartbeat timer.
func (n *Node) Register(args *structs.NodeRegisterRequest, reply *structs.NodeUpdateResponse) error {
	if done, err := n.srv.forward("Node.Register", args, reply); done {
		return err
	}
	reply.ServerTime = n.srv.clock.Now().UnixNano()
	node := args.Node
	if node == nil || node.ID == "" {
		return fmt.Errorf("%w: missing node ID for client registration", structs.ErrMissingField)
	}
	// A `null` driver or event would be dereferenced later by the
	// scheduler, far from this request: refuse it here.
	if nulls := structs.NullElements("Node", node); len(nulls) > 0 {
		return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, &structs.ValidationError{Problems: nulls})
	}
	if node.Datacenter == "" {
		return fmt.Errorf("%w: missing datacenter for client registration", structs.ErrMissingField)
	}
	if node.Name == "" {
		return fmt.Errorf("%w: missing node name for client registration", structs.ErrMissingField)
	}
	if node.SecretID == "" {
		return fmt.Errorf("%w: missing node secret ID for client registration", structs.ErrMissingField)
	}
	if node.Status == "" {
		node.Status = structs.NodeStatusInit
	}
	if err := checkClientNodeStatus(node.Status); err != nil {
		return err
	}
	if node.SchedulingEligibility == "" {
		node.SchedulingEligibility = structs.NodeSchedulingEligible
	}
	if node.NodePool == "" {
		node.NodePool = structs.DefaultNodePool
	}
	if node.NodePool == structs.NodePoolAll {
		return fmt.Errorf("%w: node pool %q is built in and holds every node; a node cannot join it", structs.ErrInvalidRequest, node.NodePool)
	}
	defer n.srv.heartbeats.lockNode(node.ID)()
	st := n.srv.State()
	existing, err := st.NodeByID(nil, node.ID)
	if err != nil {
		return err
	}
	// Whoever registers a node ID first owns it: re-registering, which
	// replaces the node's resources and status, takes the same secret.
	if existing != nil {
		if err := authorizeNode(existing, node.SecretID); err != nil {
			return err
		}
	} else if err := n.srv.checkIntroduction(node, args.AuthToken); err != nil {
		return err
	}
	args.AuthToken = ""
	now := n.srv.clock.Now()
	args.UpdatedAt = now.Unix()
	node.StatusUpdatedAt = now.Unix()
	if existing == nil {
		node.Events = []*structs.NodeEvent{structs.NewNodeEvent(structs.NodeEventSubsystemCluster, structs.NodeRegisterEventRegistered, now)}
	} else {
		node.Events = existing.Events
	}
	if transitionNeedsEvals(existing, node.Status) {
		if args.Evals, err = n.srv.nodeEvals(node.ID); err != nil {
			return err
		}
	}
	if node.Status == structs.NodeStatusReady && (existing == nil || existing.Status != node.Status) {
		if args.Evals, err = n.srv.systemJobEvals(node.ID, args.Evals); err != nil {
			return err
		}
	}
	_, index, err := n.srv.raftApply(structs.NodeRegisterRequestType, args)
	if err != nil {
		return err
	}
	if len(args.Evals) > 0 {
		reply.EvalIDs, reply.EvalCreateIndex = evalIDs(args.Evals), index
	}
	reply.NodeModifyIndex = index
	reply.Index = index
	return n.fillHeartbeat(node.ID, reply)
}

func (n *Node) fillHeartbeat(nodeID string, reply *structs.NodeUpdateResponse) error {
	var live int
	reply.HeartbeatTTL, live = n.srv.heartbeats.reset(nodeID)
	reply.LeaderRPCAddr = n.srv.Leader()
	reply.Servers = n.srv.clientServers()
	// The heartbeat timers already count the live nodes; walking the node
	// table on every heartbeat would cost O(nodes) per client per TTL.
	reply.NumNodes = int32(live)
	return nil
}

// transitionNeedsEvals reports whether a node moving to status needs its
// jobs re-evaluated: it became ready, or went down.
func transitionNeedsEvals(old *structs.Node, status string) bool {
	if old == nil || old.Status == status {
		return false
	}
	return status == structs.NodeStatusReady || status == structs.NodeStatusDown || status == structs.NodeStatusDisconnected ||
		old.Status == structs.NodeStatusDisconnected
}

// UpdateStatus is the client's heartbeat and status change; only the node
// itself (its secret in AuthToken) may send it.
func (n *Node) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	if done, err := n.srv.forward("Node.UpdateStatus", args, reply); done {
		return err
	}
	reply.ServerTime = n.srv.clock.Now().UnixNano()
	defer metrics.MeasureSince(keyClientUpdateStatus, time.Now())
	if args.NodeID == "" {
		return fmt.Errorf("%w: missing node ID for client status update", structs.ErrMissingField)
	}
	if err := checkClientNodeStatus(args.Status); err != nil {
		return err
	}
	// From reading the status to re-arming the timer, the node's timer
	// must not decide in between (see heartbeater.nodeLocks).
	defer n.srv.heartbeats.lockNode(args.NodeID)()
	node, err := n.srv.State().NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return fmt.Errorf("%w: %s", structs.ErrUnknownNode, args.NodeID)
	}
	if err := authorizeNode(node, args.AuthToken); err != nil {
		return err
	}
	reply.NodeModifyIndex = node.ModifyIndex
	status, err := n.srv.heartbeatStatus(node, args.Status)
	if err != nil {
		return err
	}
	args.Status = status
	if node.Status != args.Status {
		index, evals, err := n.srv.setNodeStatus(node, args.Status, args.NodeEvent)
		if err != nil {
			return err
		}
		n.logTransition(node, args.Status)
		reply.NodeModifyIndex = index
		if len(evals) > 0 {
			reply.EvalIDs, reply.EvalCreateIndex = evalIDs(evals), index
		}
	}
	reply.Index = reply.NodeModifyIndex
	if args.Status == structs.NodeStatusDown {
		n.srv.heartbeats.clear(args.NodeID)
		return nil
	}
	return n.fillHeartbeat(args.NodeID, reply)
}

// logTransition logs, once per change, a node status change its client's
// heartbeat made: a disconnected node back in contact, and one ready again
// once it has reported its allocations. (Missed heartbeats are logged by
// the heartbeater.)
func (n *Node) logTransition(old *structs.Node, to string) {
	now := n.srv.clock.Now()
	kv := []any{"node_id", old.ID, "node_name", old.Name, "from", old.Status, "to", to}
	switch {
	case old.Status == structs.NodeStatusDisconnected:
		away := now.Sub(time.Unix(old.StatusUpdatedAt, 0)).Round(time.Second)
		metrics.AddSampleWithLabels(keyDisconnectDuration, float32(away.Seconds()), []metrics.Label{
			{Name: "datacenter", Value: old.Datacenter}, {Name: "node_pool", Value: old.NodePool},
		})
		n.srv.logger.Info("node reconnected; waiting for its allocation updates", append(kv, "disconnected_for", away)...)
	case to == structs.NodeStatusReady:
		n.srv.logger.Info("node ready", kv...)
	default:
		n.srv.logger.Info("node status changed by its client", kv...)
	}
}

// heartbeatStatus decides the status a node gets when its client asks for
// requested. A client coming back from disconnected does not go straight
// to ready (see docs/concepts/disconnected-clients.md, "Reconnect"): it is
// initializing until it has pushed the true state
// of every allocation the servers hold as unknown, so that nothing is
// decided on half the facts; the heartbeat after that push makes it ready.
func (s *Server) heartbeatStatus(node *structs.Node, requested string) (string, error) {
	if requested != structs.NodeStatusReady {
		return requested, nil
	}
	switch node.Status {
	case structs.NodeStatusDisconnected:
		return structs.NodeStatusInit, nil
	case structs.NodeStatusInit:
		allocs, err := s.State().AllocsByNode(nil, node.ID)
		if err != nil {
			return "", err
		}
		for _, a := range allocs {
			if a.ClientStatus == structs.AllocClientStatusUnknown && !a.ServerTerminalStatus() {
				return structs.NodeStatusInit, nil
			}
		}
	}
	return requested, nil
}

// setNodeStatus writes a node status change through raft, with the
// node-update evaluations it needs in the same entry. Changes of many
// nodes within a short window share the entry and one evaluation per job
// (see commitNodeStatuses). It returns the entry's index and the
// evaluations it carried.
func (s *Server) setNodeStatus(node *structs.Node, status string, event *structs.NodeEvent) (uint64, []*structs.Evaluation, error) {
	if event == nil {
		event = structs.NewNodeEvent(structs.NodeEventSubsystemCluster, heartbeatEventMessage(node.Status, status), s.clock.Now())
	}
	res, err := s.nodeStatusBatch.submit(nodeStatusChange{node: node, status: status, event: event}, 1).wait()
	return res.Index, res.Evals, err
}

// heartbeatEventMessage is the node event of a status change its client's
// heartbeat made. A down node coming back gets upstream's text, which
// integrations key on.
func heartbeatEventMessage(from, to string) string {
	switch {
	case from == structs.NodeStatusDown:
		return structs.NodeEventHeartbeatReregistered
	case to == structs.NodeStatusReady:
		return structs.NodeEventNodeReady
	}
	return "Node status changed to " + to
}

// nodeStatusChange is one node's status change waiting in the batch.
type nodeStatusChange struct {
	node   *structs.Node // as read when the change was decided
	status string
	event  *structs.NodeEvent
}

// commitNodeStatuses writes a batch of node status changes as one raft
// entry. The node-update evaluations are one per job with allocations on
// any node of the batch whose transition needs them, and one per system
// job when a node became ready: the schedulers look at every node of the
// job, not at the evaluation's NodeID, so one evaluation that sees every
// change of the batch (it is in the same entry) serves them all; none at
// all for a job whose evaluation is still waiting in the broker
// (coalesceWaiting).
func (s *Server) commitNodeStatuses(changes []nodeStatusChange) (batchResult, error) {
	now := s.clock.Now()
	req := &structs.NodeBatchUpdateStatusRequest{UpdatedAt: now.Unix()}
	var evalNodes []string
	readyNode := ""
	for _, c := range changes {
		req.Updates = append(req.Updates, &structs.NodeStatusUpdate{NodeID: c.node.ID, Status: c.status, NodeEvent: c.event})
		if transitionNeedsEvals(c.node, c.status) {
			evalNodes = append(evalNodes, c.node.ID)
		}
		if c.status == structs.NodeStatusReady && readyNode == "" {
			readyNode = c.node.ID
		}
	}
	evals, err := s.nodeEvals(evalNodes...)
	if err != nil {
		return batchResult{}, err
	}
	if readyNode != "" {
		if evals, err = s.systemJobEvals(readyNode, evals); err != nil {
			return batchResult{}, err
		}
	}
	var relied []reliedEval
	req.Evals, relied = s.coalesceWaiting(evals)
	// The site outages the batch completes are declared in its own entry
	// (see "Site outages"); the detector decides nothing else until the
	// entry is applied.
	s.sites.mu.Lock()
	defer s.sites.mu.Unlock()
	if req.SiteOutages, err = s.sites.batchDeclarationsLocked(req, now); err != nil {
		return batchResult{}, err
	}
	_, index, err := s.raftApply(structs.NodeBatchUpdateStatusRequestType, req)
	if err != nil {
		return batchResult{}, err
	}
	if req.SiteOutages != nil {
		s.logDeclared(req.SiteOutages.Declare)
	}
	return batchResult{Index: index, Evals: append(req.Evals, s.followUpRelied(relied)...)}, nil
}

// nodeEvals builds a node-update evaluation for every job with allocations
// on any of the nodes, one per job; the FSM stamps them with the index of
// the nodes' change. An evaluation's NodeID is the first of the nodes
// that has the job.
func (s *Server) nodeEvals(nodeIDs ...string) ([]*structs.Evaluation, error) {
	st := s.State()
	now := s.clock.Now()
	seen := map[structs.NamespacedID]bool{}
	var evals []*structs.Evaluation
	for _, nodeID := range nodeIDs {
		allocs, err := st.AllocsByNode(nil, nodeID)
		if err != nil {
			return nil, err
		}
		for _, a := range allocs {
			key := a.JobNamespacedID()
			if seen[key] {
				continue
			}
			seen[key] = true
			job, err := st.JobByID(nil, a.Namespace, a.JobID)
			if err != nil {
				return nil, err
			}
			if job == nil {
				// The job was purged: the allocation's own copy still says how
				// to schedule its cleanup.
				job = a.Job
			}
			if job == nil {
				continue
			}
			ev := job.NewEval(structs.EvalTriggerNodeUpdate, now)
			ev.NodeID = nodeID
			evals = append(evals, ev)
		}
	}
	return evals, nil
}

func evalIDs(evals []*structs.Evaluation) []string {
	ids := make([]string, len(evals))
	for i, e := range evals {
		ids[i] = e.ID
	}
	return ids
}

// GetClientAllocs returns the node's allocation IDs with their
// AllocModifyIndex, blocking until one of them changes: the client pulls
// only the allocations whose index moved. Only the node itself (its secret
// in AuthToken) may ask.
func (n *Node) GetClientAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	if args.NodeID == "" {
		return fmt.Errorf("%w: missing node ID", structs.ErrMissingField)
	}
	if done, err := n.srv.forwardQuery("Node.GetClientAllocs", &args.QueryOptions, args, reply); done {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		node, err := st.NodeByID(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
		if node == nil {
			return 0, fmt.Errorf("%w: %s", structs.ErrUnknownNode, args.NodeID)
		}
		if err := authorizeNode(node, args.AuthToken); err != nil {
			return 0, err
		}
		allocs, err := st.AllocsByNode(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
		reply.Allocs = make(map[string]uint64, len(allocs))
		var index uint64
		for _, a := range allocs {
			reply.Allocs[a.ID] = a.AllocModifyIndex
			index = max(index, a.AllocModifyIndex)
		}
		if index == 0 {
			// Never 0: the client feeds it back, and 0 would not block,
			// so a client of a cluster without allocations would spin.
			idx, err := st.Index(state.TableAllocs)
			return max(idx, 1), err
		}
		return index, nil
	})
}

// UpdateAlloc takes a node's status updates of its own allocations (the
// node's secret in AuthToken). Failed allocations get an evaluation so the
// scheduler can reschedule them. Updates of many nodes within a short
// window are committed together (see commitAllocUpdates).
func (n *Node) UpdateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) error {
	if done, err := n.srv.forward("Node.UpdateAlloc", args, reply); done {
		return err
	}
	if len(args.Alloc) == 0 {
		return fmt.Errorf("%w: must update at least one allocation", structs.ErrMissingField)
	}
	if nulls := structs.NullElements("Alloc", args.Alloc); len(nulls) > 0 {
		return fmt.Errorf("%w: %w", structs.ErrInvalidRequest, &structs.ValidationError{Problems: nulls})
	}
	st := n.srv.State()
	if err := n.authorizeAllocUpdate(st, args); err != nil {
		return err
	}
	args.AuthToken = ""
	update, err := n.srv.clientAllocEvals(st, args)
	if err != nil {
		return err
	}
	res, err := n.srv.allocUpdateBatch.submit(update, len(update.allocs)).wait()
	if err != nil {
		return err
	}
	if len(update.back) > 0 {
		// One line per push, not per allocation: a node may bring back
		// thousands. The scheduler's reconnect evaluations decide them.
		n.srv.logger.Info("allocations reported again after their node reconnected", "node_id", args.NodeID,
			"allocs", len(update.back), "first_alloc_id", update.back[0], "reconnect_jobs", update.reconnectJobs)
		n.readyOnceReported(args.NodeID)
	}
	reply.Index = res.Index
	return nil
}

// readyOnceReported makes an initializing node ready once a push has
// reported the last of its unknown allocations, as its next heartbeat
// would (heartbeatStatus decides both): that heartbeat comes a TTL
// later, and the TTL is stretched with the fleet (200 s at 10,000 nodes),
// all that time with the node out of the scheduler's placements.
func (n *Node) readyOnceReported(nodeID string) {
	defer n.srv.heartbeats.lockNode(nodeID)()
	node, err := n.srv.State().NodeByID(nil, nodeID)
	if err != nil || node == nil || node.Status != structs.NodeStatusInit {
		return
	}
	status, err := n.srv.heartbeatStatus(node, structs.NodeStatusReady)
	if err != nil || status != structs.NodeStatusReady {
		return
	}
	if _, _, err := n.srv.setNodeStatus(node, status, nil); err != nil {
		n.srv.logger.Warn("making a node ready once its allocations reported", "node_id", nodeID, "error", err)
		return
	}
	n.logTransition(node, status)
}

// clientAllocUpdate is one Node.UpdateAlloc call waiting in the batch,
// with the evaluations it calls for.
type clientAllocUpdate struct {
	allocs []*structs.Allocation
	evals  []*structs.Evaluation
	// timeoutEvals are max-disconnect-timeout evaluations that reporting
	// allocations waited on; the batch cancels those nothing waits on.
	timeoutEvals  []string
	back          []string // previously unknown, in the order reported
	reconnectJobs int
}

// clientAllocEvals decides, from the stored allocations, the evaluations
// a client's update calls for: a reconnect (or deregister) per job whose
// unknown allocation reported again, a retry per job with a newly failed
// allocation.
func (s *Server) clientAllocEvals(st *state.StateStore, args *structs.AllocUpdateRequest) (clientAllocUpdate, error) {
	now := s.clock.Now()
	out := clientAllocUpdate{allocs: args.Alloc}
	seenJobs := map[structs.NamespacedID]bool{}
	reconnectedJobs := map[structs.NamespacedID]bool{}
	for _, a := range args.Alloc {
		stored, err := st.AllocByID(nil, a.ID)
		if err != nil {
			return out, err
		}
		if err := checkClientAllocUpdate(args.NodeID, a, stored); err != nil {
			return out, err
		}
		if stored == nil {
			continue
		}
		if stored.ClientStatus == structs.AllocClientStatusUnknown {
			out.back = append(out.back, a.ID)
			if stored.FollowupEvalID != "" {
				out.timeoutEvals = append(out.timeoutEvals, stored.FollowupEvalID)
			}
			if !reconnectedJobs[stored.JobNamespacedID()] {
				// The servers held it as unknown: its client is back and the
				// scheduler must decide between it and any replacement.
				reconnectedJobs[stored.JobNamespacedID()] = true
				ev, err := s.reconnectEval(stored, now)
				if err != nil {
					return out, err
				}
				out.evals = append(out.evals, ev)
			}
		}
		if a.ClientStatus != structs.AllocClientStatusFailed || stored.ServerTerminalStatus() {
			continue
		}
		key := stored.JobNamespacedID()
		if seenJobs[key] {
			continue
		}
		job, err := st.JobByID(nil, stored.Namespace, stored.JobID)
		if err != nil {
			return out, err
		}
		if job == nil || job.Stopped() {
			continue
		}
		seenJobs[key] = true
		out.evals = append(out.evals, job.NewEval(structs.EvalTriggerRetryFailedAlloc, now))
	}
	out.reconnectJobs = len(reconnectedJobs)
	return out, nil
}

// commitAllocUpdates writes a batch of clients' allocation updates as one
// raft entry, in the order they arrived, stamped with one time. Of the
// evaluations they call for, one per job and trigger is kept: each sees
// every update of the batch, being in the same entry.
func (s *Server) commitAllocUpdates(updates []clientAllocUpdate) (batchResult, error) {
	now := s.clock.Now()
	req := &structs.AllocUpdateRequest{UpdatedAt: now.UnixNano()}
	type evalKey struct {
		job     structs.NamespacedID
		trigger string
	}
	seen := map[evalKey]bool{}
	timeouts := map[string]bool{}
	for _, u := range updates {
		for _, a := range u.allocs {
			a.ModifyTime = now.UnixNano()
			req.Alloc = append(req.Alloc, a)
		}
		for _, e := range u.evals {
			k := evalKey{structs.NamespacedID{Namespace: e.Namespace, ID: e.JobID}, e.TriggeredBy}
			if !seen[k] {
				seen[k] = true
				req.Evals = append(req.Evals, e)
			}
		}
		for _, id := range u.timeoutEvals {
			timeouts[id] = true
		}
	}
	cancel, err := s.cancelableTimeoutEvals(req.Alloc, timeouts, now)
	if err != nil {
		return batchResult{}, err
	}
	evals, relied := s.coalesceWaiting(req.Evals)
	req.Evals = append(evals, cancel...)
	_, index, err := s.raftApply(structs.AllocClientUpdateRequestType, req)
	if err != nil {
		return batchResult{}, err
	}
	return batchResult{Index: index, Evals: append(req.Evals, s.followUpRelied(relied)...)}, nil
}

// authorizeAllocUpdate checks that the update comes from its node, holding
// the node's secret, and that the servers are listening to that node.
func (n *Node) authorizeAllocUpdate(st *state.StateStore, args *structs.AllocUpdateRequest) error {
	if args.NodeID == "" {
		return fmt.Errorf("%w: missing node ID for allocation update", structs.ErrMissingField)
	}
	node, err := st.NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return fmt.Errorf("%w: %s", structs.ErrUnknownNode, args.NodeID)
	}
	if err := authorizeNode(node, args.AuthToken); err != nil {
		return err
	}
	// Updates from a node the servers consider gone would race the
	// scheduler's decisions about its allocations.
	if node.Status == structs.NodeStatusDown || node.Status == structs.NodeStatusDisconnected {
		return fmt.Errorf("%w: node %s is %s", structs.ErrNodeNotReady, node.ID, node.Status)
	}
	return nil
}

// reconnectEval returns the evaluation for a job whose unknown allocation
// reported again: a reconnect, or a deregister when the job was purged
// while the client was away (its allocations must still be stopped).
func (s *Server) reconnectEval(alloc *structs.Allocation, now time.Time) (*structs.Evaluation, error) {
	job, err := s.State().JobByID(nil, alloc.Namespace, alloc.JobID)
	if err != nil {
		return nil, err
	}
	if job == nil {
		if alloc.Job == nil {
			return nil, fmt.Errorf("allocation %s has no job", alloc.ID)
		}
		return alloc.Job.NewEval(structs.EvalTriggerJobDeregister, now), nil
	}
	return job.NewEval(structs.EvalTriggerReconnect, now), nil
}

// cancelableTimeoutEvals returns the max-disconnect-timeout evaluations
// that nothing waits for any more: every allocation sharing one has now
// reported (see docs/concepts/disconnected-clients.md, "Reconnect"), step 3.
// They are written canceled with the update.
func (s *Server) cancelableTimeoutEvals(updates []*structs.Allocation, evalIDs map[string]bool, now time.Time) ([]*structs.Evaluation, error) {
	if len(evalIDs) == 0 {
		return nil, nil
	}
	reporting := make(map[string]bool, len(updates))
	for _, a := range updates {
		reporting[a.ID] = true
	}
	st := s.State()
	var out []*structs.Evaluation
	for id := range evalIDs {
		ev, err := st.EvalByID(nil, id)
		if err != nil {
			return nil, err
		}
		if ev == nil || ev.TriggeredBy != structs.EvalTriggerMaxDisconnectTimeout || ev.TerminalStatus() {
			continue
		}
		allocs, err := st.AllocsByFollowupEval(nil, id)
		if err != nil {
			return nil, err
		}
		waiting := false
		for _, a := range allocs {
			if a.FollowupEvalID == id && a.ClientStatus == structs.AllocClientStatusUnknown && !reporting[a.ID] {
				waiting = true
				break
			}
		}
		if waiting {
			continue
		}
		c := ev.Copy()
		c.Status = structs.EvalStatusCancelled
		c.StatusDescription = "allocs reconnected"
		c.ModifyTime = now.UnixNano()
		out = append(out, c)
	}
	return out, nil
}

// List returns the nodes, optionally by ID prefix.
func (n *Node) List(args *structs.NodeListRequest, reply *structs.NodeListResponse) error {
	if done, err := n.srv.forwardQuery("Node.List", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, permNodeRead); err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		iter, err := st.NodesByIDPrefix(ws, args.Prefix)
		if err != nil {
			return 0, err
		}
		reply.Nodes = []*structs.NodeListStub{}
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			reply.Nodes = append(reply.Nodes, raw.(*structs.Node).Stub())
		}
		return st.Index(state.TableNodes)
	})
}

// GetNode returns one node, without its secret.
func (n *Node) GetNode(args *structs.NodeSpecificRequest, reply *structs.SingleNodeResponse) error {
	if done, err := n.srv.forwardQuery("Node.GetNode", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, permNodeRead); err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		node, err := st.NodeByID(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
		reply.Node = node.Sanitize()
		if node != nil {
			return node.ModifyIndex, nil
		}
		return st.Index(state.TableNodes)
	})
}

// GetAllocs returns the node's allocations.
func (n *Node) GetAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeAllocsResponse) error {
	if done, err := n.srv.forwardQuery("Node.GetAllocs", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := n.srv.authorize(args.AuthToken, permNodeRead); err != nil {
		return err
	}
	allowed, err := n.srv.nsFilter(args.AuthToken)
	if err != nil {
		return err
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByNode(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
		allocs = slices.DeleteFunc(allocs, func(a *structs.Allocation) bool { return !allowed(a.Namespace) })
		sort.Slice(allocs, func(a, b int) bool { return allocs[a].CreateIndex > allocs[b].CreateIndex })
		reply.Allocs = allocs
		var index uint64
		for _, a := range allocs {
			index = max(index, a.ModifyIndex)
		}
		if index == 0 {
			return st.Index(state.TableAllocs)
		}
		return index, nil
	})
}
