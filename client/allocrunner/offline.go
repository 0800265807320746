package allocrunner

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// offlineGate decides when a restored task that did not survive the
// client's restart (a power cut took it with the agent) may start again
// (docs/concepts/disconnected-clients.md, "Offline reboot"). Once the
// servers have been heard from, it starts as any task would, unless they
// stopped the allocation meanwhile. Before that, it starts only while the
// group's disconnect window has not run out since the last heartbeat
// (until); otherwise it waits for the servers, as upstream does, because
// they may have placed a replacement elsewhere.
type offlineGate struct {
	clock     clock.Clock
	contacted <-chan struct{}
	until     time.Time // zero: never before contact
	window    time.Duration
	// serverStopped reports whether the servers' copy of the allocation
	// is desired stop; checked after contact so that a task the servers
	// no longer want is not started just before its kill arrives.
	serverStopped func() bool
	// restartedOffline is set once the gate let a task start before any
	// server answered (see stopWhenOfflineWindowEnds).
	restartedOffline atomic.Bool
}

// closedCh stands in for a nil contacted channel: the servers were heard.
var closedCh = func() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

func newOfflineGate(cfg Config, serverStopped func() bool) *offlineGate {
	g := &offlineGate{clock: cfg.Clock, contacted: cfg.ServersContacted, until: cfg.OfflineRestartUntil, serverStopped: serverStopped}
	if g.clock == nil {
		g.clock = clock.Real()
	}
	if g.contacted == nil {
		g.contacted = closedCh
	}
	if cfg.Alloc != nil {
		g.window = cfg.Alloc.DisconnectPolicy().LostAfter
	}
	return g
}

// isContacted reports whether the servers have been heard from.
func (g *offlineGate) isContacted() bool {
	select {
	case <-g.contacted:
		return true
	default:
		return false
	}
}

// offlineLeft returns how long offline restarts remain allowed at now;
// zero or less means not (any more).
func (g *offlineGate) offlineLeft(now time.Time) time.Duration {
	if g.until.IsZero() {
		return 0
	}
	return g.until.Sub(now)
}

// wait blocks until the task may start. start is false when the task was
// killed or the runner shut down instead; offline is true when it starts
// before any server answered.
func (g *offlineGate) wait(killCh, shutdownCh <-chan struct{}) (start, offline bool) {
	if !g.isContacted() && g.offlineLeft(g.clock.Now()) > 0 {
		// Set before the start, so that the window's end cannot miss
		// a task starting at its last moment.
		g.restartedOffline.Store(true)
		return true, true
	}
	select {
	case <-g.contacted:
	case <-killCh:
		return false, false
	case <-shutdownCh:
		return false, false
	}
	if g.serverStopped() {
		// The stop's kill is on its way (AllocRunner.Update).
		select {
		case <-killCh:
		case <-shutdownCh:
		}
		return false, false
	}
	return true, false
}

// restartedOfflineEvent is the event on a task the client started again
// before any server answered: the servers learn of the restart, with its
// true time, when the node reconnects.
func restartedOfflineEvent(now time.Time, left, window time.Duration) *structs.TaskEvent {
	e := newEvent(structs.TaskRestartedOffline, now)
	e.Message = fmt.Sprintf("Restarted by the client while no server was reachable; it stops the task in %s, when the disconnect window (%s) since the last heartbeat runs out",
		left.Round(time.Second), window)
	e.DisplayMessage = e.Message
	return e
}

// offlineWindowEnded is why the client stops an allocation it restarted
// without the servers once the window is over.
func offlineWindowEnded(window time.Duration) string {
	return fmt.Sprintf("Client restarted the allocation without reaching a server and its disconnect window (%s) since the last heartbeat has run out; the servers will have replaced it", window)
}

// stopWhenOfflineWindowEnds stops the allocation when the window for
// offline restarts ends before the servers answer, if any of its tasks was
// restarted in it: by then the servers have marked it lost and placed a
// replacement, and two copies must not run. Tasks that survived the restart
// in an allocation the client did not restart are left running, as on any
// disconnected client.
func (ar *AllocRunner) stopWhenOfflineWindowEnds() {
	g := ar.gate
	left := g.offlineLeft(g.clock.Now())
	if left <= 0 || g.isContacted() {
		return
	}
	t := g.clock.NewTimer(left)
	defer t.Stop()
	select {
	case <-t.C():
	case <-g.contacted:
		return
	case <-ar.waitCh:
		return
	case <-ar.shutdownCh:
		return
	}
	if g.isContacted() || !g.restartedOffline.Load() {
		return
	}
	if ar.Stop(offlineWindowEnded(g.window)) {
		ar.logger.Warn("stopping allocation restarted while disconnected: its disconnect window has run out",
			"lost_after", g.window)
	}
}
