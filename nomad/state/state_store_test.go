package state

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Blocking queries compare against Index(table): every write must stamp the
// tables it changed, and only those.
func TestStateStore_IndexTracksTablesWritten(t *testing.T) {
	s := testStateStore(t)
	latest, err := s.LatestIndex()
	must.NoError(t, err)
	must.Eq(t, 0, latest)

	must.NoError(t, s.UpsertNode(5, mock.Node()))
	must.NoError(t, s.UpsertEvals(7, []*structs.Evaluation{mock.Eval()}))

	for table, want := range map[string]uint64{
		TableNodes: 5, TableEvals: 7, TableAllocs: 0, TableJobs: 0,
	} {
		got, err := s.Index(table)
		must.NoError(t, err)
		must.Eq(t, want, got, must.Sprintf("table %s", table))
	}
	latest, err = s.LatestIndex()
	must.NoError(t, err)
	must.Eq(t, 7, latest)
}

// A table's index must never move backwards, or a blocking query could
// answer with an index lower than the one it was asked to exceed.
func TestStateStore_IndexNeverMovesBackwards(t *testing.T) {
	s := testStateStore(t)
	must.NoError(t, s.UpsertNode(10, mock.Node()))
	must.NoError(t, s.UpsertNode(4, mock.Node()))
	got, err := s.Index(TableNodes)
	must.NoError(t, err)
	must.Eq(t, 10, got)
}

// allocQuery is a blocking query over one allocation, as Alloc.GetAlloc makes.
func allocQuery(id string) QueryFn {
	return func(ws memdb.WatchSet, s *StateStore) (any, uint64, error) {
		alloc, err := s.AllocByID(ws, id)
		if err != nil {
			return nil, 0, err
		}
		index, err := s.Index(TableAllocs)
		return alloc, index, err
	}
}

// result carries a BlockingQuery's return values out of its goroutine.
type result struct {
	resp  any
	index uint64
	err   error
}

// A client's blocking query must wake when its allocation changes: that is
// how status reaches the CLI without polling. synctest.Wait makes sure the
// query is asleep on its watch set before the write.
func TestStateStore_BlockingQuery_ReturnsWhenAllocChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := testStateStore(t)
		allocs := jobWithAllocs(t, s, 1000, mock.Job(), "node-1", 1)
		id := allocs[0].ID

		done := make(chan result, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		go func() {
			resp, index, err := s.BlockingQuery(ctx, 1001, allocQuery(id))
			done <- result{resp, index, err}
		}()
		synctest.Wait()
		start := time.Now()

		must.NoError(t, s.UpdateAllocsFromClient(1002, []*structs.Allocation{clientUpdate(id, structs.AllocClientStatusRunning)}))

		r := <-done
		must.NoError(t, r.err)
		must.Eq(t, 1002, r.index)
		must.Eq(t, structs.AllocClientStatusRunning, r.resp.(*structs.Allocation).ClientStatus)
		must.Eq(t, 0, time.Since(start), must.Sprint("woken by the write, not the deadline"))
	})
}

// Racing writes must never pair a stale answer with a newer index: the
// caller would then sleep through the change it missed.
func TestStateStore_BlockingQuery_ConsistentAnswerAndIndex(t *testing.T) {
	s := testStateStore(t)
	allocs := jobWithAllocs(t, s, 1000, mock.Job(), "node-1", 1)
	id := allocs[0].ID

	statuses := []string{structs.AllocClientStatusRunning, structs.AllocClientStatusUnknown}
	writes := make(chan struct{})
	go func() {
		defer close(writes)
		for i := uint64(0); i < 200; i++ {
			_ = s.UpdateAllocsFromClient(1002+i, []*structs.Allocation{clientUpdate(id, statuses[i%2])})
		}
	}()
	for {
		resp, index, err := s.BlockingQuery(context.Background(), 0, allocQuery(id))
		must.NoError(t, err)
		a := resp.(*structs.Allocation)
		must.Eq(t, a.ModifyIndex, index, must.Sprint("answer and index from different moments"))
		select {
		case <-writes:
			return
		default:
		}
	}
}

// A blocking query whose deadline passes answers with what it has and no
// error: upstream's wait= semantics. synctest makes the 5 minutes instant.
func TestStateStore_BlockingQuery_TimesOutWithLastResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := testStateStore(t)
		allocs := jobWithAllocs(t, s, 1000, mock.Job(), "node-1", 1)

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		resp, index, err := s.BlockingQuery(ctx, 1001, allocQuery(allocs[0].ID))
		must.NoError(t, err)
		must.Eq(t, 1001, index)
		must.Eq(t, allocs[0].ID, resp.(*structs.Allocation).ID)
		must.Eq(t, 5*time.Minute, time.Since(start))
	})
}

// Without an index the caller wants the current answer, not a wait.
func TestStateStore_BlockingQuery_MinIndexZeroDoesNotBlock(t *testing.T) {
	s := testStateStore(t)
	runs := 0
	resp, index, err := s.BlockingQuery(context.Background(), 0, func(memdb.WatchSet, *StateStore) (any, uint64, error) {
		runs++
		return "now", 0, nil
	})
	must.NoError(t, err)
	must.Eq(t, "now", resp.(string))
	must.Eq(t, 0, index)
	must.Eq(t, 1, runs)
}

// A query error is not something waiting can fix.
func TestStateStore_BlockingQuery_ReturnsQueryError(t *testing.T) {
	s := testStateStore(t)
	_, _, err := s.BlockingQuery(context.Background(), 10, func(memdb.WatchSet, *StateStore) (any, uint64, error) {
		return nil, 0, structs.ErrUnknownAlloc
	})
	must.ErrorIs(t, err, structs.ErrUnknownAlloc)
}

// After a snapshot restore the old store never changes again; its waiting
// queries must be released rather than left to their deadline.
func TestStateStore_BlockingQuery_ReleasedByAbandon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := testStateStore(t)
		allocs := jobWithAllocs(t, s, 1000, mock.Job(), "node-1", 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()

		done := make(chan result, 1)
		go func() {
			resp, index, err := s.BlockingQuery(ctx, 1001, allocQuery(allocs[0].ID))
			done <- result{resp, index, err}
		}()
		synctest.Wait()
		start := time.Now()
		s.Abandon()
		s.Abandon() // idempotent
		r := <-done
		must.NoError(t, r.err)
		must.Eq(t, 1001, r.index)
		must.Eq(t, 0, time.Since(start))
	})
}

// A scheduler must work from state at least as new as its evaluation.
func TestStateStore_SnapshotMinIndex_WaitsForIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := testStateStore(t)
		must.NoError(t, s.UpsertNode(10, mock.Node()))

		type snapResult struct {
			snap *StateSnapshot
			err  error
		}
		done := make(chan snapResult, 1)
		go func() {
			snap, err := s.SnapshotMinIndex(context.Background(), 12)
			done <- snapResult{snap, err}
		}()
		notYet := func() {
			synctest.Wait()
			select {
			case <-done:
				t.Fatal("snapshot taken before index 12 was applied")
			default:
			}
		}
		notYet()
		must.NoError(t, s.UpsertNode(11, mock.Node()))
		notYet()

		node := mock.Node()
		must.NoError(t, s.UpsertNode(12, node))
		r := <-done
		must.NoError(t, r.err)
		snap := r.snap
		out, err := snap.NodeByID(nil, node.ID)
		must.NoError(t, err)
		must.NotNil(t, out)
	})
}

// A worker whose deadline passes gets an error it can test with errors.Is.
func TestStateStore_SnapshotMinIndex_ContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := testStateStore(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := s.SnapshotMinIndex(ctx, 1)
		must.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

// An abandoned store will never reach the index; waiting on it is an error.
func TestStateStore_SnapshotMinIndex_Abandoned(t *testing.T) {
	s := testStateStore(t)
	s.Abandon()
	_, err := s.SnapshotMinIndex(context.Background(), 1)
	must.ErrorIs(t, err, ErrAbandoned)
}

// The scheduler reads a snapshot while the FSM keeps writing: it must see
// one consistent moment, and its own dry-run writes must not leak back.
func TestStateStore_SnapshotIsolation(t *testing.T) {
	s := testStateStore(t)
	job := mock.Job()
	allocs := jobWithAllocs(t, s, 1000, job, "node-1", 1)

	snap, err := s.Snapshot()
	must.NoError(t, err)

	must.NoError(t, s.UpdateAllocsFromClient(1002, []*structs.Allocation{clientUpdate(allocs[0].ID, structs.AllocClientStatusRunning)}))
	later := mock.Node()
	must.NoError(t, s.UpsertNode(1003, later))

	old, err := snap.AllocByID(nil, allocs[0].ID)
	must.NoError(t, err)
	must.Eq(t, structs.AllocClientStatusPending, old.ClientStatus)
	must.Eq(t, 1, summaryOf(t, &snap.StateStore, job).Starting)
	n, err := snap.NodeByID(nil, later.ID)
	must.NoError(t, err)
	must.Nil(t, n)
	idx, err := snap.LatestIndex()
	must.NoError(t, err)
	must.Eq(t, 1001, idx)

	dryRun := mock.Node()
	must.NoError(t, snap.UpsertNode(2000, dryRun))
	n, err = s.NodeByID(nil, dryRun.ID)
	must.NoError(t, err)
	must.Nil(t, n)
}

// OnCommit hears every committed write with its index and the objects it
// changed, and nothing of a write to a snapshot (a scheduler's dry run)
// nor of a write that fails: the event stream is built from it and must
// tell only what the state holds.
func TestStateStore_OnCommit(t *testing.T) {
	type call struct {
		index   uint64
		changes memdb.Changes
	}
	var calls []call
	s, err := NewStateStore(&StateStoreConfig{OnCommit: func(index uint64, changes memdb.Changes) {
		calls = append(calls, call{index, changes})
	}})
	must.NoError(t, err)

	node := mock.Node()
	must.NoError(t, s.UpsertNode(7, node))
	must.SliceLen(t, 1, calls)
	must.Eq(t, 7, calls[0].index)
	var nodes int
	for _, c := range calls[0].changes {
		if c.Table == TableNodes {
			nodes++
			must.Eq(t, node, c.After.(*structs.Node))
		}
	}
	must.Eq(t, 1, nodes)

	snap, err := s.Snapshot()
	must.NoError(t, err)
	must.NoError(t, snap.UpsertNode(8, mock.Node()))
	must.Error(t, s.UpsertAllocs(9, []*structs.Allocation{{ID: "no-job"}}))
	must.SliceLen(t, 1, calls, must.Sprint("neither the snapshot's write nor the failed one is heard"))
}
