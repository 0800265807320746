package client

import (
	"time"

	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/helper/clock"
)

// Clocks the time alone is measured on, as logged.
const (
	measuredOnBootClock = "boot clock"
	measuredOnWallClock = "wall clock"
)

// aloneFor is how long before its start a client last heard from the
// servers, as far as it can tell.
type aloneFor struct {
	d     time.Duration
	known bool
	// on is the clock d was measured on, or why it is not known.
	on string
}

// timeAlone measures how long ago the persisted heartbeat hb was, at wall
// time now and boot clock reading boot (bootOK false: none). Within the
// same boot the boot clock decides: it keeps counting through suspend and
// ignores wall clock steps (an NTP correction on a node that was offline
// for hours). After a reboot only the wall clock can say; a wall clock
// behind the heartbeat (a device without a battery-backed clock, booted
// before NTP) says nothing, and the time is unknown. See
// docs/concepts/disconnected-clients.md, "Offline reboot".
func timeAlone(hb state.Heartbeat, now time.Time, boot clock.BootReading, bootOK bool) aloneFor {
	if hb.Wall.IsZero() {
		return aloneFor{on: "no heartbeat recorded"}
	}
	if bootOK && hb.BootID != "" && hb.BootID == boot.BootID && boot.SinceBoot >= hb.SinceBoot {
		return aloneFor{d: boot.SinceBoot - hb.SinceBoot, known: true, on: measuredOnBootClock}
	}
	d := now.Round(0).Sub(hb.Wall.Round(0))
	if d < 0 {
		return aloneFor{on: "wall clock is behind the last heartbeat"}
	}
	return aloneFor{d: d, known: true, on: measuredOnWallClock}
}

// heartbeatRecord is what heartbeatOK persists for a heartbeat at now.
func (c *Client) heartbeatRecord(now time.Time) state.Heartbeat {
	hb := state.Heartbeat{Wall: now.Round(0)}
	if r, ok := c.cfg.BootClock.ReadBoot(); ok {
		hb.BootID, hb.SinceBoot = r.BootID, r.SinceBoot
	}
	return hb
}

// persistHeartbeat hands the heartbeat at now to persistHeartbeats, which
// stores it for the next client process. Only the newest waiting one is
// kept. It is called from the registration and heartbeat loop only, the
// one sender, so the replacement below cannot race another.
func (c *Client) persistHeartbeat(now time.Time) {
	hb := c.heartbeatRecord(now)
	select {
	case <-c.hbToPersist: // superseded
	default:
	}
	c.hbToPersist <- hb
}

// persistHeartbeats writes the heartbeats persistHeartbeat hands it, in
// the background: a write (an fsync on a slow SD card) must not delay what
// follows a heartbeat, such as the push after an outage. At shutdown it
// writes the last one still waiting; the database closes after the loops.
func (c *Client) persistHeartbeats() {
	write := func(hb state.Heartbeat) {
		if err := c.db.PutHeartbeat(hb); err != nil {
			c.logger.Warn("failed to persist the last heartbeat", "error", err)
		}
	}
	for {
		select {
		case hb := <-c.hbToPersist:
			write(hb)
		case <-c.shutdownCh:
			select {
			case hb := <-c.hbToPersist:
				write(hb)
			default:
			}
			return
		}
	}
}

// measureTimeAlone reads the heartbeat an earlier client process persisted
// and how long ago it was, as of the client's start.
func (c *Client) measureTimeAlone() aloneFor {
	hb, err := c.db.GetHeartbeat()
	if err != nil {
		c.logger.Warn("cannot read the last heartbeat; tasks that died while the client was down wait for the servers", "error", err)
		return aloneFor{on: "last heartbeat unreadable"}
	}
	boot, ok := c.cfg.BootClock.ReadBoot()
	return timeAlone(hb, c.startedAt, boot, ok)
}

// offlineRestartUntil returns until when (on the client's clock) a restored
// allocation's tasks that died while the client was down may be restarted
// before any server answers; zero means they wait for the servers. Only
// groups with a disconnect window that allow it qualify, and only while
// that window has not run out since the last heartbeat. An allocation none
// of whose tasks ever started is not restarted: the servers mark such an
// allocation lost, not unknown, and replace it at once.
func (c *Client) offlineRestartUntil(rec *state.AllocRecord) time.Time {
	if !c.alone.known || !rec.Alloc.OfflineRestart() || !everStarted(rec) {
		return time.Time{}
	}
	left := rec.Alloc.DisconnectPolicy().LostAfter - c.alone.d
	if left <= 0 {
		return time.Time{}
	}
	return c.startedAt.Add(left)
}

func everStarted(rec *state.AllocRecord) bool {
	for _, tr := range rec.Tasks {
		if tr.State != nil && !tr.State.StartedAt.IsZero() {
			return true
		}
	}
	return false
}

// serversHeard marks the servers as heard from since the client started:
// restored tasks waiting for them may start (or are stopped, as the
// servers decided), and offline restarts end.
func (c *Client) serversHeard() {
	c.contactedOnce.Do(func() { close(c.contacted) })
}
