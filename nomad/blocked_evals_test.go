package nomad

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// testBlocked returns enabled BlockedEvals feeding an enabled broker.
func testBlocked(t *testing.T) (*BlockedEvals, *EvalBroker) {
	t.Helper()
	broker := testBroker(t, testBrokerConfig())
	blocked := NewBlockedEvals(broker, nil)
	blocked.SetEnabled(true)
	return blocked, broker
}

// blockedEvalFor returns a blocked evaluation of job, created at
// createIndex from a snapshot at the same index.
func blockedEvalFor(job string, createIndex uint64) *structs.Evaluation {
	e := evalFor(job, 50, createIndex)
	e.Status = structs.EvalStatusBlocked
	e.TriggeredBy = structs.EvalTriggerQueuedAllocs
	e.SnapshotIndex = createIndex
	return e
}

// readyIDs drains the broker's ready service evaluations, acking each.
func readyIDs(t *testing.T, b *EvalBroker) []string {
	t.Helper()
	var ids []string
	for {
		e, token, err := b.Dequeue([]string{structs.JobTypeService, structs.JobTypeSystem}, time.Nanosecond)
		must.NoError(t, err)
		if e == nil {
			return ids
		}
		must.Eq(t, structs.EvalStatusBlocked, e.Status, must.Sprint("an unblocked evaluation keeps its blocked status so the scheduler reblocks it rather than creating another"))
		ids = append(ids, e.ID)
		must.NoError(t, b.Ack(e.ID, token))
	}
}

// TestBlockedEvals_UnblockNodeReleasesToBroker checks that capacity on a
// node sends the waiting evaluations to the broker, so queued allocations
// get placed without operator action.
func TestBlockedEvals_UnblockNodeReleasesToBroker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked, broker := testBlocked(t)
		a := blockedEvalFor("a", 10)
		b := blockedEvalFor("b", 11)
		blocked.Block(a)
		blocked.Block(b)
		must.Eq(t, BlockedStats{TotalBlocked: 2}, blocked.Stats())
		must.SliceEmpty(t, readyIDs(t, broker), must.Sprint("blocked evaluations are not scheduled"))

		blocked.UnblockNode("node-1", 20)
		must.Eq(t, BlockedStats{}, blocked.Stats())
		must.SliceContainsAll(t, []string{a.ID, b.ID}, readyIDs(t, broker))
		must.Eq(t, structs.EvalStatusBlocked, a.Status, must.Sprint("the caller's object is not changed"))
	})
}

// TestBlockedEvals_UnblockByClassEligibility checks that a change to a class
// releases only evaluations it may help: those that found the class
// eligible, never saw it, or escaped class-based feasibility.
func TestBlockedEvals_UnblockByClassEligibility(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked, broker := testBlocked(t)
		eligible := blockedEvalFor("eligible", 10)
		eligible.ClassEligibility = map[string]bool{"gpu": true}
		ineligible := blockedEvalFor("ineligible", 11)
		ineligible.ClassEligibility = map[string]bool{"gpu": false, "cpu": true}
		unknown := blockedEvalFor("unknown", 12)
		unknown.ClassEligibility = map[string]bool{"cpu": true}
		escaped := blockedEvalFor("escaped", 13)
		escaped.ClassEligibility = map[string]bool{"gpu": false}
		escaped.EscapedComputedClass = true
		for _, e := range []*structs.Evaluation{eligible, ineligible, unknown, escaped} {
			blocked.Block(e)
		}
		must.Eq(t, 1, blocked.Stats().TotalEscaped)

		blocked.Unblock("gpu", 20)
		must.SliceContainsAll(t, []string{eligible.ID, unknown.ID, escaped.ID}, readyIDs(t, broker))
		must.Eq(t, 1, blocked.Stats().TotalBlocked)

		blocked.Unblock("cpu", 21)
		must.Eq(t, []string{ineligible.ID}, readyIDs(t, broker))
	})
}

// TestBlockedEvals_NodeSpecific checks that an evaluation pinned to a node
// (a system job) waits for that node only: capacity elsewhere cannot help.
func TestBlockedEvals_NodeSpecific(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked, broker := testBlocked(t)
		pinned := blockedEvalFor("sys", 10)
		pinned.Type = structs.JobTypeSystem
		pinned.NodeID = "node-1"
		blocked.Block(pinned)
		must.Eq(t, BlockedStats{TotalBlocked: 1, TotalNodeBlocked: 1}, blocked.Stats())

		blocked.Unblock("any-class", 20)
		blocked.UnblockNode("node-2", 21)
		must.SliceEmpty(t, readyIDs(t, broker))

		blocked.UnblockNode("node-1", 22)
		must.Eq(t, []string{pinned.ID}, readyIDs(t, broker))
	})
}

// TestBlockedEvals_OnePerJob checks that a job keeps only its newest blocked
// evaluation and that the superseded one is handed to the leader, marked
// canceled, whichever order they arrive in.
func TestBlockedEvals_OnePerJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked, broker := testBlocked(t)
		older := blockedEvalFor("web", 10)
		newer := blockedEvalFor("web", 20)
		oldest := blockedEvalFor("web", 5)

		blocked.Block(older)
		blocked.Block(newer)
		blocked.Block(oldest)
		must.Eq(t, BlockedStats{TotalBlocked: 1, TotalDuplicates: 2}, blocked.Stats())

		dups := blocked.GetDuplicates(time.Second)
		must.SliceLen(t, 2, dups)
		must.Eq(t, older.ID, dups[0].ID)
		must.Eq(t, oldest.ID, dups[1].ID)
		for _, d := range dups {
			must.Eq(t, structs.EvalStatusCancelled, d.Status)
		}

		blocked.UnblockNode("node-1", 30)
		must.Eq(t, []string{newer.ID}, readyIDs(t, broker))
	})
}

// TestBlockedEvals_MissedUnblock checks that an evaluation whose scheduler
// snapshot predates a relevant unblock is released at once: the capacity it
// waits for arrived while it was being scheduled, and no later unblock may
// ever come.
func TestBlockedEvals_MissedUnblock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked, broker := testBlocked(t)
		blocked.Unblock("gpu", 100)

		stale := blockedEvalFor("stale", 90)
		stale.ClassEligibility = map[string]bool{"gpu": true}
		staleIneligible := blockedEvalFor("stale-ineligible", 91)
		staleIneligible.ClassEligibility = map[string]bool{"gpu": false}
		fresh := blockedEvalFor("fresh", 110)
		fresh.ClassEligibility = map[string]bool{"gpu": true}
		for _, e := range []*structs.Evaluation{stale, staleIneligible, fresh} {
			blocked.Block(e)
		}
		must.Eq(t, []string{stale.ID}, readyIDs(t, broker))
		must.Eq(t, 2, blocked.Stats().TotalBlocked)

		blocked.UnblockNode("node-1", 200)
		readyIDs(t, broker)
		pinned := blockedEvalFor("sys", 150)
		pinned.NodeID = "node-1"
		anyClass := blockedEvalFor("any", 150)
		blocked.Block(pinned)
		blocked.Block(anyClass)
		must.SliceContainsAll(t, []string{pinned.ID, anyClass.ID}, readyIDs(t, broker))
	})
}

// TestBlockedEvals_ReblockWaitsForAck checks that an evaluation reblocked by
// the worker still holding it, then unblocked before that worker acks, runs
// again only after the ack, so its job is never scheduled twice at once.
func TestBlockedEvals_ReblockWaitsForAck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked, broker := testBlocked(t)
		e := blockedEvalFor("web", 10)
		blocked.Block(e)
		blocked.UnblockNode("node-1", 20)
		got, token := mustDequeue(t, broker)
		must.Eq(t, e.ID, got.ID)

		again := got.Copy()
		again.Status = structs.EvalStatusBlocked
		again.SnapshotIndex = 25
		blocked.Block(again) // the FSM applies the reblock first
		blocked.Reblock(again, token)
		blocked.UnblockNode("node-1", 30)
		mustNotDequeue(t, broker)

		must.NoError(t, broker.Ack(e.ID, token))
		got, _ = mustDequeue(t, broker)
		must.Eq(t, e.ID, got.ID)
		must.Eq(t, uint64(25), got.SnapshotIndex)
	})
}

// TestBlockedEvals_Untrack checks that a deregistered job, or one whose
// evaluation placed everything, stops waiting for capacity.
func TestBlockedEvals_Untrack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked, broker := testBlocked(t)
		web := blockedEvalFor("web", 10)
		pinned := blockedEvalFor("web", 11)
		pinned.NodeID = "node-1"
		db := blockedEvalFor("db", 12)
		for _, e := range []*structs.Evaluation{web, pinned, db} {
			blocked.Block(e)
		}
		blocked.Untrack(structs.DefaultNamespace, "web")
		blocked.Untrack("other-namespace", "db")
		must.Eq(t, 1, blocked.Stats().TotalBlocked)

		blocked.UnblockNode("node-1", 20)
		must.Eq(t, []string{db.ID}, readyIDs(t, broker))
	})
}

// TestBlockedEvals_DisableFlushes checks that a server that is not leader
// tracks nothing, and that stepping down forgets everything and releases
// the leader's duplicate reaper.
func TestBlockedEvals_DisableFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker := testBroker(t, testBrokerConfig())
		blocked := NewBlockedEvals(broker, nil)
		blocked.Block(blockedEvalFor("web", 10))
		must.Eq(t, BlockedStats{}, blocked.Stats(), must.Sprint("disabled tracks nothing"))

		blocked.SetEnabled(true)
		blocked.Block(blockedEvalFor("web", 10))
		blocked.Unblock("gpu", 50)

		done := make(chan []*structs.Evaluation, 1)
		go func() { done <- blocked.GetDuplicates(0) }()
		synctest.Wait()
		blocked.SetEnabled(false)
		must.Nil(t, <-done)
		must.Eq(t, BlockedStats{}, blocked.Stats())

		// Unblock indexes are forgotten too: a new term starts clean.
		blocked.SetEnabled(true)
		stale := blockedEvalFor("db", 20)
		blocked.Block(stale)
		must.Eq(t, 1, blocked.Stats().TotalBlocked)
	})
}

// TestBlockedEvals_GetDuplicatesWaits checks that the reaper sleeps until a
// duplicate appears or its timeout passes, instead of polling.
func TestBlockedEvals_GetDuplicatesWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked, _ := testBlocked(t)
		start := time.Now()
		must.Nil(t, blocked.GetDuplicates(3*time.Second))
		must.Eq(t, 3*time.Second, time.Since(start))

		go func() {
			time.Sleep(time.Second)
			blocked.Block(blockedEvalFor("web", 1))
			blocked.Block(blockedEvalFor("web", 2))
		}()
		start = time.Now()
		dups := blocked.GetDuplicates(0)
		must.SliceLen(t, 1, dups)
		must.Eq(t, time.Second, time.Since(start))
	})
}
