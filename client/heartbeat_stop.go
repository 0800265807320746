package client

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// stopCheckInterval is the longest the client goes without checking
// whether a group's stop_on_client_after has passed (about once a second, as
// docs/concepts/disconnected-clients.md, "stop_on_client_after", asks).
const stopCheckInterval = time.Second

// stopWhenCutOff stops, on the client's own authority, the allocations of
// groups with stop_on_client_after once the servers have not acknowledged
// the node for that long (see docs/concepts/disconnected-clients.md,
// "stop_on_client_after"). The servers delay the replacement until
// the allocation was lost + stop_on_client_after + the group's largest
// kill_timeout, so the two copies never run together.
//
// Time alone is measured from the last successful heartbeat, a monotonic
// reading, so a wall-clock step on a node that was offline for hours
// neither hastens nor delays the stop. A client that has had no heartbeat
// since it started (restarted while cut off) counts from the heartbeat the
// previous process persisted, measured as "Offline reboot" in
// docs/concepts/disconnected-clients.md says (see timeAlone); when that
// time is unknown it counts from its own start.
func (c *Client) stopWhenCutOff() {
	c.periodic(0, func() time.Duration { return c.stopCutOffAllocs(c.clock.Now()) })
}

// stopCutOffAllocs stops the allocations whose limit has passed at now and
// returns how long to wait before the next check: until the nearest limit
// still ahead, or stopCheckInterval, whichever is sooner.
//
// The limit is the group's stop_on_client_after, but never less than the
// heartbeat TTL: a shorter setting would otherwise stop allocations between
// two healthy heartbeats, while the servers cannot find the node missing
// before the TTL has passed either, so their delayed replacement still
// comes after the client's stop.
func (c *Client) stopCutOffAllocs(now time.Time) time.Duration {
	since := c.LastHeartbeat()
	if since.IsZero() {
		since = c.startedAt
		if c.alone.known {
			since = since.Add(-c.alone.d)
		}
	}
	alone := now.Sub(since)
	ttl := c.HeartbeatTTL()

	c.allocMu.RLock()
	runners := slices.Collect(maps.Values(c.allocs))
	c.allocMu.RUnlock()

	next := stopCheckInterval
	for _, ar := range runners {
		after := ar.StopOnClientAfter()
		if after <= 0 {
			continue
		}
		limit := max(after, ttl)
		if alone < limit {
			next = min(next, limit-alone)
			continue
		}
		why := fmt.Sprintf("Client lost contact with the servers for longer than stop_on_client_after (%s)", after)
		if ar.Stop(why) {
			c.logger.Warn("stopping allocation: no contact with the servers for longer than its group allows",
				"alloc_id", ar.ID(), "stop_on_client_after", after, "since_last_heartbeat", alone)
		}
	}
	return next
}
