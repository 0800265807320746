package nomad

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// leaderLoss wakes the stale blocking queries a server holds when it has
// lost its leader for leaderLossGrace. Such a server (cut off from the rest, or between terms)
// would otherwise hold each for its whole wait while the cluster moves on;
// woken, they answer with KnownLeader false and the caller can ask
// elsewhere. Clients' allocation watches read stale, so a follower holds a
// share of the fleet's queries.
type leaderLoss struct {
	mu  sync.Mutex
	sig waitSignal
}

// wait returns a channel closed when this server next finds itself
// without a leader.
func (l *leaderLoss) wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sig.waitLocked()
}

func (l *leaderLoss) notify() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sig.notifyLocked()
}

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
	grace := time.NewTimer(leaderLossGrace)
	grace.Stop()
	defer grace.Stop()
	for {
		select {
		case <-ch:
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
