package nomad

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// broadcast wakes everyone waiting on it at each notify.
type broadcast struct {
	mu  sync.Mutex
	sig waitSignal
}

// wait returns a channel closed at the next notify. Take it before
// looking at what it signals, so that a change in between is not missed.
func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sig.waitLocked()
}

func (b *broadcast) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sig.notifyLocked()
}

// The server's leader broadcasts:
//
//   - leaderLoss wakes the stale blocking queries a server holds when it
//     has lost its leader for leaderLossGrace. Such a server (cut off from
//     the rest, or between terms) would otherwise hold each for its whole
//     wait while the cluster moves on; woken, they answer with KnownLeader
//     false and the caller can ask elsewhere. Clients' allocation watches
//     read stale, so a follower holds a share of the fleet's queries.
//   - leaderChange wakes the calls waiting out an election
//     (leaderForCall, WaitForLeader) at every change of leader raft
//     reports and when this server takes up or gives up its duties. They
//     polled every 20 ms before: in an election under a fleet's load, the
//     thousands of calls waiting to be forwarded woke 50 times a second
//     each and took the CPU that raft needed to elect (a 10,000-node
//     fleet's servers went without a leader for minutes).

// leaderLossGrace is how long a server is without a leader before it
// wakes its stale waiters: an election among servers that can reach each
// other ends well within it, and waking a fleet's watches for each would
// send them all to the new leader at once.
const leaderLossGrace = 10 * time.Second

// watchLeaderLoss follows raft's leader observations until shutdown and
// wakes the stale waiters once the server has had no leader for
// leaderLossGrace. An observation is only a prompt: raft drops those a
// full channel cannot take, so each wake reads the leader as it is now.
// The grace runs on the time package, as rpcHoldTimeout does: it bounds a
// wait on raft, which a test's manual clock does not move.
func (s *Server) watchLeaderLoss() {
	ch := make(chan raft.Observation, 1)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(obs)
	defer s.raft.DeregisterObserver(obs)
	// A leader raft found before the observer was in place reported to
	// no one: those already waiting look again.
	s.leaderChange.notify()
	grace := time.NewTimer(leaderLossGrace)
	grace.Stop()
	defer grace.Stop()
	for {
		select {
		case <-ch:
			s.leaderChange.notify()
			if s.raft.Leader() == "" {
				grace.Reset(leaderLossGrace)
			} else {
				grace.Stop()
			}
		case <-grace.C:
			if s.raft.Leader() == "" {
				s.leaderLoss.notify()
			}
		case <-s.shutdownCh:
			return
		}
	}
}
