package client

import (
	"errors"
	"fmt"
	"time"

	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/nomad/structs"
)

const (
	watchRetryBase = 1 * time.Second
	watchRetryMax  = 15 * time.Second

	// pullQueryTime bounds the wait of Alloc.GetAllocs for a server that
	// has not yet caught up with the index that listed the allocations.
	pullQueryTime = 30 * time.Second
)

// watchAllocations keeps the node's allocations in step with the servers:
// a blocking Node.GetClientAllocs lists them with their AllocModifyIndex,
// the ones whose index moved are pulled, and the runners are started,
// updated or destroyed to match.
func (c *Client) watchAllocations() {
	// Asking before the node is registered would only fail; restored
	// allocations keep running meanwhile.
	select {
	case <-c.readyCh:
	case <-c.shutdownCh:
		return
	}
	r := newRetrier(watchRetryBase, watchRetryMax)
	var index uint64
	// The watch reads stale: the server that holds the client's connection
	// answers from its own state, so the leader does not hold every node's
	// blocking query. A server answers once its state passes the client's
	// index, so a stale answer at a lower index is a server that lags (its
	// wait ran out before it caught up); it is never acted on. A lower
	// index from the leader is a cluster that lost its state, and the
	// client follows it. The first round asks the leader: a follower
	// may not have applied the node's registration yet.
	stale := false
	for {
		if c.watchFromScratch.Swap(false) {
			index = 0
		}
		start := c.clock.Now()
		resp, err := c.listAllocs(index, stale)
		if errors.Is(err, errShutdown) {
			return
		}
		if errors.Is(err, errAbandoned) {
			continue
		}
		if err != nil && stale && !unreachable(err) {
			// A server that lags may not know the node yet, or its
			// secret: ask the leader at once rather than back off.
			c.logger.Debug("a server's stale list of allocations failed; asking the leader", "error", err)
			stale = false
			continue
		}
		if err == nil && stale && resp.Index < index {
			// A server that lags. Acting on its list would destroy the
			// allocations placed since, only to start them again on the
			// next answer: ask the leader instead.
			c.logger.Debug("a server's stale list of allocations is behind; asking the leader",
				"index", resp.Index, "previous_index", index)
			stale = false
			continue
		}
		if err == nil && resp.Index < index {
			// The leader is behind what this client saw: the servers lost
			// their state, or were restored from an older snapshot. The
			// list stands as theirs; waiting for them to pass the old
			// index would leave its changes unseen for a whole query.
			c.logger.Warn("servers' state is older than this client's; listing allocations afresh",
				"index", resp.Index, "previous_index", index)
		}
		if err == nil {
			err = c.syncAllocs(resp.Allocs, stale)
		}
		if err == nil && c.takeover.active() {
			c.takeover.settleUnclaimed(c.claimedAlloc)
		}
		if err != nil {
			wait := r.next(err, c.clock.Now().Sub(start))
			log := c.logger.Warn
			if unreachable(err) {
				log = c.logger.Debug
			}
			log("failed to fetch allocations; will retry", "retry_in", wait, "error", err)
			if !c.sleepOrKick(wait) {
				return
			}
			continue
		}
		r.reset()
		index = resp.Index
		// A server without a leader gets no further stale query: it would
		// hold it for the whole wait while the cluster moves on.
		stale = resp.KnownLeader
		c.serversHeard()
	}
}

// listAllocs is one blocking Node.GetClientAllocs from index, abandoned
// when the watch is kicked; stale lets the server that holds the client's
// connection answer from its own state.
func (c *Client) listAllocs(index uint64, stale bool) (*structs.NodeClientAllocsResponse, error) {
	req := &structs.NodeSpecificRequest{
		NodeID: c.NodeID(),
		QueryOptions: structs.QueryOptions{
			Region:        c.cfg.Region,
			MinQueryIndex: index,
			MaxQueryTime:  structs.DefaultBlockingQueryTime,
			AllowStale:    stale,
			AuthToken:     c.secretID(),
		},
	}
	var resp structs.NodeClientAllocsResponse
	if err := c.rpcUnless(c.watchKick, methodGetClientAllocs, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// sleepOrKick waits d, or less if the watch is kicked; false means the
// client is shutting down.
func (c *Client) sleepOrKick(d time.Duration) bool {
	t := c.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
	case <-c.watchKick:
	case <-c.shutdownCh:
		return false
	}
	return true
}

// syncAllocs brings the runners in line with the servers' list. A stale
// list is pulled from with a stale read too (the server that listed them
// has them); a list from the leader is pulled from the leader.
func (c *Client) syncAllocs(server map[string]uint64, stale bool) error {
	var pull []string
	var pullIndex uint64
	var removed []*allocrunner.AllocRunner
	c.allocMu.Lock()
	for id, ar := range c.allocs {
		if _, ok := server[id]; !ok {
			removed = append(removed, ar)
			delete(c.allocs, id)
			// Counted before the runner leaves the map, so that whoever
			// sees it gone and waits for destroyWG waits for it.
			c.destroyWG.Add(1)
		}
	}
	for id := range c.finished {
		if _, ok := server[id]; !ok {
			delete(c.finished, id)
		}
	}
	for id, idx := range server {
		if ar, ok := c.allocs[id]; ok && ar.AllocModifyIndex() >= idx {
			continue
		}
		if done, ok := c.finished[id]; ok && done >= idx {
			continue
		}
		pull = append(pull, id)
		pullIndex = max(pullIndex, idx)
	}
	c.allocMu.Unlock()

	for _, ar := range removed {
		c.destroyRunner(ar)
	}
	if len(pull) == 0 {
		return nil
	}
	allocs, err := c.pullAllocs(pull, pullIndex, stale)
	if err == nil && stale && pulledBehind(allocs, pull, server) {
		// The server's wait for the changes ran out first: take them
		// from the leader.
		allocs, err = c.pullAllocs(pull, pullIndex, false)
	}
	if err != nil {
		return err
	}
	return c.applyAllocs(allocs)
}

// pulledBehind reports whether a stale pull misses one of the listed
// allocations or holds an older version of it than the list named.
func pulledBehind(allocs []*structs.Allocation, pull []string, listed map[string]uint64) bool {
	if len(allocs) < len(pull) {
		return true
	}
	for _, a := range allocs {
		if a != nil && a.AllocModifyIndex < listed[a.ID] {
			return true
		}
	}
	return false
}

// pullAllocs fetches allocations by ID. The query waits until the server
// has the newest of the listed changes (ModifyIndex >= pullIndex), so that
// a lagging server hands back older versions only when its wait runs out.
func (c *Client) pullAllocs(ids []string, pullIndex uint64, stale bool) ([]*structs.Allocation, error) {
	req := &structs.AllocsGetRequest{
		AllocIDs: ids,
		QueryOptions: structs.QueryOptions{
			Region:        c.cfg.Region,
			MinQueryIndex: pullIndex - 1,
			MaxQueryTime:  pullQueryTime,
			AllowStale:    stale,
			AuthToken:     c.secretID(),
		},
	}
	var resp structs.AllocsGetResponse
	if err := c.rpc(methodGetAllocs, req, &resp); err != nil {
		return nil, fmt.Errorf("pulling %d allocations: %w", len(ids), err)
	}
	return resp.Allocs, nil
}

// applyAllocs persists pulled allocations in one write, then updates their
// runners or starts new ones.
func (c *Client) applyAllocs(allocs []*structs.Allocation) error {
	nodeID := c.NodeID()
	var keep []*structs.Allocation
	for _, a := range allocs {
		if a == nil || a.NodeID != nodeID {
			continue
		}
		c.allocMu.RLock()
		_, known := c.allocs[a.ID]
		c.allocMu.RUnlock()
		if !known && a.ClientTerminalStatus() {
			// It ended on a client that no longer remembers it (lost
			// state dir): running it again would be a second life.
			c.allocMu.Lock()
			c.finished[a.ID] = a.AllocModifyIndex
			c.allocMu.Unlock()
			continue
		}
		keep = append(keep, a)
	}
	if len(keep) == 0 {
		return nil
	}
	if err := c.db.PutAllocations(keep...); err != nil {
		return fmt.Errorf("persisting allocations: %w", err)
	}

	node := c.nodeInfo()
	c.allocMu.Lock()
	defer c.allocMu.Unlock()
	for _, a := range keep {
		if ar, ok := c.allocs[a.ID]; ok {
			ar.Update(a)
			continue
		}
		ar, err := c.newAllocRunner(a, node, time.Time{})
		if err != nil {
			c.logger.Error("cannot run allocation", "alloc_id", a.ID, "error", err)
			continue
		}
		c.allocs[a.ID] = ar
		go c.runAlloc(ar)
	}
	if len(c.allocs) > c.cfg.GC.MaxAllocs && c.gc != nil {
		c.gc.kick()
	}
	return nil
}

// destroyRunner destroys the runner of an allocation the servers have
// garbage collected: its tasks are killed, its directory and records
// removed.
// The caller has counted it in destroyWG.
func (c *Client) destroyRunner(ar *allocrunner.AllocRunner) {
	go func() {
		defer c.destroyWG.Done()
		ar.Destroy()
		c.updater.forget(ar.ID())
		c.reapStandbys(ar.ID())
		c.logger.Debug("destroyed allocation removed by the servers", "alloc_id", ar.ID())
	}()
}
