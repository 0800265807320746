package client

import (
	"sync"
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

// persistHeartbeat hands the heartbeat at now to the client's heartbeat
// writer, which stores it for the next client process in the background: a
// write (an fsync on a slow SD card) must not delay what follows a
// heartbeat, such as the push after an outage. Only the newest waiting one
// is kept. A writer goroutine runs only while there is one to write.
func (c *Client) persistHeartbeat(now time.Time) {
	hb := c.heartbeatRecord(now)
	w := &c.hbWriter
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = &hb
	if w.running || w.closed {
		return // the running writer, or flushHeartbeat, writes it
	}
	w.running = true
	w.wg.Add(1)
	go c.writeHeartbeats()
}

// heartbeatWriter is the state of persistHeartbeat's writer.
type heartbeatWriter struct {
	mu sync.Mutex
	// pending is the newest heartbeat not yet written; running is set
	// while a writer goroutine runs; closed once the client stops. All
	// guarded by mu.
	pending *state.Heartbeat
	running bool
	closed  bool
	wg      sync.WaitGroup
}

func (c *Client) writeHeartbeats() {
	w := &c.hbWriter
	defer w.wg.Done()
	for {
		w.mu.Lock()
		hb := w.pending
		if hb == nil || w.closed {
			w.running = false
			w.mu.Unlock()
			return
		}
		w.pending = nil
		w.mu.Unlock()
		c.writeHeartbeat(*hb)
	}
}

func (c *Client) writeHeartbeat(hb state.Heartbeat) {
	if err := c.db.PutHeartbeat(hb); err != nil {
		c.logger.Warn("failed to persist the last heartbeat", "error", err)
	}
}

// flushHeartbeat, at shutdown once the loops have ended, waits for the
// writer and writes the last heartbeat still waiting; the database closes
// after it.
func (c *Client) flushHeartbeat() {
	w := &c.hbWriter
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wg.Wait()
	w.mu.Lock()
	hb := w.pending
	w.pending = nil
	w.mu.Unlock()
	if hb != nil {
		c.writeHeartbeat(*hb)
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
