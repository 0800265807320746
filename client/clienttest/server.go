package clienttest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/fault"
)

// DefaultHeartbeatTTL is the TTL the fake server hands out unless told
// otherwise, and DefaultHeartbeatGrace how long past it a node may be
// silent before it is given up on: upstream's min_heartbeat_ttl and
// heartbeat_grace, as the real servers default them.
const (
	DefaultHeartbeatTTL   = 10 * time.Second
	DefaultHeartbeatGrace = 10 * time.Second
)

// DefaultBlackholeTimeout is how long a call over a blackholed link hangs
// before it fails, as FaultableRPC's does.
const DefaultBlackholeTimeout = 2 * time.Second

// FakeServer answers the five RPCs a client makes, from memory, with the
// semantics the real servers have at the process boundary: a state index
// that grows with every write, blocking queries on it, AllocModifyIndex
// bumped only by server-side changes, a node that misses its TTL and
// grace disconnected (while an allocation's window holds it) or down, and
// initializing, not ready, on its first heartbeat back; client updates
// refused from nodes that are down or disconnected, node RPCs refused
// without the node's secret, and allocation updates refused for another
// node's allocations or with a status only the servers set. The contract
// suite in testutil (TestFakeServerContract) holds it to the real server.
// It is a fault.Link (its one link to its client) and works inside
// testing/synctest bubbles; it is safe for concurrent use.
type FakeServer struct {
	mu    sync.Mutex
	index uint64
	ttl   time.Duration
	grace time.Duration
	// timers are the nodes' heartbeat deadlines.
	timers map[string]*nodeTimer
	nodes  map[string]*structs.Node
	allocs map[string]*structs.Allocation
	errs   map[string]error
	// link is how the link to the client fails, if it does.
	link    fault.Switch
	changed chan struct{} // closed and replaced when the index moves
	// observed is closed and replaced on every recorded call or change,
	// heartbeats included, for WaitFor.
	observed chan struct{}
	closed   chan struct{}

	// commitDelay is how long a heartbeat waits before its status
	// change is applied (see SetHeartbeatCommitDelay).
	commitDelay time.Duration
	// serverAhead is how far the fake server's clock runs ahead of the
	// client's (see SetServerClockAhead).
	serverAhead time.Duration

	// lag, while set, is the older state stale reads are answered from
	// (see LagStaleReads); staleReads and consistentReads count the
	// allocation watches of each kind.
	lag             *StaleView
	staleReads      int
	consistentReads int

	registrations int
	heartbeats    map[string][]time.Time
	updateCalls   int
	refused       int // Node.UpdateAlloc calls refused for the node's status
	// received is every client status each allocation was reported
	// with, in order.
	received map[string][]string
}

// NewFakeServer returns an empty fake server.
func NewFakeServer() *FakeServer {
	return &FakeServer{
		ttl:        DefaultHeartbeatTTL,
		grace:      DefaultHeartbeatGrace,
		timers:     make(map[string]*nodeTimer),
		nodes:      make(map[string]*structs.Node),
		allocs:     make(map[string]*structs.Allocation),
		errs:       make(map[string]error),
		changed:    make(chan struct{}),
		observed:   make(chan struct{}),
		closed:     make(chan struct{}),
		heartbeats: make(map[string][]time.Time),
		received:   make(map[string][]string),
	}
}

// Close ends pending blocking queries and the nodes' heartbeat timers;
// later queries return at once.
func (s *FakeServer) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, t := range s.timers {
		t.Stop()
		delete(s.timers, id)
	}
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
}

// SetHeartbeatTTL sets the TTL returned from now on.
func (s *FakeServer) SetHeartbeatTTL(ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ttl = ttl
}

// SetHeartbeatGrace sets how long past its TTL a node may be silent
// before it is given up on.
func (s *FakeServer) SetHeartbeatGrace(grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grace = grace
}

// SetHeartbeatCommitDelay makes each heartbeat wait d before its status
// change is applied and answered, as the real leader gathers the status
// changes of a short window into one raft entry: meanwhile the node keeps
// its old status, and an allocation update from a node still
// disconnected is refused.
func (s *FakeServer) SetHeartbeatCommitDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commitDelay = d
}

// SetServerClockAhead makes the server's time in its answers to
// Node.Register and Node.UpdateStatus (ServerTime) run d ahead of the time
// package's, as a server whose clock differs from the client's.
func (s *FakeServer) SetServerClockAhead(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serverAhead = d
}

// SetError makes every call of method fail with err; nil heals it.
func (s *FakeServer) SetError(method string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.errs, method)
	} else {
		s.errs[method] = err
	}
}

var _ fault.Link = (*FakeServer)(nil)

// Cut fails the link in mode m until Heal: Reset fails every call, the
// blocking queries in flight included, with fault.ErrPartitioned;
// Blackhole does too, but new calls first hang for
// DefaultBlackholeTimeout (or until the heal); Stall holds every call,
// unanswered and without an error, until Heal, then lets it through.
func (s *FakeServer) Cut(m fault.Mode) { s.link.Cut(m) }

// Heal makes the server reachable again.
func (s *FakeServer) Heal() { s.link.Heal() }

// LoseState empties the server as a server that lost its data dir is: no
// nodes, no allocations, and the index starts again from zero.
func (s *FakeServer) LoseState() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.nodes)
	clear(s.allocs)
	for id, t := range s.timers {
		t.Stop()
		delete(s.timers, id)
	}
	s.index = 0
	close(s.changed)
	s.changed = make(chan struct{})
	s.observeLocked()
}

// bumpLocked advances the index and wakes blocking queries and waiters.
func (s *FakeServer) bumpLocked() uint64 {
	s.index++
	close(s.changed)
	s.changed = make(chan struct{})
	s.observeLocked()
	return s.index
}

// observeLocked wakes WaitFor.
func (s *FakeServer) observeLocked() {
	close(s.observed)
	s.observed = make(chan struct{})
}

// RPC implements client.RPCHandler.
// Like the real servers, it ends a call whose request context
// (structs.RequestContext) ends: a blocking query with what it has, a
// call held by a stalled or blackholed link with the context's error.
func (s *FakeServer) RPC(method string, args, reply any) error {
	ctx := structs.RequestContext(args)
	cutCh, err := s.link.Enter(ctx, DefaultBlackholeTimeout, s.closed)
	if err != nil {
		return err
	}
	s.mu.Lock()
	err = s.errs[method]
	s.mu.Unlock()
	if err != nil {
		return err
	}
	err = s.call(ctx, method, args, reply)
	select {
	case <-cutCh:
		return fault.ErrPartitioned // the answer was lost with the link
	default:
		return err
	}
}

func (s *FakeServer) call(ctx context.Context, method string, args, reply any) error {
	switch method {
	case "Node.Register":
		return s.register(args.(*structs.NodeRegisterRequest), reply.(*structs.NodeUpdateResponse))
	case "Node.UpdateStatus":
		return s.updateStatus(ctx, args.(*structs.NodeUpdateStatusRequest), reply.(*structs.NodeUpdateResponse))
	case "Node.GetClientAllocs":
		return s.getClientAllocs(ctx, args.(*structs.NodeSpecificRequest), reply.(*structs.NodeClientAllocsResponse))
	case "Alloc.GetAllocs":
		return s.getAllocs(ctx, args.(*structs.AllocsGetRequest), reply.(*structs.AllocsGetResponse))
	case "Node.UpdateAlloc":
		return s.updateAlloc(args.(*structs.AllocUpdateRequest), reply.(*structs.GenericResponse))
	}
	return fmt.Errorf("fake server: unknown method %q", method)
}

func (s *FakeServer) register(args *structs.NodeRegisterRequest, reply *structs.NodeUpdateResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := args.Node.Copy()
	if n == nil || n.ID == "" || n.SecretID == "" {
		return fmt.Errorf("%w: node ID and secret ID are required", structs.ErrMissingField)
	}
	if old, ok := s.nodes[n.ID]; ok && old.SecretID != n.SecretID {
		return fmt.Errorf("%w: node %s", structs.ErrNodeSecretMismatch, n.ID)
	}
	if n.Status == "" {
		n.Status = structs.NodeStatusInit
	}
	if err := checkClientNodeStatus(n.Status); err != nil {
		return err
	}
	s.registrations++
	s.nodes[n.ID] = n
	s.armLocked(n.ID, s.ttl+s.grace)
	reply.Index = s.bumpLocked()
	reply.HeartbeatTTL = s.ttl
	reply.ServerTime = time.Now().Add(s.serverAhead).UnixNano()
	return nil
}

// nodeTimer is a node's heartbeat deadline; a timer that fires after it
// was replaced finds another in FakeServer.timers and does nothing.
type nodeTimer struct{ t *time.Timer }

func (n *nodeTimer) Stop() { n.t.Stop() }

// armLocked (re)sets the node's heartbeat deadline to d from now.
func (s *FakeServer) armLocked(nodeID string, d time.Duration) {
	if t, ok := s.timers[nodeID]; ok {
		t.Stop()
	}
	nt := &nodeTimer{}
	nt.t = time.AfterFunc(d, func() { s.missed(nodeID, nt) })
	s.timers[nodeID] = nt
}

// missed applies the real servers' rule to a node whose deadline t
// passed: disconnected while an allocation's window holds it (looked at
// again when the window ends, or after a TTL and grace), otherwise down.
func (s *FakeServer) missed(nodeID string, t *nodeTimer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[nodeID]
	if !ok || s.timers[nodeID] != t {
		return // forgotten, or heard from since
	}
	now := time.Now()
	status, until := s.statusAfterMissLocked(n, now)
	if n.Status != status {
		s.setStatusLocked(n, status, now)
	}
	if status == structs.NodeStatusDown {
		delete(s.timers, nodeID)
		return
	}
	s.armLocked(nodeID, min(until.Sub(now), s.ttl+s.grace))
}

// statusAfterMissLocked is the status a node that missed its heartbeat
// gets, and for a disconnected one when its last window ends: the real
// servers' rule itself, structs.StatusAfterMiss ("Heartbeats and node
// status" in docs/concepts/disconnected-clients.md).
func (s *FakeServer) statusAfterMissLocked(n *structs.Node, now time.Time) (string, time.Time) {
	var allocs []*structs.Allocation
	for _, a := range s.allocs {
		if a.NodeID == n.ID {
			allocs = append(allocs, a)
		}
	}
	return structs.StatusAfterMiss(n, allocs, now)
}

// setStatusLocked changes a node's status server-side.
func (s *FakeServer) setStatusLocked(n *structs.Node, status string, now time.Time) {
	n.Status = status
	n.StatusUpdatedAt = now.Unix()
	s.bumpLocked()
}

// checkClientNodeStatus refuses a status no client may ask for, as the
// real servers do: disconnected is only theirs to set.
func checkClientNodeStatus(status string) error {
	if !structs.ValidNodeStatus(status) {
		return fmt.Errorf("%w: invalid status %q for node", structs.ErrInvalidRequest, status)
	}
	if status == structs.NodeStatusDisconnected {
		return fmt.Errorf("%w: node status %q", structs.ErrServerOnlyStatus, status)
	}
	return nil
}

// authorizeLocked returns the node if token is its secret, as the real
// servers check every node RPC.
func (s *FakeServer) authorizeLocked(nodeID, token string) (*structs.Node, error) {
	return authorizeIn(s.nodes, nodeID, token)
}

// authorizeIn checks a node's secret against nodes.
func authorizeIn(nodes map[string]*structs.Node, nodeID, token string) (*structs.Node, error) {
	n, ok := nodes[nodeID]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %s", structs.ErrUnknownNode, nodeID)
	case token == "":
		return nil, fmt.Errorf("%w: node %s", structs.ErrNodeSecretMissing, nodeID)
	case token != n.SecretID:
		return nil, fmt.Errorf("%w: node %s", structs.ErrNodeSecretMismatch, nodeID)
	}
	return n, nil
}

func (s *FakeServer) updateStatus(ctx context.Context, args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	s.mu.Lock()
	delay := s.commitDelay
	s.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.authorizeLocked(args.NodeID, args.AuthToken)
	if err != nil {
		return err
	}
	if err := checkClientNodeStatus(args.Status); err != nil {
		return err
	}
	s.heartbeats[args.NodeID] = append(s.heartbeats[args.NodeID], time.Now())
	s.observeLocked()
	status := s.heartbeatStatusLocked(n, args.Status)
	if n.Status != status {
		s.setStatusLocked(n, status, time.Now())
	}
	if status == structs.NodeStatusDown {
		if t, ok := s.timers[n.ID]; ok {
			t.Stop()
			delete(s.timers, n.ID)
		}
	} else {
		s.armLocked(n.ID, s.ttl+s.grace)
	}
	reply.Index = s.index
	reply.HeartbeatTTL = s.ttl
	reply.ServerTime = time.Now().Add(s.serverAhead).UnixNano()
	return nil
}

// heartbeatStatusLocked is the status a heartbeat asking for requested
// gives, as the real servers decide it: a node back from disconnected is
// initializing until none of its allocations is unknown any more.
func (s *FakeServer) heartbeatStatusLocked(n *structs.Node, requested string) string {
	if requested != structs.NodeStatusReady {
		return requested
	}
	switch n.Status {
	case structs.NodeStatusDisconnected:
		return structs.NodeStatusInit
	case structs.NodeStatusInit:
		for _, a := range s.allocs {
			if a.NodeID == n.ID && a.ClientStatus == structs.AllocClientStatusUnknown && !a.ServerTerminalStatus() {
				return structs.NodeStatusInit
			}
		}
	}
	return requested
}

// wait blocks until the index passes min, maxWait passes, ctx ends or the
// server closes; it returns with mu held.
func (s *FakeServer) waitLocked(ctx context.Context, min uint64, maxWait time.Duration, index func() uint64) {
	if min == 0 {
		return
	}
	if maxWait <= 0 {
		maxWait = structs.DefaultBlockingQueryTime
	}
	deadline := time.NewTimer(maxWait)
	defer deadline.Stop()
	for index() <= min {
		ch, cutCh := s.changed, s.link.Cutting()
		s.mu.Unlock()
		select {
		case <-ch:
			s.mu.Lock()
		case <-deadline.C:
			s.mu.Lock()
			return
		case <-s.closed:
			s.mu.Lock()
			return
		case <-cutCh:
			s.mu.Lock()
			return
		case <-ctx.Done():
			s.mu.Lock()
			return
		}
	}
}

// StaleView is the state a lagging server answers stale reads from.
type StaleView struct {
	index  uint64
	allocs map[string]*structs.Allocation
	nodes  map[string]*structs.Node
}

// Checkpoint returns the state as it is now, for LagStaleReads.
func (s *FakeServer) Checkpoint() *StaleView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := &StaleView{index: s.index, allocs: make(map[string]*structs.Allocation, len(s.allocs)),
		nodes: make(map[string]*structs.Node, len(s.nodes))}
	for id, a := range s.allocs {
		v.allocs[id] = a.Copy()
	}
	for id, n := range s.nodes {
		v.nodes[id] = n.Copy()
	}
	return v
}

// LagStaleReads makes the fake answer stale reads (AllowStale) as a
// follower that stopped applying at cp would: from cp's allocations and
// index, blocking until their wait runs out. Consistent reads keep the
// live state, as the leader's do. CatchUp ends it.
func (s *FakeServer) LagStaleReads(cp *StaleView) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lag = cp
	close(s.changed)
	s.changed = make(chan struct{})
}

// CatchUp ends LagStaleReads: stale reads see the live state again.
func (s *FakeServer) CatchUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lag = nil
	close(s.changed)
	s.changed = make(chan struct{})
}

// WatchReads returns how many allocation watches (Node.GetClientAllocs)
// were stale reads and how many consistent.
func (s *FakeServer) WatchReads() (stale, consistent int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.staleReads, s.consistentReads
}

// stateLocked is the index and allocations a read sees.
func (s *FakeServer) stateLocked(stale bool) (uint64, map[string]*structs.Allocation) {
	if stale && s.lag != nil {
		return s.lag.index, s.lag.allocs
	}
	return s.index, s.allocs
}

func (s *FakeServer) getClientAllocs(ctx context.Context, args *structs.NodeSpecificRequest, reply *structs.NodeClientAllocsResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if args.AllowStale {
		s.staleReads++
	} else {
		s.consistentReads++
	}
	// As the real servers do, the node is checked before the wait and
	// again after it.
	authorize := func() error {
		nodes := s.nodes
		if args.AllowStale && s.lag != nil {
			nodes = s.lag.nodes
		}
		_, err := authorizeIn(nodes, args.NodeID, args.AuthToken)
		return err
	}
	if err := authorize(); err != nil {
		return err
	}
	s.waitLocked(ctx, args.MinQueryIndex, args.MaxQueryTime, func() uint64 {
		idx, _ := s.stateLocked(args.AllowStale)
		return idx
	})
	if err := authorize(); err != nil {
		return err
	}
	index, allocs := s.stateLocked(args.AllowStale)
	reply.Allocs = make(map[string]uint64)
	for _, a := range allocs {
		if a.NodeID == args.NodeID {
			reply.Allocs[a.ID] = a.AllocModifyIndex
		}
	}
	reply.Index = max(index, 1)
	reply.KnownLeader = true
	return nil
}

func (s *FakeServer) getAllocs(ctx context.Context, args *structs.AllocsGetRequest, reply *structs.AllocsGetResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	index := func() uint64 {
		top, allocs := s.stateLocked(args.AllowStale)
		var idx uint64
		for _, id := range args.AllocIDs {
			if a, ok := allocs[id]; ok {
				idx = max(idx, a.ModifyIndex)
			}
		}
		if idx == 0 {
			return top
		}
		return idx
	}
	s.waitLocked(ctx, args.MinQueryIndex, args.MaxQueryTime, index)
	_, allocs := s.stateLocked(args.AllowStale)
	for _, id := range args.AllocIDs {
		if a, ok := allocs[id]; ok {
			reply.Allocs = append(reply.Allocs, a.Copy())
		}
	}
	reply.Index = max(index(), 1)
	reply.KnownLeader = true
	return nil
}

func (s *FakeServer) updateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) error {
	if len(args.Alloc) == 0 {
		return fmt.Errorf("%w: must update at least one allocation", structs.ErrMissingField)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.authorizeLocked(args.NodeID, args.AuthToken)
	if err != nil {
		return err
	}
	if n.Status == structs.NodeStatusDown || n.Status == structs.NodeStatusDisconnected {
		s.refused++
		s.observeLocked()
		return fmt.Errorf("%w: node %s is %s", structs.ErrNodeNotReady, n.ID, n.Status)
	}
	for _, u := range args.Alloc {
		if a, ok := s.allocs[u.ID]; ok && a.NodeID != n.ID {
			return fmt.Errorf("%w: allocation %s is on node %s", structs.ErrForeignAlloc, u.ID, a.NodeID)
		}
		switch status := u.ClientStatus; {
		case structs.ClientSettable(status):
		case status == structs.AllocClientStatusUnknown || status == structs.AllocClientStatusLost:
			return fmt.Errorf("%w: allocation %s reported client status %q", structs.ErrServerOnlyStatus, u.ID, status)
		default:
			return fmt.Errorf("%w: allocation %s reported client status %q", structs.ErrInvalidRequest, u.ID, status)
		}
		if len(u.AllocStates) > 0 {
			return fmt.Errorf("%w: allocation %s carries AllocStates, which only the servers record", structs.ErrInvalidRequest, u.ID)
		}
	}
	s.updateCalls++
	idx := s.bumpLocked()
	for _, u := range args.Alloc {
		a, ok := s.allocs[u.ID]
		if !ok {
			continue
		}
		a = a.Copy()
		a.ClientStatus = u.ClientStatus
		a.ClientDescription = u.ClientDescription
		a.TaskStates = u.TaskStates
		a.ModifyIndex = idx
		if a.NeedsToReconnect() {
			a.AppendState(structs.AllocStateFieldClientStatus, u.ClientStatus, time.Now())
		}
		s.allocs[a.ID] = a
		s.received[a.ID] = append(s.received[a.ID], u.ClientStatus)
	}
	reply.Index = idx
	return nil
}

// UpsertAllocs places or changes allocations server-side, bumping their
// AllocModifyIndex like a committed plan.
func (s *FakeServer) UpsertAllocs(allocs ...*structs.Allocation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := s.bumpLocked()
	for _, a := range allocs {
		a = a.Copy()
		if old, ok := s.allocs[a.ID]; ok {
			a.CreateIndex = old.CreateIndex
		} else {
			a.CreateIndex = idx
		}
		a.ModifyIndex, a.AllocModifyIndex = idx, idx
		s.allocs[a.ID] = a
	}
}

// UpdateAlloc changes a stored allocation server-side with fn.
func (s *FakeServer) UpdateAlloc(id string, fn func(a *structs.Allocation)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.allocs[id]
	if !ok {
		return
	}
	a = a.Copy()
	fn(a)
	idx := s.bumpLocked()
	a.ModifyIndex, a.AllocModifyIndex = idx, idx
	s.allocs[id] = a
}

// StopAlloc sets an allocation's desired status to stop.
func (s *FakeServer) StopAlloc(id string) {
	s.UpdateAlloc(id, func(a *structs.Allocation) {
		a.DesiredStatus = structs.AllocDesiredStatusStop
		a.DesiredDescription = structs.AllocStopped
	})
}

// MarkUnknown marks an allocation unknown the way the scheduler does when
// its node disconnects.
func (s *FakeServer) MarkUnknown(id string) {
	s.UpdateAlloc(id, func(a *structs.Allocation) {
		a.ClientStatus = structs.AllocClientStatusUnknown
		a.ClientDescription = structs.AllocUnknown
		a.AppendState(structs.AllocStateFieldClientStatus, structs.AllocClientStatusUnknown, time.Now())
	})
}

// DeleteAlloc removes an allocation, as garbage collection does.
func (s *FakeServer) DeleteAlloc(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.allocs, id)
	s.bumpLocked()
}

// SetNodeStatus changes a node's status server-side.
func (s *FakeServer) SetNodeStatus(id, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.nodes[id]; ok {
		s.setStatusLocked(n, status, time.Now())
	}
}

// ForgetNode drops a node, as a server that lost its state would.
func (s *FakeServer) ForgetNode(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.nodes, id)
	if t, ok := s.timers[id]; ok {
		t.Stop()
		delete(s.timers, id)
	}
	s.bumpLocked()
}

// Alloc returns a copy of a stored allocation, or nil.
func (s *FakeServer) Alloc(id string) *structs.Allocation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allocs[id].Copy()
}

// Node returns a copy of a registered node, or nil.
func (s *FakeServer) Node(id string) *structs.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[id].Copy()
}

// Registrations returns how many Node.Register calls succeeded.
func (s *FakeServer) Registrations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registrations
}

// Heartbeats returns the times of a node's successful heartbeats.
func (s *FakeServer) Heartbeats(nodeID string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.heartbeats[nodeID])
}

// UpdateCalls returns how many Node.UpdateAlloc calls succeeded.
func (s *FakeServer) UpdateCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updateCalls
}

// RefusedUpdates returns how many Node.UpdateAlloc calls were refused
// because the node was down or disconnected.
func (s *FakeServer) RefusedUpdates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Received returns every client status an allocation was reported with.
func (s *FakeServer) Received(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.received[id])
}

// WaitFor waits until cond holds on the server's state, re-checking after
// every change. On timeout it fails the test with what cond last said.
// Inside a synctest bubble the timeout is on the fake clock.
func (s *FakeServer) WaitFor(t testing.TB, timeout time.Duration, cond func(v *View) (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok, why := cond(&View{s: s})
		ch := s.observed
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("fake server: condition not met within %s; last seen: %s", timeout, why)
		}
	}
}

// View is read access to the server's state inside WaitFor.
type View struct{ s *FakeServer }

// Alloc returns the stored allocation (do not modify it), or nil.
func (v *View) Alloc(id string) *structs.Allocation { return v.s.allocs[id] }

// Node returns the stored node (do not modify it), or nil.
func (v *View) Node(id string) *structs.Node { return v.s.nodes[id] }

// Heartbeats returns how many heartbeats a node has sent.
func (v *View) Heartbeats(nodeID string) int { return len(v.s.heartbeats[nodeID]) }

// AllocsWithStatus counts the allocations in each client status and reports
// whether all of ids have status want.
func (v *View) AllocsWithStatus(ids []string, want string) (bool, string) {
	counts := map[string]int{}
	for _, id := range ids {
		a := v.s.allocs[id]
		if a == nil {
			counts["<missing>"]++
			continue
		}
		counts[a.ClientStatus]++
	}
	return counts[want] == len(ids), fmt.Sprintf("client statuses %v", counts)
}

// DescribeAlloc renders an allocation's status and task events, for failure
// messages.
func DescribeAlloc(a *structs.Allocation) string {
	if a == nil {
		return "<no allocation>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "alloc %s desired=%s client=%s (%s)", structs.ShortID(a.ID), a.DesiredStatus, a.ClientStatus, a.ClientDescription)
	names := slices.Collect(maps.Keys(a.TaskStates))
	sort.Strings(names)
	for _, name := range names {
		ts := a.TaskStates[name]
		fmt.Fprintf(&b, "; task %s state=%s failed=%v restarts=%d events=[", name, ts.State, ts.Failed, ts.Restarts)
		for i, e := range ts.Events {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(e.Type)
		}
		b.WriteString("]")
	}
	return b.String()
}
