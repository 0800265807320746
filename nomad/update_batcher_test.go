package nomad

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock"
)

// recordingCommit is a batcher's commit that records every batch and can
// be held, to see what gathers while a commit is in flight.
type recordingCommit struct {
	mu      sync.Mutex
	batches [][]int
	hold    chan struct{} // when set, the first commit waits for it
	err     error
}

func (r *recordingCommit) commit(items []int) (batchResult, error) {
	r.mu.Lock()
	r.batches = append(r.batches, append([]int(nil), items...))
	n := len(r.batches)
	hold := r.hold
	r.hold = nil
	r.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return batchResult{Index: uint64(n)}, r.err
}

func (r *recordingCommit) seen() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]int(nil), r.batches...)
}

// submitAll submits each item from its own goroutine, in order (each
// waits until the previous one is in), and returns their results.
func submitAll(u *updateBatcher[int], items ...int) func() []batchResult {
	results := make([]batchResult, len(items))
	var wg sync.WaitGroup
	for i, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = u.submit(it, 1).wait()
		}()
		synctest.Wait()
	}
	return func() []batchResult {
		wg.Wait()
		return results
	}
}

// Changes submitted within one window are committed once, together, when
// the window ends, and every submitter learns the one entry's index: what
// turns a thousand nodes returning in the same instant into one raft
// entry instead of a thousand.
func TestUpdateBatcher_WindowGathersOneCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recordingCommit{}
		u := newUpdateBatcher(clock.Real(), 20*time.Millisecond, 0, r.commit)
		results := submitAll(u, 1, 2, 3, 4, 5)
		must.SliceEmpty(t, r.seen(), must.Sprint("nothing is committed before the window ends"))

		time.Sleep(20 * time.Millisecond)
		got := results()
		must.Eq(t, [][]int{{1, 2, 3, 4, 5}}, r.seen())
		for _, res := range got {
			must.Eq(t, 1, res.Index)
		}

		// The next change opens a new batch with its own window.
		more := submitAll(u, 6)
		time.Sleep(20 * time.Millisecond)
		must.Eq(t, 2, more()[0].Index)
		must.Eq(t, [][]int{{1, 2, 3, 4, 5}, {6}}, r.seen())
	})
}

// A batch that reaches its weight bound is committed at once, without
// waiting for its window, so one raft entry never grows past the bound.
func TestUpdateBatcher_FullBatchCommitsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recordingCommit{}
		u := newUpdateBatcher(clock.Real(), time.Hour, 3, r.commit)
		first := u.submit(1, 1)
		res, err := u.submit(2, 2).wait()
		must.NoError(t, err)
		must.Eq(t, 1, res.Index)
		res, err = first.wait()
		must.NoError(t, err)
		must.Eq(t, 1, res.Index)
		must.Eq(t, [][]int{{1, 2}}, r.seen())
	})
}

// Batches are committed in the order they were opened, even when a later
// one is ready first: a client's newer update must never reach raft
// before its older one. While a commit is in flight the next batch keeps
// gathering.
func TestUpdateBatcher_CommitsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		r := &recordingCommit{hold: hold}
		u := newUpdateBatcher(clock.Real(), 20*time.Millisecond, 2, r.commit)
		first := submitAll(u, 1)
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		must.Eq(t, [][]int{{1}}, r.seen(), must.Sprint("the first batch is committing, held"))

		// A batch that fills up behind the held one, then one that waits
		// out its window: neither may pass the first.
		second := submitAll(u, 2, 3)
		third := submitAll(u, 4)
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		must.Eq(t, [][]int{{1}}, r.seen())

		close(hold)
		must.Eq(t, 1, first()[0].Index)
		must.Eq(t, []batchResult{{Index: 2}, {Index: 2}}, second())
		must.Eq(t, 3, third()[0].Index)
		must.Eq(t, [][]int{{1}, {2, 3}, {4}}, r.seen())
	})
}

// Without a window the submitter commits at once, and what arrives while
// that commit is in flight is committed together right after it: no
// added latency when the leader is idle, batching when it is busy.
func TestUpdateBatcher_NoWindowGroupsWhileCommitting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		r := &recordingCommit{hold: hold}
		u := newUpdateBatcher(clock.Real(), 0, 0, r.commit)
		first := submitAll(u, 1)
		must.Eq(t, [][]int{{1}}, r.seen())
		rest := submitAll(u, 2, 3, 4)
		must.Eq(t, [][]int{{1}}, r.seen())
		close(hold)
		must.Eq(t, 1, first()[0].Index)
		for _, res := range rest() {
			must.Eq(t, 2, res.Index)
		}
		must.Eq(t, [][]int{{1}, {2, 3, 4}}, r.seen())
	})
}

// A failed commit fails every change of its batch, so each caller (a
// heartbeat, a missed-heartbeat timer, a client's push) retries: none is
// told it was written when it was not.
func TestUpdateBatcher_ErrorReachesEverySubmitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("no leader")
		r := &recordingCommit{err: boom}
		u := newUpdateBatcher(clock.Real(), time.Millisecond, 0, r.commit)
		a, b := u.submit(1, 1), u.submit(2, 1)
		time.Sleep(time.Millisecond)
		_, errA := a.wait()
		_, errB := b.wait()
		must.ErrorIs(t, errA, boom)
		must.ErrorIs(t, errB, boom)
	})
}
