package client

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

const (
	registerRetryBase = 1 * time.Second
	registerRetryMax  = 30 * time.Second

	// Failed heartbeats are retried quickly: on an LTE link that has just
	// come back, the sooner a heartbeat lands the sooner the node is
	// ready again. The cap keeps a long outage from costing battery.
	heartbeatRetryBase = 500 * time.Millisecond
	heartbeatRetryMax  = 10 * time.Second

	// defaultHeartbeatTTL is assumed when a server returns no TTL.
	defaultHeartbeatTTL = 10 * time.Second

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

// registerUntilDone registers the node, retrying with backoff until it
// succeeds; false means the client is shutting down.
func (c *Client) registerUntilDone() bool {
	bo := backoff{base: registerRetryBase, max: registerRetryMax}
	for {
		err := c.register()
		if err == nil {
			return true
		}
		if errors.Is(err, errShutdown) {
			return false
		}
		wait := bo.next()
		c.logger.Warn("failed to register node; will retry", "retry_in", wait, "error", err)
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
	req := &structs.NodeRegisterRequest{Node: node, WriteRequest: structs.WriteRequest{Region: c.cfg.Region}}
	var resp structs.NodeUpdateResponse
	if err := c.rpc(methodNodeRegister, req, &resp); err != nil {
		return err
	}
	c.heartbeatOK(resp.HeartbeatTTL)
	c.logger.Info("node registered", "node_id", node.ID, "heartbeat_ttl", resp.HeartbeatTTL)
	// Updates refused while the servers did not know the node can go now.
	c.updater.retryNow()
	return nil
}

// heartbeatUntilReregister heartbeats until the node must be registered
// again (true) or the client shuts down (false).
func (c *Client) heartbeatUntilReregister() bool {
	bo := backoff{base: heartbeatRetryBase, max: heartbeatRetryMax}
	failing := false
	for {
		var wait time.Duration
		err := c.heartbeat()
		switch {
		case err == nil:
			if failing {
				c.logger.Info("heartbeat succeeded again")
				// Queued status updates need not wait out their
				// backoff now that the servers are reachable.
				c.updater.retryNow()
			}
			failing = false
			bo.reset()
			c.readyOnce.Do(func() { close(c.readyCh) })
			wait = heartbeatInterval(c.HeartbeatTTL())
		case errors.Is(err, errShutdown):
			return false
		case errors.Is(err, structs.ErrUnknownNode):
			c.logger.Warn("servers do not know this node; registering again")
			return true
		default:
			failing = true
			wait = bo.next()
			c.logger.Warn("failed to heartbeat; will retry", "retry_in", wait, "since_last_heartbeat",
				c.clock.Now().Sub(c.LastHeartbeat()), "error", err)
		}
		t := c.clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-c.nodeChanged:
			t.Stop()
			return true
		case <-c.shutdownCh:
			t.Stop()
			return false
		}
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
	if err := c.rpc(methodNodeUpdateStatus, req, &resp); err != nil {
		return err
	}
	c.heartbeatOK(resp.HeartbeatTTL)
	return nil
}

// heartbeatOK records that the servers heard the node now.
func (c *Client) heartbeatOK(ttl time.Duration) {
	now := c.clock.Now()
	c.hbMu.Lock()
	defer c.hbMu.Unlock()
	c.lastHeartbeat = now
	if ttl > 0 {
		c.heartbeatTTL = ttl
	}
}

// fingerprintDriversPeriodically re-asks the drivers whether they are
// usable and re-registers the node when the answer changed, so that the
// scheduler stops placing on a driver that broke (or starts using one that
// recovered).
func (c *Client) fingerprintDriversPeriodically() {
	for c.sleep(driverFingerprintInterval) {
		now := c.clock.Now()
		changed := false
		c.nodeMu.Lock()
		for _, name := range slices.Sorted(maps.Keys(c.drivers)) {
			if applyDriverFingerprint(c.node, name, c.drivers[name].Fingerprint(), now) {
				changed = true
			}
		}
		c.nodeMu.Unlock()
		if changed {
			c.logger.Info("driver health changed; updating the node")
			signal(c.nodeChanged)
		}
	}
}
