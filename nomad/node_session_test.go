package nomad

import (
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// ledgerRecorder stands in for the heartbeater: it records which timers
// the ledger pulled in and restored.
type ledgerRecorder struct {
	now      time.Time
	pulled   []string
	restored []string
	pulledBy map[string]bool // pulled and not restored since
	alive    map[string]bool // servers gossip lists alive
}

func newLedgerForTest() (*sessionLedger, *ledgerRecorder) {
	r := &ledgerRecorder{now: time.Unix(1_700_000_000, 0), pulledBy: map[string]bool{}, alive: map[string]bool{}}
	l := newSessionLedger(sessionLedgerDeps{
		serverAlive: func(id string) bool { return r.alive[id] },
		grace:       10 * time.Second, now: func() time.Time { return r.now }, logger: hclog.NewNullLogger(),
		pullIn: func(id string, _ time.Duration) bool {
			r.pulled = append(r.pulled, id)
			r.pulledBy[id] = true
			return true
		},
		restore: func(id string) bool {
			if !r.pulledBy[id] {
				return false
			}
			r.restored = append(r.restored, id)
			delete(r.pulledBy, id)
			return true
		},
	})
	return l, r
}

func digest(server string, seq uint64, full bool, held, lost []string) *structs.NodeSessionDigestRequest {
	return &structs.NodeSessionDigestRequest{ServerID: server, Epoch: server + "-1", Seq: seq, Full: full, Held: held, Lost: lost}
}

// TestSessionLedger_MovesAndLosses checks the leader's rule for one node's
// liveness: its heartbeat timer is brought in only once no server holds
// its session, and set back when one does again, in whichever order the
// servers' digests arrive. A session that moves between servers, or a
// server that restarts, must never cost a node its status.
func TestSessionLedger_MovesAndLosses(t *testing.T) {
	l, r := newLedgerForTest()
	must.False(t, l.apply(digest("a", 1, true, []string{"n1", "n2"}, nil)))
	must.False(t, l.apply(digest("b", 1, true, nil, nil)))

	// n1 moves to b, b's digest first: nothing to do.
	must.False(t, l.apply(digest("b", 2, false, []string{"n1"}, nil)))
	must.False(t, l.apply(digest("a", 2, false, nil, []string{"n1"})))
	must.SliceEmpty(t, r.pulled)

	// n2 moves to b, a's digest first: pulled in, then set back.
	must.False(t, l.apply(digest("a", 3, false, nil, []string{"n2"})))
	must.Eq(t, []string{"n2"}, r.pulled)
	must.False(t, l.apply(digest("b", 3, false, []string{"n2"}, nil)))
	must.Eq(t, []string{"n2"}, r.restored)

	// n1 lost for good: pulled in and left so.
	must.False(t, l.apply(digest("b", 4, false, nil, []string{"n1"})))
	must.Eq(t, []string{"n2", "n1"}, r.pulled)
	must.Eq(t, []string{"n2"}, r.restored)
}

// TestSessionLedger_DigestGapsAskForFull checks that a delta the leader
// cannot place (unknown server, another run of it, a missed digest) is
// refused with a request for a full digest, and that a full digest
// replaces what the server said before: a leader acting on a partial
// picture would bring in timers of nodes that are fine.
func TestSessionLedger_DigestGapsAskForFull(t *testing.T) {
	l, r := newLedgerForTest()
	must.True(t, l.apply(digest("a", 5, false, []string{"n1"}, nil)), must.Sprint("unknown server"))
	must.False(t, l.apply(digest("a", 5, true, []string{"n1", "n2"}, nil)))
	must.True(t, l.apply(digest("a", 7, false, nil, []string{"n1"})), must.Sprint("digest 6 missed"))
	must.SliceEmpty(t, r.pulled)
	restarted := digest("a", 1, false, nil, nil)
	restarted.Epoch = "a-2"
	must.True(t, l.apply(restarted), must.Sprint("another run of the server"))

	// The server's full digest no longer lists n2: lost.
	full := digest("a", 2, true, []string{"n1"}, nil)
	full.Epoch = "a-2"
	must.False(t, l.apply(full))
	must.Eq(t, []string{"n2"}, r.pulled)
}

// TestSessionLedger_NewLeaderLearnsRecentLosses checks that a leader new
// to a server brings in the timers of nodes whose sessions the server
// lost just before (its full digest names them), unless another server
// holds them: a node cut off in the moment of a leader change would
// otherwise wait out failover_heartbeat_ttl.
func TestSessionLedger_NewLeaderLearnsRecentLosses(t *testing.T) {
	l, r := newLedgerForTest()
	must.False(t, l.apply(digest("b", 1, true, []string{"n2"}, nil)))
	must.False(t, l.apply(digest("a", 1, true, []string{"n1"}, []string{"n2", "n3"})))
	must.Eq(t, []string{"n3"}, r.pulled)
}

// TestSessionLedger_SilentServerSwept checks that the sessions of a
// server that stopped sending digests (crashed, cut off from the leader)
// count as lost after nodeSessionServerTimeout, but only for nodes no
// other server holds: its nodes have moved to the others by then.
func TestSessionLedger_SilentServerSwept(t *testing.T) {
	l, r := newLedgerForTest()
	r.alive["b"] = true
	l.apply(digest("a", 1, true, []string{"n1", "n2"}, nil))
	l.apply(digest("b", 1, true, []string{"n1"}, nil))
	r.now = r.now.Add(nodeSessionServerTimeout / 2)
	l.apply(digest("b", 2, false, nil, nil))
	l.sweep()
	must.SliceEmpty(t, r.pulled)

	r.now = r.now.Add(nodeSessionServerTimeout/2 + time.Millisecond)
	l.sweep()
	must.Eq(t, []string{"n2"}, r.pulled)
	must.True(t, l.apply(digest("a", 2, false, nil, nil)), must.Sprint("a swept server must send a full digest"))
}

// TestSessionLedger_SlowLiveServerTrusted checks that a server gossip
// still lists alive keeps its word for nodeSessionServerTimeoutAlive
// without digests: a server starved of CPU for a few seconds in a storm
// must not have every node it holds brought to the edge of a disconnect.
func TestSessionLedger_SlowLiveServerTrusted(t *testing.T) {
	l, r := newLedgerForTest()
	r.alive["a"] = true
	l.apply(digest("a", 1, true, []string{"n1"}, nil))
	r.now = r.now.Add(nodeSessionServerTimeoutAlive - time.Second)
	l.sweep()
	must.SliceEmpty(t, r.pulled)
	r.now = r.now.Add(time.Second)
	l.sweep()
	must.Eq(t, []string{"n1"}, r.pulled)
}

// TestSessionHolder_Digests checks what a server sends: a full digest to
// a new leader or after a failed one, else only the nodes whose state
// changed, each as it stands now (a session that came and went within
// one interval is not sent as held).
func TestSessionHolder_Digests(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h := newSessionHolder(func() time.Time { return now })
	h.open("n1")
	h.open("n2")
	d := h.digest("s", "leader-1")
	must.True(t, d.Full)
	slices.Sort(d.Held)
	must.Eq(t, []string{"n1", "n2"}, d.Held)
	h.sent(false)

	h.open("n3")
	h.close("n3")
	h.open("n1") // a second session of n1: still held after one closes
	h.close("n1")
	h.close("n2")
	d = h.digest("s", "leader-1")
	must.False(t, d.Full)
	must.SliceEmpty(t, d.Held)
	slices.Sort(d.Lost)
	must.Eq(t, []string{"n2", "n3"}, d.Lost)
	h.sent(false)
	must.True(t, h.holds("n1"))

	h.failed()
	d = h.digest("s", "leader-1")
	must.True(t, d.Full)
	slices.Sort(d.Lost)
	must.Eq(t, []string{"n2", "n3"}, d.Lost, must.Sprint("a full digest names the sessions lost lately"))
	h.sent(false)
	now = now.Add(nodeSessionRecentLoss + time.Second)
	h.failed()
	must.SliceEmpty(t, h.digest("s", "leader-1").Lost, must.Sprint("not those lost long ago"))
	must.False(t, h.digest("s", "leader-1").Full)
	must.True(t, h.digest("s", "leader-2").Full, must.Sprint("a new leader gets everything"))
}

// TestHeartbeater_PullInAndRestore checks the two moves the ledger makes
// on a node's heartbeat timer: brought in to the grace, never pushed out,
// and set back to where it stood.
func TestHeartbeater_PullInAndRestore(t *testing.T) {
	clock := newManualClock()
	h := newHeartbeater(heartbeaterDeps{
		minTTL: 200 * time.Second, grace: 10 * time.Second, clock: clock, logger: hclog.NewNullLogger(),
		jitter: func(int64) int64 { return 0 }, isLeader: func() bool { return true },
	})
	h.reset("n1")
	due := func() time.Duration { return h.timers["n1"].at.Sub(clock.Now()) }
	must.Eq(t, 210*time.Second, due())

	clock.Advance(50 * time.Second)
	must.True(t, h.pullIn("n1", 10*time.Second))
	must.Eq(t, 10*time.Second, due())
	must.False(t, h.pullIn("n1", 20*time.Second), must.Sprint("never later"))
	must.Eq(t, 10*time.Second, due())

	clock.Advance(5 * time.Second)
	must.True(t, h.restore("n1"))
	must.Eq(t, 155*time.Second, due())
	must.False(t, h.restore("n1"), must.Sprint("nothing left to restore"))
	must.False(t, h.pullIn("unknown", time.Second))
}
