package nomad

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// testBrokerConfig uses distinct durations so a test failure shows which
// timer fired.
func testBrokerConfig() EvalBrokerConfig {
	return EvalBrokerConfig{
		NackTimeout:         5 * time.Second,
		InitialNackDelay:    time.Second,
		SubsequentNackDelay: 3 * time.Second,
		DeliveryLimit:       3,
	}
}

// testBroker returns an enabled broker on the real clock, which is the fake
// clock when called inside a synctest bubble.
func testBroker(t must.T, cfg EvalBrokerConfig) *EvalBroker {
	t.Helper()
	b, err := NewEvalBroker(cfg)
	must.NoError(t, err)
	b.SetEnabled(true)
	return b
}

// evalFor returns a pending service evaluation of job with the given
// priority and create index.
func evalFor(job string, priority int, createIndex uint64) *structs.Evaluation {
	e := mock.Eval()
	e.JobID = job
	e.Priority = priority
	e.CreateIndex = createIndex
	e.ModifyIndex = createIndex
	return e
}

// advance moves the bubble's fake clock by d and lets every timer callback
// that fired finish.
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// mustDequeue dequeues without waiting and fails when nothing is ready.
func mustDequeue(t *testing.T, b *EvalBroker, schedulers ...string) (*structs.Evaluation, string) {
	t.Helper()
	if len(schedulers) == 0 {
		schedulers = []string{structs.JobTypeService}
	}
	e, token, err := b.Dequeue(schedulers, time.Nanosecond)
	must.NoError(t, err)
	must.NotNil(t, e, must.Sprint("expected a ready evaluation"))
	return e, token
}

// mustNotDequeue checks that nothing is ready.
func mustNotDequeue(t *testing.T, b *EvalBroker, schedulers ...string) {
	t.Helper()
	if len(schedulers) == 0 {
		schedulers = []string{structs.JobTypeService}
	}
	e, _, err := b.Dequeue(schedulers, time.Nanosecond)
	must.NoError(t, err)
	must.Nil(t, e, must.Sprint("expected nothing ready"))
}

// TestNewEvalBroker_RejectsBadConfig checks that a broker which could never
// redeliver (no timeout) or never deliver (no limit) is refused up front.
func TestNewEvalBroker_RejectsBadConfig(t *testing.T) {
	cfg := testBrokerConfig()
	cfg.NackTimeout = 0
	_, err := NewEvalBroker(cfg)
	must.Error(t, err)

	cfg = testBrokerConfig()
	cfg.DeliveryLimit = 0
	_, err = NewEvalBroker(cfg)
	must.Error(t, err)
}

// TestEvalBroker_DequeueByPriorityThenCreateIndex checks the delivery order:
// urgent jobs first, and among equals the oldest evaluation first, so no
// evaluation starves behind later ones of its priority.
func TestEvalBroker_DequeueByPriorityThenCreateIndex(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		low := evalFor("low", 10, 1)
		midNew := evalFor("mid-new", 50, 9)
		midOld := evalFor("mid-old", 50, 4)
		high := evalFor("high", 90, 12)
		for _, e := range []*structs.Evaluation{low, midNew, midOld, high} {
			b.Enqueue(e)
		}
		must.Eq(t, 4, b.Stats().TotalReady)

		for _, want := range []*structs.Evaluation{high, midOld, midNew, low} {
			got, _ := mustDequeue(t, b)
			must.Eq(t, want.ID, got.ID)
		}
		mustNotDequeue(t, b)
	})
}

// TestEvalBroker_FIFOAmongEquals checks that evaluations equal in priority
// and create index come out in the order they were enqueued.
func TestEvalBroker_FIFOAmongEquals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		var want []string
		for i := range 20 {
			e := evalFor(fmt.Sprintf("job-%d", i), 50, 7)
			want = append(want, e.ID)
			b.Enqueue(e)
		}
		for _, id := range want {
			got, _ := mustDequeue(t, b)
			must.Eq(t, id, got.ID)
		}
	})
}

// TestEvalBroker_DequeueAcrossSchedulers checks that a worker serving
// several schedulers gets the most urgent evaluation of any of them, and
// nothing of schedulers it does not serve.
func TestEvalBroker_DequeueAcrossSchedulers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		svc := evalFor("svc", 50, 1)
		batch := evalFor("batch", 70, 2)
		batch.Type = structs.JobTypeBatch
		sys := evalFor("sys", 99, 3)
		sys.Type = structs.JobTypeSystem
		b.Enqueue(svc)
		b.Enqueue(batch)
		b.Enqueue(sys)

		both := []string{structs.JobTypeService, structs.JobTypeBatch}
		got, _ := mustDequeue(t, b, both...)
		must.Eq(t, batch.ID, got.ID)
		got, _ = mustDequeue(t, b, both...)
		must.Eq(t, svc.ID, got.ID)
		mustNotDequeue(t, b, both...)

		st := b.Stats()
		must.Eq(t, 1, st.ByScheduler[structs.JobTypeSystem].Ready)
		must.Eq(t, 1, st.ByScheduler[structs.JobTypeService].Unacked)
		must.Eq(t, 1, st.ByScheduler[structs.JobTypeBatch].Unacked)
	})
}

// TestEvalBroker_OneOutstandingPerJob checks that further evaluations of a
// job wait while one is outstanding, and that after the ack only the newest
// runs while the older ones are handed back for cancellation: two
// schedulers on one job would write conflicting plans, and the newest
// evaluation already sees everything the older ones would.
func TestEvalBroker_OneOutstandingPerJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		first := evalFor("web", 50, 1)
		older := evalFor("web", 50, 2)
		newest := evalFor("web", 50, 3)
		other := evalFor("db", 50, 4)
		b.Enqueue(first)
		b.Enqueue(newest)
		b.Enqueue(older) // arrival order must not matter
		b.Enqueue(other)

		got, token := mustDequeue(t, b)
		must.Eq(t, first.ID, got.ID)
		got2, token2 := mustDequeue(t, b)
		must.Eq(t, other.ID, got2.ID, must.Sprint("another job is not held up"))
		mustNotDequeue(t, b)
		must.Eq(t, 2, b.Stats().TotalBlocked)

		must.NoError(t, b.Ack(first.ID, token))
		must.NoError(t, b.Ack(other.ID, token2))
		got, token = mustDequeue(t, b)
		must.Eq(t, newest.ID, got.ID)
		mustNotDequeue(t, b)

		canceled := b.Cancelable(10)
		must.SliceLen(t, 1, canceled)
		must.Eq(t, older.ID, canceled[0].ID)
		must.Eq(t, structs.EvalStatusCancelled, canceled[0].Status)
		must.Eq(t, structs.EvalStatusPending, older.Status, must.Sprint("the caller's object is not changed"))
		must.SliceEmpty(t, b.Cancelable(10))

		must.NoError(t, b.Ack(newest.ID, token))
		st := b.Stats()
		must.Eq(t, 0, st.TotalReady+st.TotalUnacked+st.TotalBlocked+st.TotalWaiting)
	})
}

// TestEvalBroker_CoreEvalsNotSerialized checks that core (GC) evaluations,
// which are not jobs, are not held behind each other.
func TestEvalBroker_CoreEvalsNotSerialized(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		for i := range 2 {
			e := evalFor(structs.CoreJobEvalGC, 200, uint64(i+1))
			e.Type = structs.JobTypeCore
			b.Enqueue(e)
		}
		mustDequeue(t, b, structs.JobTypeCore)
		mustDequeue(t, b, structs.JobTypeCore)
	})
}

// TestEvalBroker_EnqueueIsIdempotent checks that handing the broker an
// evaluation it already holds does not deliver it twice; the FSM relies on
// this when it replays pending evaluations.
func TestEvalBroker_EnqueueIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		e := evalFor("web", 50, 1)
		b.Enqueue(e)
		b.Enqueue(e)
		_, token := mustDequeue(t, b)
		b.Enqueue(e)
		mustNotDequeue(t, b)
		must.Eq(t, 0, b.Stats().TotalBlocked)
		must.NoError(t, b.Ack(e.ID, token))
	})
}

// TestEvalBroker_NackRedeliversAfterDelay checks that a nacked evaluation
// comes back exactly after InitialNackDelay, then SubsequentNackDelay, with
// a new token, so a failing evaluation does not spin the workers.
func TestEvalBroker_NackRedeliversAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testBrokerConfig()
		b := testBroker(t, cfg)
		e := evalFor("web", 50, 1)
		b.Enqueue(e)
		_, token1 := mustDequeue(t, b)

		// A newer evaluation of the job must still wait: the nacked one
		// keeps the job until it is acked.
		b.Enqueue(evalFor("web", 50, 2))

		start := time.Now()
		must.NoError(t, b.Nack(e.ID, token1))
		must.Eq(t, 1, b.Stats().TotalWaiting)
		_, ok := b.Outstanding(e.ID)
		must.False(t, ok)

		got, _, err := b.Dequeue([]string{structs.JobTypeService}, cfg.InitialNackDelay-time.Nanosecond)
		must.NoError(t, err)
		must.Nil(t, got, must.Sprint("redelivered before the delay"))

		got, token2, err := b.Dequeue([]string{structs.JobTypeService}, 0)
		must.NoError(t, err)
		must.Eq(t, e.ID, got.ID)
		must.Eq(t, cfg.InitialNackDelay, time.Since(start))
		must.NotEq(t, token1, token2)

		start = time.Now()
		must.NoError(t, b.Nack(e.ID, token2))
		got, _, err = b.Dequeue([]string{structs.JobTypeService}, 0)
		must.NoError(t, err)
		must.Eq(t, e.ID, got.ID)
		must.Eq(t, cfg.SubsequentNackDelay, time.Since(start))
	})
}

// TestEvalBroker_NackTimeoutRedelivers checks that an evaluation whose
// worker goes silent is taken back after NackTimeout and redelivered, and
// that the silent worker's token is then refused.
func TestEvalBroker_NackTimeoutRedelivers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testBrokerConfig()
		b := testBroker(t, cfg)
		e := evalFor("web", 50, 1)
		b.Enqueue(e)
		start := time.Now()
		_, stale := mustDequeue(t, b)

		advance(cfg.NackTimeout - time.Nanosecond)
		token, ok := b.Outstanding(e.ID)
		must.True(t, ok)
		must.Eq(t, stale, token)

		got, fresh, err := b.Dequeue([]string{structs.JobTypeService}, 0)
		must.NoError(t, err)
		must.Eq(t, e.ID, got.ID)
		must.Eq(t, cfg.NackTimeout+cfg.InitialNackDelay, time.Since(start))

		must.ErrorIs(t, b.Ack(e.ID, stale), ErrTokenMismatch)
		must.NoError(t, b.Ack(e.ID, fresh))
	})
}

// TestEvalBroker_DeliveryLimitMovesToFailedQueue checks that an evaluation
// nacked DeliveryLimit times stops going to schedulers and lands in the
// failed queue for the leader, still holding its job.
func TestEvalBroker_DeliveryLimitMovesToFailedQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testBrokerConfig()
		b := testBroker(t, cfg)
		e := evalFor("web", 50, 1)
		b.Enqueue(e)
		for range cfg.DeliveryLimit {
			got, token, err := b.Dequeue([]string{structs.JobTypeService}, 0)
			must.NoError(t, err)
			must.Eq(t, e.ID, got.ID)
			must.NoError(t, b.Nack(e.ID, token))
		}
		must.Eq(t, 1, b.Stats().ByScheduler[FailedQueue].Ready)
		advance(time.Hour)
		mustNotDequeue(t, b)

		next := evalFor("web", 50, 2)
		b.Enqueue(next)
		got, token := mustDequeue(t, b, FailedQueue)
		must.Eq(t, e.ID, got.ID)
		mustNotDequeue(t, b)

		must.NoError(t, b.Ack(e.ID, token))
		got, _ = mustDequeue(t, b)
		must.Eq(t, next.ID, got.ID)
	})
}

// TestEvalBroker_WaitUntilHeldUntilInstant checks that delayed evaluations
// are delivered at their instant, not a moment before, in instant order
// whatever their arrival order (the single timer is re-armed for an earlier
// arrival).
func TestEvalBroker_WaitUntilHeldUntilInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		start := time.Now()
		late := evalFor("late", 50, 1)
		late.WaitUntil = start.Add(10 * time.Second)
		early := evalFor("early", 50, 2)
		early.WaitUntil = start.Add(4 * time.Second)
		waiting := evalFor("waiting", 50, 3)
		waiting.Wait = 7 * time.Second
		past := evalFor("past", 50, 4)
		past.WaitUntil = start.Add(-time.Minute)

		b.Enqueue(late)
		b.Enqueue(early)
		b.Enqueue(waiting)
		b.Enqueue(past)
		must.Eq(t, 3, b.Stats().TotalWaiting)

		got, token := mustDequeue(t, b)
		must.Eq(t, past.ID, got.ID, must.Sprint("an instant in the past is not a delay"))
		must.NoError(t, b.Ack(past.ID, token))

		for _, want := range []struct {
			eval *structs.Evaluation
			at   time.Duration
		}{{early, 4 * time.Second}, {waiting, 7 * time.Second}, {late, 10 * time.Second}} {
			got, _, err := b.Dequeue([]string{structs.JobTypeService}, want.at-time.Since(start)-time.Nanosecond)
			must.NoError(t, err)
			must.Nil(t, got, must.Sprintf("%s delivered early", want.eval.JobID))

			got, token, err := b.Dequeue([]string{structs.JobTypeService}, 0)
			must.NoError(t, err)
			must.Eq(t, want.eval.ID, got.ID)
			must.Eq(t, want.at, time.Since(start))
			must.NoError(t, b.Ack(got.ID, token))
		}
		must.Eq(t, 0, b.Stats().TotalWaiting)
	})
}

// TestEvalBroker_DisableFlushesAndWakesDequeue checks that losing
// leadership empties the broker, stops its timers and releases a worker
// blocked in Dequeue with no evaluation.
func TestEvalBroker_DisableFlushesAndWakesDequeue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		b.Enqueue(evalFor("a", 50, 1))
		_, _ = mustDequeue(t, b)
		b.Enqueue(evalFor("a", 50, 2))
		delayed := evalFor("b", 50, 3)
		delayed.WaitUntil = time.Now().Add(time.Minute)
		b.Enqueue(delayed)

		type result struct {
			eval  *structs.Evaluation
			token string
			err   error
		}
		done := make(chan result, 1)
		go func() {
			e, tok, err := b.Dequeue([]string{structs.JobTypeService}, 0)
			done <- result{e, tok, err}
		}()
		synctest.Wait()

		b.SetEnabled(false)
		r := <-done
		must.NoError(t, r.err)
		must.Nil(t, r.eval)
		must.Eq(t, "", r.token)
		must.Eq(t, BrokerStats{ByScheduler: map[string]*SchedulerStats{}}, b.Stats())

		_, _, err := b.Dequeue([]string{structs.JobTypeService}, time.Second)
		must.ErrorIs(t, err, ErrBrokerDisabled)
		b.Enqueue(evalFor("c", 50, 4))
		must.Eq(t, 0, b.Stats().TotalReady, must.Sprint("a disabled broker accepts nothing"))

		// Timers armed before the flush must not resurrect anything.
		b.SetEnabled(true)
		advance(time.Hour)
		must.Eq(t, BrokerStats{ByScheduler: map[string]*SchedulerStats{}}, b.Stats())
	})
}

// TestEvalBroker_TokenAndOutstandingErrors checks that only the holder of
// the current delivery can complete, extend or pause it.
func TestEvalBroker_TokenAndOutstandingErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		e := evalFor("web", 50, 1)
		b.Enqueue(e)
		must.ErrorIs(t, b.Ack(e.ID, "x"), ErrNotOutstanding, must.Sprint("ready but not dequeued"))

		_, token := mustDequeue(t, b)
		must.ErrorIs(t, b.Ack(e.ID, "wrong"), ErrTokenMismatch)
		must.ErrorIs(t, b.Ack(e.ID, "wrong"), structs.ErrTokenMismatch)
		must.ErrorIs(t, b.Nack(e.ID, "wrong"), ErrTokenMismatch)
		must.ErrorIs(t, b.OutstandingReset(e.ID, "wrong"), ErrTokenMismatch)
		must.ErrorIs(t, b.PauseNackTimeout(e.ID, "wrong"), ErrTokenMismatch)
		must.ErrorIs(t, b.ResumeNackTimeout(e.ID, "wrong"), ErrTokenMismatch)
		must.ErrorIs(t, b.Ack("unknown", token), ErrNotOutstanding)

		must.NoError(t, b.Ack(e.ID, token))
		must.ErrorIs(t, b.Ack(e.ID, token), ErrNotOutstanding)
		must.ErrorIs(t, b.Nack(e.ID, token), ErrNotOutstanding)
		must.ErrorIs(t, b.OutstandingReset(e.ID, token), ErrNotOutstanding)
	})
}

// TestEvalBroker_OutstandingResetExtends checks that a worker making
// progress keeps its delivery past the original nack timeout, and loses it
// one full timeout after its last reset.
func TestEvalBroker_OutstandingResetExtends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testBrokerConfig()
		b := testBroker(t, cfg)
		e := evalFor("web", 50, 1)
		b.Enqueue(e)
		_, token := mustDequeue(t, b)

		for range 3 {
			advance(cfg.NackTimeout - time.Second)
			must.NoError(t, b.OutstandingReset(e.ID, token))
		}
		advance(cfg.NackTimeout - time.Nanosecond)
		_, ok := b.Outstanding(e.ID)
		must.True(t, ok, must.Sprint("taken back before a full timeout after the reset"))

		advance(time.Nanosecond)
		_, ok = b.Outstanding(e.ID)
		must.False(t, ok)
		must.ErrorIs(t, b.OutstandingReset(e.ID, token), ErrNotOutstanding)
	})
}

// TestEvalBroker_PauseNackTimeout checks that a delivery whose plan waits in
// the plan queue is not taken back however long the wait, and that resuming
// grants a full timeout again.
func TestEvalBroker_PauseNackTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testBrokerConfig()
		b := testBroker(t, cfg)
		e := evalFor("web", 50, 1)
		b.Enqueue(e)
		_, token := mustDequeue(t, b)

		advance(cfg.NackTimeout - time.Second)
		must.NoError(t, b.PauseNackTimeout(e.ID, token))
		must.NoError(t, b.OutstandingReset(e.ID, token), must.Sprint("a reset while paused is harmless"))
		advance(10 * cfg.NackTimeout)
		must.NoError(t, b.ResumeNackTimeout(e.ID, token))
		advance(cfg.NackTimeout - time.Nanosecond)
		_, ok := b.Outstanding(e.ID)
		must.True(t, ok)
		advance(time.Nanosecond)
		_, ok = b.Outstanding(e.ID)
		must.False(t, ok)
	})
}

// TestEvalBroker_EnqueueAllWaitsForAck checks that a new version of an
// outstanding evaluation, submitted with its delivery token, runs only
// after that delivery is acked, and is dropped if the delivery is nacked
// (the nack redelivers the evaluation anyway).
func TestEvalBroker_EnqueueAllWaitsForAck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		e := evalFor("web", 50, 1)
		b.Enqueue(e)
		_, token := mustDequeue(t, b)

		again := e.Copy()
		again.ModifyIndex = 9
		b.EnqueueAll(map[*structs.Evaluation]string{again: token})
		mustNotDequeue(t, b)
		must.NoError(t, b.Ack(e.ID, token))
		got, token := mustDequeue(t, b)
		must.Eq(t, uint64(9), got.ModifyIndex)

		b.EnqueueAll(map[*structs.Evaluation]string{again.Copy(): token, evalFor("db", 50, 2): ""})
		must.NoError(t, b.Nack(e.ID, token))
		advance(time.Minute)
		_, token = mustDequeue(t, b)
		must.NoError(t, b.Ack(e.ID, token))
		got, token = mustDequeue(t, b)
		must.Eq(t, "db", got.JobID)
		must.NoError(t, b.Ack(got.ID, token))
		mustNotDequeue(t, b)
	})
}

// TestEvalBroker_DequeueCtx checks that a worker shutting down gets its
// context's error, not an empty poll, and that a ready evaluation wakes it.
func TestEvalBroker_DequeueCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := testBroker(t, testBrokerConfig())
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			time.Sleep(time.Second)
			cancel()
		}()
		_, _, err := b.DequeueCtx(ctx, []string{structs.JobTypeService}, 0)
		must.ErrorIs(t, err, context.Canceled)

		e := evalFor("web", 50, 1)
		go func() {
			time.Sleep(time.Second)
			b.Enqueue(e)
		}()
		got, _, err := b.DequeueCtx(t.Context(), []string{structs.JobTypeService}, 0)
		must.NoError(t, err)
		must.Eq(t, e.ID, got.ID)
	})
}

// TestEvalBroker_PropertyNeverTwoOfAJob checks, over random interleavings of
// enqueues, dequeues, acks, nacks and elapsed time, that no two evaluations
// of one job are ever outstanding together, and that every evaluation is
// eventually either acked or handed back for cancellation, exactly once.
//
// It runs on manualClock rather than in a synctest bubble because rapid
// measures its own time budget, which a bubble's fake clock would exhaust.
func TestEvalBroker_PropertyNeverTwoOfAJob(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := newManualClock()
		cfg := testBrokerConfig()
		cfg.Clock = clock
		b := testBroker(rt, cfg)
		defer b.SetEnabled(false)

		schedulers := []string{structs.JobTypeService, structs.JobTypeBatch, FailedQueue}
		jobs := []string{"a", "b", "c"}
		noWait, cancel := context.WithCancel(context.Background())
		cancel()

		type delivery struct {
			eval  *structs.Evaluation
			token string
		}
		outstanding := map[string]delivery{}
		enqueued := map[string]bool{}
		finished := map[string]string{} // eval ID → "acked" or "canceled"
		var index uint64

		finish := func(rt *rapid.T, id, how string) {
			prev, dup := finished[id]
			must.False(rt, dup, must.Sprintf("eval %s %s after it was %s", id, how, prev))
			finished[id] = how
		}
		// forgetExpired drops the deliveries the broker took back.
		forgetExpired := func() {
			for id, d := range outstanding {
				if tok, ok := b.Outstanding(id); !ok || tok != d.token {
					delete(outstanding, id)
				}
			}
		}
		pick := func(rt *rapid.T) (delivery, bool) {
			forgetExpired()
			if len(outstanding) == 0 {
				return delivery{}, false
			}
			ids := slices.Sorted(maps.Keys(outstanding))
			return outstanding[rapid.SampledFrom(ids).Draw(rt, "eval")], true
		}
		collectCanceled := func(rt *rapid.T) {
			for _, c := range b.Cancelable(100) {
				finish(rt, c.ID, "canceled")
			}
		}
		tryDequeue := func(rt *rapid.T) bool {
			forgetExpired()
			e, token, err := b.DequeueCtx(noWait, schedulers, 0)
			if e == nil {
				must.ErrorIs(rt, err, context.Canceled)
				return false
			}
			for _, d := range outstanding {
				must.NotEq(rt, d.eval.JobID, e.JobID,
					must.Sprintf("evals %s and %s of job %s outstanding together", d.eval.ID, e.ID, e.JobID))
			}
			outstanding[e.ID] = delivery{e, token}
			return true
		}
		ack := func(rt *rapid.T, d delivery) {
			must.NoError(rt, b.Ack(d.eval.ID, d.token))
			delete(outstanding, d.eval.ID)
			finish(rt, d.eval.ID, "acked")
			collectCanceled(rt)
		}

		rt.Repeat(map[string]func(*rapid.T){
			"enqueue": func(rt *rapid.T) {
				index++
				job := rapid.SampledFrom(jobs).Draw(rt, "job")
				e := evalFor(job, rapid.IntRange(1, 3).Draw(rt, "priority"), index)
				if rapid.Bool().Draw(rt, "batch") {
					e.Type = structs.JobTypeBatch
				}
				if d := rapid.SampledFrom([]time.Duration{0, 0, time.Second, 4 * time.Second}).Draw(rt, "delay"); d > 0 {
					e.WaitUntil = clock.Now().Add(d)
				}
				enqueued[e.ID] = true
				b.Enqueue(e)
			},
			"dequeue": func(rt *rapid.T) { tryDequeue(rt) },
			"ack": func(rt *rapid.T) {
				if d, ok := pick(rt); ok {
					ack(rt, d)
				}
			},
			"nack": func(rt *rapid.T) {
				if d, ok := pick(rt); ok {
					must.NoError(rt, b.Nack(d.eval.ID, d.token))
					delete(outstanding, d.eval.ID)
				}
			},
			"elapse": func(rt *rapid.T) {
				clock.Advance(rapid.SampledFrom([]time.Duration{time.Second, 3 * time.Second, cfg.NackTimeout}).Draw(rt, "elapse"))
			},
		})

		// Drain: ack whatever is handed out until nothing is left waiting.
		for {
			forgetExpired()
			for _, d := range outstanding {
				ack(rt, d)
			}
			if tryDequeue(rt) {
				continue
			}
			if b.Stats().TotalWaiting == 0 {
				break
			}
			clock.Advance(time.Minute)
		}
		collectCanceled(rt)
		for id := range enqueued {
			_, ok := finished[id]
			must.True(rt, ok, must.Sprintf("eval %s was neither acked nor canceled", id))
		}
		must.MapLen(rt, len(enqueued), finished)
		st := b.Stats()
		must.Eq(rt, 0, st.TotalReady+st.TotalUnacked+st.TotalBlocked+st.TotalWaiting+st.TotalCancelable)
	})
}

// BenchmarkEvalBroker_EnqueueDequeueAck measures the broker's hot path:
// 10,000 evaluations of distinct jobs enqueued, dequeued and acked.
func BenchmarkEvalBroker_EnqueueDequeueAck(b *testing.B) {
	const n = 10_000
	evals := make([]*structs.Evaluation, n)
	for i := range evals {
		evals[i] = evalFor(fmt.Sprintf("job-%d", i), 1+i%100, uint64(i+1))
	}
	cfg := testBrokerConfig()
	cfg.NackTimeout = time.Hour
	schedulers := []string{structs.JobTypeService}
	b.ReportAllocs()
	for b.Loop() {
		broker := testBroker(b, cfg)
		for _, e := range evals {
			broker.Enqueue(e)
		}
		for range n {
			e, token, err := broker.Dequeue(schedulers, 0)
			if err != nil || e == nil {
				b.Fatalf("dequeue: %v %v", e, err)
			}
			if err := broker.Ack(e.ID, token); err != nil {
				b.Fatal(err)
			}
		}
		broker.SetEnabled(false)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/eval")
}

// TestEvalBroker_GiveBack checks that a delivery given back (its worker
// never received it) is ready again at once, under no nack delay, without
// counting against the delivery limit, and with its nack timer stopped;
// a stale token is refused.
func TestEvalBroker_GiveBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testBrokerConfig()
		b := testBroker(t, cfg)
		e := evalFor("web", 50, 1)
		b.Enqueue(e)
		for range cfg.DeliveryLimit + 2 {
			got, token := mustDequeue(t, b)
			must.Eq(t, e.ID, got.ID)
			must.NoError(t, b.GiveBack(got.ID, token))
			must.ErrorIs(t, b.GiveBack(got.ID, token), ErrNotOutstanding)
		}
		got, token := mustDequeue(t, b)
		must.Eq(t, e.ID, got.ID, must.Sprint("still on its own queue, not the failed one"))
		// The nack timers of the given-back deliveries are stopped: only
		// this delivery's fires.
		time.Sleep(cfg.NackTimeout - time.Nanosecond)
		_, ok := b.Outstanding(e.ID)
		must.True(t, ok)
		must.NoError(t, b.Ack(got.ID, token))
	})
}
