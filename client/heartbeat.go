package client

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

const (
	registerRetryBase = 1 * time.Second
	registerRetryMax  = 30 * time.Second

	// Backoff for calls a server refused; calls no server answered are
	// retried every linkRetry instead.
	heartbeatRetryBase = 500 * time.Millisecond
	heartbeatRetryMax  = 10 * time.Second

	// defaultHeartbeatTTL is assumed when a server returns no TTL.
	defaultHeartbeatTTL = 10 * time.Second

	// serverRebalanceInterval is how often, plus up to half again, the
	// client reshuffles its servers.
	serverRebalanceInterval = 5 * time.Minute

	// driverFingerprintInterval is how often drivers are asked whether
	// they are still usable.
	driverFingerprintInterval = 30 * time.Second
)

// heartbeatInterval is how long to wait after a successful heartbeat: half
// the TTL plus up to a quarter of jitter, so that one lost heartbeat is
// retried well inside the TTL and a fleet does not beat in step.
func heartbeatInterval(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		ttl = defaultHeartbeatTTL
	}
	return ttl/2 + jitter(ttl/4)
}

// registerAndHeartbeat registers the node, then heartbeats for as long as
// the client runs, re-registering when a server has forgotten the node or
// the node changed.
func (c *Client) registerAndHeartbeat() {
	for {
		if !c.registerUntilDone() {
			return
		}
		if !c.heartbeatUntilReregister() {
			return
		}
	}
}

// registerUntilDone registers the node, retrying until it succeeds; false
// means the client is shutting down.
func (c *Client) registerUntilDone() bool {
	r := newRetrier(registerRetryBase, registerRetryMax)
	var out outage
	for {
		start := c.clock.Now()
		err := c.registerWithCert()
		if err == nil {
			return true
		}
		if errors.Is(err, errShutdown) {
			return false
		}
		wait := r.next(err, c.clock.Now().Sub(start))
		if !unreachable(err) || out.failed(c.clock.Now()) {
			c.logger.Info("failed to register node; will retry", "retry_in", wait, "error", err)
		}
		if !c.sleep(wait) {
			return false
		}
	}
}

// register sends Node.Register with the node as fingerprinted.
func (c *Client) register() error {
	select {
	case <-c.nodeChanged: // this registration carries the change
	default:
	}
	node := c.Node()
	node.Status = structs.NodeStatusInit
	req := &structs.NodeRegisterRequest{Node: node, WriteRequest: structs.WriteRequest{Region: c.cfg.Region, AuthToken: c.introToken()}}
	var resp structs.NodeUpdateResponse
	sent := c.clock.Now()
	if err := c.rpc(methodNodeRegister, req, &resp); err != nil {
		return err
	}
	// A client (re)started with its clock off takes the servers' time from
	// its registration, not only from its first heartbeat after it.
	c.serverClock.observe(sent, resp.ServerTime)
	c.heartbeatOK(&resp)
	c.logger.Info("node registered", "node_id", node.ID, "heartbeat_ttl", resp.HeartbeatTTL)
	c.settle()
	if c.watchFromScratch.Load() {
		signal(c.watchKick)
	}
	return nil
}

// heartbeatUntilReregister heartbeats until the node must be registered
// again (true) or the client shuts down (false).
func (c *Client) heartbeatUntilReregister() bool {
	r := newRetrier(heartbeatRetryBase, heartbeatRetryMax)
	var out outage
	for {
		start := c.clock.Now()
		prev, ttl := c.LastHeartbeat(), c.HeartbeatTTL()
		if err := c.refreshCert(); err != nil {
			// The heartbeat below goes on the certificate held; the
			// next round tries again.
			c.logger.Warn("cannot renew the node's certificate", "error", err)
		}
		err := c.heartbeat()
		now := c.clock.Now()
		var wait time.Duration
		switch {
		case err == nil:
			if d := out.ended(now); d > 0 {
				c.logger.Info("servers reachable again", "outage", d)
				c.linkBack()
			} else if gap := now.Sub(prev); ttl > 0 && gap > ttl {
				// No call failed, yet the servers went a TTL without
				// hearing the node: a link that dropped packets instead
				// of refusing them held this heartbeat until it healed.
				// The servers will have marked the node disconnected.
				c.logger.Info("servers heard the node again after a gap longer than its TTL", "gap", gap, "ttl", ttl)
				c.linkBack()
			}
			r.reset()
			c.readyOnce.Do(func() { close(c.readyCh) })
			wait = heartbeatInterval(c.HeartbeatTTL())
		case errors.Is(err, errShutdown):
			return false
		case errors.Is(err, structs.ErrUnknownNode):
			c.logger.Warn("servers do not know this node; registering again")
			// They lost their state: once registered, the allocation
			// list is asked for afresh rather than from an index those
			// servers may never reach, so that what they no longer know
			// of is stopped now, not after a blocking query times out.
			c.watchFromScratch.Store(true)
			return true
		default:
			wait = r.next(err, now.Sub(start))
			if out.failed(now) {
				c.logger.Info("failed to heartbeat; will retry", "retry_in", wait,
					"since_last_heartbeat", now.Sub(c.LastHeartbeat()), "error", err)
			}
		}
		t := c.clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-c.beatNow:
			t.Stop()
		case <-c.nodeChanged:
			t.Stop()
			return true
		case <-c.shutdownCh:
			t.Stop()
			return false
		}
	}
}

// linkBack is called when the servers answer again after an outage. What
// waited on the link goes now rather than at the
// end of its retry wait: queued status updates, and a fresh allocation
// watch (the one in flight may be stuck on a connection that died). For a
// TTL from now, every status push is followed by a heartbeat: a node that
// comes back from disconnected is initializing until the servers have its
// allocations' true state, and the heartbeat after that push is what makes
// it ready, so it must not wait for the next regular beat.
func (c *Client) linkBack() {
	c.settle()
	signal(c.watchKick)
}

// settle opens the window in which status pushes are followed by a
// heartbeat, and sends queued updates now.
func (c *Client) settle() {
	ttl := c.HeartbeatTTL()
	if ttl <= 0 {
		ttl = defaultHeartbeatTTL
	}
	c.hbMu.Lock()
	c.settleUntil = c.clock.Now().Add(ttl)
	c.hbMu.Unlock()
	c.updater.retryNow()
}

// holdPushes is the updater's hold: true while the servers have not
// heard the node for longer than its TTL. They may hold it disconnected,
// and refuse its allocation updates until the heartbeat that ends the
// outage is written; sent meanwhile, each would wait out a retry backoff
// (in a storm, most of a site's first pushes). The heartbeat that ends
// the outage releases them (linkBack). Before the first heartbeat there
// is nothing to hold for.
func (c *Client) holdPushes() bool {
	c.hbMu.RLock()
	defer c.hbMu.RUnlock()
	return !c.lastHeartbeat.IsZero() && c.heartbeatTTL > 0 && c.clock.Now().Sub(c.lastHeartbeat) > c.heartbeatTTL
}

// allocsPushed is the updater's hook after a successful Node.UpdateAlloc.
func (c *Client) allocsPushed() {
	c.hbMu.RLock()
	settling := c.clock.Now().Before(c.settleUntil)
	c.hbMu.RUnlock()
	if settling {
		c.logger.Debug("allocations pushed while settling; heartbeating now")
		signal(c.beatNow)
	}
}

// heartbeat sends Node.UpdateStatus(ready).
func (c *Client) heartbeat() error {
	req := &structs.NodeUpdateStatusRequest{
		NodeID:       c.NodeID(),
		Status:       structs.NodeStatusReady,
		WriteRequest: structs.WriteRequest{Region: c.cfg.Region, AuthToken: c.secretID()},
	}
	var resp structs.NodeUpdateResponse
	sent := c.clock.Now()
	if err := c.rpc(methodNodeUpdateStatus, req, &resp); err != nil {
		return err
	}
	c.serverClock.observe(sent, resp.ServerTime)
	c.heartbeatOK(&resp)
	c.logger.Trace("heartbeat", "ttl", resp.HeartbeatTTL, "index", resp.Index)
	return nil
}

// heartbeatOK records that the servers heard the node now, and the
// servers they reported.
func (c *Client) heartbeatOK(resp *structs.NodeUpdateResponse) {
	now := c.clock.Now()
	c.hbMu.Lock()
	if prev := c.lastHeartbeat; !prev.IsZero() && c.heartbeatTTL > 0 && now.Sub(prev) > c.heartbeatTTL {
		// This heartbeat ends a silence the servers may have noticed: the
		// settle window opens before anything can see the new
		// lastHeartbeat, so that a push released by it is followed by a
		// heartbeat (see linkBack), even a push that beats linkBack.
		c.settleUntil = now.Add(c.heartbeatTTL)
	}
	c.lastHeartbeat = now
	if resp.HeartbeatTTL > 0 {
		c.heartbeatTTL = resp.HeartbeatTTL
	}
	c.hbMu.Unlock()
	c.persistHeartbeat(now)
	if m, ok := c.cfg.RPCHandler.(ServerManager); ok && len(resp.Servers) > 0 {
		addrs := make([]string, 0, len(resp.Servers))
		for _, s := range resp.Servers {
			if s != nil && s.RPCAdvertiseAddr != "" {
				addrs = append(addrs, s.RPCAdvertiseAddr)
			}
		}
		m.SetServers(addrs)
	}
}

// rebalanceServersPeriodically reshuffles the servers the client uses, as
// upstream does, so that the clients of a region spread over the servers
// again after failovers and over servers that joined later.
func (c *Client) rebalanceServersPeriodically() {
	m, ok := c.cfg.RPCHandler.(ServerManager)
	if !ok {
		return
	}
	interval := func() time.Duration { return serverRebalanceInterval + jitter(serverRebalanceInterval/2) }
	c.periodic(interval(), func() time.Duration {
		m.Rebalance()
		return interval()
	})
}

// fingerprintDriversPeriodically re-asks the drivers whether they are
// usable and re-registers the node when the answer changed, so that the
// scheduler stops placing on a driver that broke (or starts using one that
// recovered).
//
// The drivers are probed before the node lock is taken, and the answers
// applied under it: a probe may take seconds (a docker daemon that does
// not answer), and the heartbeat and every other reader of the node must
// not wait on it.
func (c *Client) fingerprintDriversPeriodically() {
	c.periodic(driverFingerprintInterval, func() time.Duration {
		names := slices.Sorted(maps.Keys(c.drivers))
		fps := make([]*drivers.Fingerprint, len(names))
		for i, name := range names {
			fps[i] = c.drivers[name].Fingerprint()
		}
		now := c.clock.Now()
		changed := false
		c.nodeMu.Lock()
		for i, name := range names {
			if applyDriverFingerprint(c.node, name, fps[i], now) {
				changed = true
			}
		}
		c.nodeMu.Unlock()
		if changed {
			c.logger.Info("driver health changed; updating the node")
			signal(c.nodeChanged)
		}
		return driverFingerprintInterval
	})
}
