package nomad

import (
	"fmt"
	"sort"

	"github.com/hashicorp/go-memdb"
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
	node := args.Node
	if node == nil || node.ID == "" {
		return fmt.Errorf("%w: missing node ID for client registration", structs.ErrMissingField)
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
	if !structs.ValidNodeStatus(node.Status) {
		return fmt.Errorf("%w: invalid status for node", structs.ErrInvalidRequest)
	}
	if node.SchedulingEligibility == "" {
		node.SchedulingEligibility = structs.NodeSchedulingEligible
	}
	if node.NodePool == "" {
		node.NodePool = structs.DefaultNodePool
	}
	st := n.srv.State()
	existing, err := st.NodeByID(nil, node.ID)
	if err != nil {
		return err
	}
	if existing != nil && existing.SecretID != node.SecretID {
		return fmt.Errorf("%w: node secret ID does not match", structs.ErrPermissionDenied)
	}
	now := n.srv.clock.Now()
	args.UpdatedAt = now.Unix()
	node.StatusUpdatedAt = now.Unix()
	if existing == nil {
		node.Events = []*structs.NodeEvent{structs.NewNodeEvent(structs.NodeEventSubsystemCluster, structs.NodeRegisterEventRegistered, now)}
	} else {
		node.Events = existing.Events
	}
	_, index, err := n.srv.raftApply(structs.NodeRegisterRequestType, args)
	if err != nil {
		return err
	}
	if transitionNeedsEvals(existing, node.Status) {
		ids, evalIndex, err := n.srv.createNodeEvals(node.ID, index)
		if err != nil {
			return err
		}
		reply.EvalIDs, reply.EvalCreateIndex = ids, evalIndex
	}
	reply.NodeModifyIndex = index
	reply.Index = index
	return n.fillHeartbeat(node.ID, reply)
}

func (n *Node) fillHeartbeat(nodeID string, reply *structs.NodeUpdateResponse) error {
	reply.HeartbeatTTL = n.srv.heartbeats.reset(nodeID)
	reply.LeaderRPCAddr = n.srv.Leader()
	reply.Servers = []*structs.NodeServerInfo{{RPCAdvertiseAddr: n.srv.rpcAdvertise.String(), Datacenter: n.srv.config.Datacenter}}
	iter, err := n.srv.State().Nodes(nil)
	if err != nil {
		return err
	}
	var count int32
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		count++
	}
	reply.NumNodes = count
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

// UpdateStatus is the client's heartbeat and status change.
func (n *Node) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	if done, err := n.srv.forward("Node.UpdateStatus", args, reply); done {
		return err
	}
	if args.NodeID == "" {
		return fmt.Errorf("%w: missing node ID for client status update", structs.ErrMissingField)
	}
	if !structs.ValidNodeStatus(args.Status) {
		return fmt.Errorf("%w: invalid status for node", structs.ErrInvalidRequest)
	}
	node, err := n.srv.State().NodeByID(nil, args.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return fmt.Errorf("%w: %s", structs.ErrUnknownNode, args.NodeID)
	}
	reply.NodeModifyIndex = node.ModifyIndex
	if node.Status != args.Status {
		index, err := n.srv.setNodeStatus(node, args.Status, args.NodeEvent)
		if err != nil {
			return err
		}
		reply.NodeModifyIndex = index
		if transitionNeedsEvals(node, args.Status) {
			ids, evalIndex, err := n.srv.createNodeEvals(node.ID, index)
			if err != nil {
				return err
			}
			reply.EvalIDs, reply.EvalCreateIndex = ids, evalIndex
		}
	}
	reply.Index = reply.NodeModifyIndex
	if args.Status == structs.NodeStatusDown {
		n.srv.heartbeats.clear(args.NodeID)
		return nil
	}
	return n.fillHeartbeat(args.NodeID, reply)
}

// setNodeStatus writes a node status change through raft.
func (s *Server) setNodeStatus(node *structs.Node, status string, event *structs.NodeEvent) (uint64, error) {
	now := s.clock.Now()
	if event == nil {
		msg := "Node status changed to " + status
		if status == structs.NodeStatusReady {
			msg = structs.NodeEventNodeReady
		}
		event = structs.NewNodeEvent(structs.NodeEventSubsystemCluster, msg, now)
	}
	req := &structs.NodeUpdateStatusRequest{NodeID: node.ID, Status: status, NodeEvent: event, UpdatedAt: now.Unix()}
	_, index, err := s.raftApply(structs.NodeUpdateStatusRequestType, req)
	return index, err
}

// createNodeEvals creates a node-update evaluation for every job with
// allocations on the node.
func (s *Server) createNodeEvals(nodeID string, nodeIndex uint64) ([]string, uint64, error) {
	st := s.State()
	allocs, err := st.AllocsByNode(nil, nodeID)
	if err != nil {
		return nil, 0, err
	}
	now := s.clock.Now()
	seen := map[structs.NamespacedID]bool{}
	var evals []*structs.Evaluation
	for _, a := range allocs {
		key := a.JobNamespacedID()
		if seen[key] {
			continue
		}
		seen[key] = true
		job, err := st.JobByID(nil, a.Namespace, a.JobID)
		if err != nil {
			return nil, 0, err
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
		ev.NodeID, ev.NodeModifyIndex = nodeID, nodeIndex
		evals = append(evals, ev)
	}
	if len(evals) == 0 {
		return nil, 0, nil
	}
	_, index, err := s.raftApply(structs.EvalUpdateRequestType, &structs.EvalUpdateRequest{Evals: evals})
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, len(evals))
	for i, e := range evals {
		ids[i] = e.ID
	}
	return ids, index, nil
}

// GetClientAllocs returns the node's allocation IDs with their
// AllocModifyIndex, blocking until one of them changes: the client pulls
// only the allocations whose index moved.
func (n *Node) GetClientAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	if args.NodeID == "" {
		return fmt.Errorf("%w: missing node ID", structs.ErrMissingField)
	}
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		node, err := st.NodeByID(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
		if node == nil {
			return 0, fmt.Errorf("%w: %s", structs.ErrUnknownNode, args.NodeID)
		}
		if args.SecretID != "" && node.SecretID != args.SecretID {
			return 0, structs.ErrPermissionDenied
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
			return st.Index(state.TableAllocs)
		}
		return index, nil
	})
}

// UpdateAlloc takes the client's allocation status updates. Failed
// allocations get an evaluation so the scheduler can reschedule them.
func (n *Node) UpdateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) error {
	if done, err := n.srv.forward("Node.UpdateAlloc", args, reply); done {
		return err
	}
	if len(args.Alloc) == 0 {
		return fmt.Errorf("%w: must update at least one allocation", structs.ErrMissingField)
	}
	st := n.srv.State()
	now := n.srv.clock.Now()
	args.UpdatedAt = now.UnixNano()
	checkedNodes := map[string]bool{}
	seenJobs := map[structs.NamespacedID]bool{}
	args.Evals = nil
	for _, a := range args.Alloc {
		a.ModifyTime = now.UnixNano()
		stored, err := st.AllocByID(nil, a.ID)
		if err != nil {
			return err
		}
		if stored == nil {
			continue
		}
		if !checkedNodes[stored.NodeID] {
			node, err := st.NodeByID(nil, stored.NodeID)
			if err != nil {
				return err
			}
			if node == nil {
				return fmt.Errorf("%w: %s", structs.ErrUnknownNode, stored.NodeID)
			}
			// Updates from a node the servers consider gone would race the
			// scheduler's decisions about its allocations.
			if node.Status == structs.NodeStatusDown || node.Status == structs.NodeStatusDisconnected {
				return fmt.Errorf("%w: node %s is %s", structs.ErrNodeNotReady, node.ID, node.Status)
			}
			checkedNodes[stored.NodeID] = true
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
			return err
		}
		if job == nil || job.Stopped() {
			continue
		}
		seenJobs[key] = true
		args.Evals = append(args.Evals, job.NewEval(structs.EvalTriggerRetryFailedAlloc, now))
	}
	_, index, err := n.srv.raftApply(structs.AllocClientUpdateRequestType, args)
	if err != nil {
		return err
	}
	reply.Index = index
	return nil
}

// List returns the nodes, optionally by ID prefix.
func (n *Node) List(args *structs.NodeListRequest, reply *structs.NodeListResponse) error {
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

// GetNode returns one node.
func (n *Node) GetNode(args *structs.NodeSpecificRequest, reply *structs.SingleNodeResponse) error {
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		node, err := st.NodeByID(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
		reply.Node = node
		if node != nil {
			return node.ModifyIndex, nil
		}
		return st.Index(state.TableNodes)
	})
}

// GetAllocs returns the node's allocations.
func (n *Node) GetAllocs(args *structs.NodeSpecificRequest, reply *structs.NodeAllocsResponse) error {
	return n.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		allocs, err := st.AllocsByNode(ws, args.NodeID)
		if err != nil {
			return 0, err
		}
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
