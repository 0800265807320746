package nomad

import (
	"fmt"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// varLocks runs the TTL timers of the variables' locks while this server
// leads. A lock lives in raft (the variable's Lock); its TTL lives here:
// each renewal restarts it, and when it runs out the leader releases the
// lock through raft, starting its lock delay (carried in the entry, so a
// later leader honours it too). A new leader starts every held lock's TTL
// afresh: a lock can outlive its TTL across a leader change, never end
// before it, so a holder that renewed in time is never displaced.
type varLocks struct {
	srv *Server

	mu      sync.Mutex
	enabled bool
	timers  map[varKey]*lockTimer
}

type varKey struct{ ns, path string }

type lockTimer struct {
	id       string
	lock     structs.VariableLock
	timer    Timer
	deadline time.Time
	// expiring is set while the release of the expired lock goes through
	// raft.
	expiring bool
}

func newVarLocks(srv *Server) *varLocks {
	return &varLocks{srv: srv, timers: map[varKey]*lockTimer{}}
}

// enable is the duty's start, run before the server answers as leader:
// it starts the timers of the locks held in the state store, so a
// renewal the new leader answers finds its timer (or starts one).
func (l *varLocks) enable() {
	// Enabled and filled under one hold of the lock: an acquire applied
	// meanwhile either is read here or starts its timer after.
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enabled = true
	vars, err := l.srv.State().Variables(nil, state.AllNamespaces, "")
	if err != nil {
		l.srv.logger.Error("variable locks: reading variables", "error", err)
	}
	for _, v := range vars {
		if v.Lock != nil {
			l.startLocked(v)
		}
	}
}

// run is the leader duty: it stops every timer when leadership ends.
func (l *varLocks) run(stop <-chan struct{}) {
	<-stop
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enabled = false
	for k, t := range l.timers {
		t.timer.Stop()
		delete(l.timers, k)
	}
}

// start starts the TTL of a lock just acquired.
func (l *varLocks) start(v *structs.VariableEncrypted) {
	if v == nil || v.Lock == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.enabled {
		l.startLocked(v)
	}
}

func (l *varLocks) startLocked(v *structs.VariableEncrypted) {
	k := varKey{v.Namespace, v.Path}
	if old := l.timers[k]; old != nil {
		old.timer.Stop()
	}
	lock := *v.Lock
	t := &lockTimer{id: lock.ID, lock: lock, deadline: l.srv.clock.Now().Add(lock.TTL)}
	t.timer = l.srv.clock.AfterFunc(lock.TTL, func() { l.expire(k, t) })
	l.timers[k] = t
}

// stop drops the TTL of a lock released.
func (l *varLocks) stop(ns, path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := varKey{ns, path}
	if t := l.timers[k]; t != nil {
		t.timer.Stop()
		delete(l.timers, k)
	}
}

// renew restarts the TTL of lock id on the variable at ns/path and
// returns the variable. The state store is read under the timers' lock,
// so a renewal never succeeds after the expiry of the same lock has been
// applied, and one made while the expiry goes through raft is refused.
func (l *varLocks) renew(ns, path, id string) (*structs.VariableEncrypted, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.enabled {
		return nil, fmt.Errorf("%w: %w", structs.ErrNotLeader, errNotLeaderForLocks)
	}
	v, err := l.srv.State().VarGet(nil, ns, path)
	if err != nil {
		return nil, err
	}
	k := varKey{ns, path}
	t := l.timers[k]
	if v == nil || v.LockID() != id || (t != nil && t.expiring) {
		return nil, fmt.Errorf("%w: the lock on %q is not held with ID %q", structs.ErrLockConflict, path, id)
	}
	if t == nil || t.id != id {
		// Acquired through a leader that lost its term before it started
		// the timer: this one starts it now.
		l.startLocked(v)
		return v, nil
	}
	t.deadline = l.srv.clock.Now().Add(t.lock.TTL)
	t.timer.Reset(t.lock.TTL)
	return v, nil
}

// expire releases a lock whose TTL ran out, unless it was renewed,
// released or replaced meanwhile. While the release goes through raft
// the timer stays, marked expiring, so a renewal in that window is
// refused rather than answered with a lock about to be gone.
func (l *varLocks) expire(k varKey, t *lockTimer) {
	l.mu.Lock()
	if l.timers[k] != t || !l.enabled || t.expiring || l.srv.clock.Now().Before(t.deadline) {
		// Replaced, stopped, or renewed after the timer fired (the reset
		// runs this again at the new deadline).
		l.mu.Unlock()
		return
	}
	t.expiring = true
	l.mu.Unlock()
	now := l.srv.clock.Now()
	in := &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Namespace: k.ns, Path: k.path, Lock: &t.lock}}
	out, err := l.srv.applyVar(structs.VarOpLockRelease, in, true, now.Add(t.lock.LockDelay).UnixNano())
	l.mu.Lock()
	if l.timers[k] == t {
		delete(l.timers, k)
	}
	l.mu.Unlock()
	if err != nil {
		l.srv.logger.Warn("variable lock: releasing an expired lock failed; the next leader retries", "path", k.path, "namespace", k.ns, "error", err)
		return
	}
	if out.Result == structs.VarOpResultOk {
		l.srv.logger.Debug("variable lock expired", "path", k.path, "namespace", k.ns)
	}
}
