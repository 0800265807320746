package nomad

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// testPlanQueue returns an enabled plan queue.
func testPlanQueue(t *testing.T) *PlanQueue {
	t.Helper()
	q, err := NewPlanQueue()
	must.NoError(t, err)
	q.SetEnabled(true)
	return q
}

// planFor returns an empty plan of an evaluation with the given priority.
func planFor(evalID string, priority int) *structs.Plan {
	return &structs.Plan{EvalID: evalID, EvalToken: "token-" + evalID, Priority: priority}
}

// TestPlanQueue_DequeueByPriorityThenFIFO checks that the applier takes the
// most urgent plan first and equal plans in submission order, so an urgent
// job is not stuck behind a backlog and no plan starves among equals.
func TestPlanQueue_DequeueByPriorityThenFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := testPlanQueue(t)
		for _, p := range []*structs.Plan{planFor("low", 10), planFor("mid1", 50), planFor("high", 90), planFor("mid2", 50), planFor("mid3", 50)} {
			_, err := q.Enqueue(p)
			must.NoError(t, err)
		}
		must.Eq(t, PlanQueueStats{Depth: 5}, q.Stats())

		for _, want := range []string{"high", "mid1", "mid2", "mid3", "low"} {
			pending, err := q.Dequeue(nil, time.Nanosecond)
			must.NoError(t, err)
			must.Eq(t, want, pending.plan.EvalID)
		}
		must.Eq(t, PlanQueueStats{}, q.Stats())
	})
}

// TestPlanQueue_FutureGetsApplierResponse checks that the submitting worker
// receives exactly what the applier answered, and that only the first
// answer counts.
func TestPlanQueue_FutureGetsApplierResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := testPlanQueue(t)
		okFuture, err := q.Enqueue(planFor("ok", 50))
		must.NoError(t, err)
		failFuture, err := q.Enqueue(planFor("fail", 50))
		must.NoError(t, err)

		result := &structs.PlanResult{AllocIndex: 42}
		applyErr := errors.New("apply failed")
		go func() {
			p, _ := q.Dequeue(nil, 0)
			p.respond(result, nil)
			p.respond(nil, applyErr)
			p, _ = q.Dequeue(nil, 0)
			p.respond(nil, applyErr)
		}()

		got, err := okFuture.Wait()
		must.NoError(t, err)
		must.Eq(t, result, got)
		got, err = failFuture.Wait()
		must.ErrorIs(t, err, applyErr)
		must.Nil(t, got)
	})
}

// TestPlanQueue_DequeueWaits checks that the applier sleeps until a plan
// arrives or its timeout passes, rather than polling.
func TestPlanQueue_DequeueWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := testPlanQueue(t)
		start := time.Now()
		p, err := q.Dequeue(nil, 2*time.Second)
		must.NoError(t, err)
		must.Nil(t, p)
		must.Eq(t, 2*time.Second, time.Since(start))

		go func() {
			time.Sleep(time.Second)
			_, _ = q.Enqueue(planFor("late", 50))
		}()
		start = time.Now()
		p, err = q.Dequeue(nil, 0)
		must.NoError(t, err)
		must.Eq(t, "late", p.plan.EvalID)
		must.Eq(t, time.Second, time.Since(start))
		must.True(t, p.enqueueTime.Equal(start.Add(time.Second)), must.Sprint("stamped when submitted"))
	})
}

// TestPlanQueue_DisableFailsPendingAndStopsApplier checks that on losing
// leadership every queued plan fails at once (its worker retries against
// the new leader) and the applier blocked in Dequeue is told to stop.
func TestPlanQueue_DisableFailsPendingAndStopsApplier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := NewPlanQueue()
		must.NoError(t, err)
		_, err = q.Enqueue(planFor("early", 50))
		must.ErrorIs(t, err, ErrPlanQueueDisabled)
		_, err = q.Dequeue(nil, time.Second)
		must.ErrorIs(t, err, ErrPlanQueueDisabled)

		q.SetEnabled(true)
		futures := map[string]PlanFuture{}
		for _, id := range []string{"taken", "queued1", "queued2"} {
			f, err := q.Enqueue(planFor(id, 50))
			must.NoError(t, err)
			futures[id] = f
		}
		taken, err := q.Dequeue(nil, 0)
		must.NoError(t, err)
		must.Eq(t, "taken", taken.plan.EvalID)

		q.SetEnabled(false)
		for _, id := range []string{"queued1", "queued2"} {
			_, err := futures[id].Wait()
			must.ErrorIs(t, err, ErrPlanQueueDisabled)
		}
		must.Eq(t, PlanQueueStats{}, q.Stats())

		// The plan the applier already took gets the applier's answer.
		taken.respond(&structs.PlanResult{AllocIndex: 7}, nil)
		res, err := futures["taken"].Wait()
		must.NoError(t, err)
		must.Eq(t, uint64(7), res.AllocIndex)

		// An applier waiting for work is told to stop.
		q.SetEnabled(true)
		stopped := make(chan error, 1)
		go func() {
			_, err := q.Dequeue(nil, 0)
			stopped <- err
		}()
		synctest.Wait()
		q.SetEnabled(false)
		must.ErrorIs(t, <-stopped, ErrPlanQueueDisabled)
	})
}

// TestPlanQueue_StaleApplierTakesNoPlan checks that an applier of an
// earlier leadership term takes no plan once its term is over, even when
// it runs only after the queue was disabled and enabled again (a restore
// reasserts leadership: revoke and establish back to back). Taking one
// failed it with "No cluster leader": the stop of the CI run of stop 33,
// where two restores left two such appliers and the job's first two
// evaluations failed with it.
func TestPlanQueue_StaleApplierTakesNoPlan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := NewPlanQueue()
		must.NoError(t, err)
		q.SetEnabled(true)
		oldTerm := make(chan struct{})
		// Revoke: the term ends, then the queue is disabled; establish
		// enables it again and a plan arrives before the old applier ran.
		close(oldTerm)
		q.SetEnabled(false)
		q.SetEnabled(true)
		f, err := q.Enqueue(planFor("after-restore", 50))
		must.NoError(t, err)

		_, err = q.Dequeue(oldTerm, 0)
		must.ErrorIs(t, err, ErrPlanQueueDisabled)
		must.Eq(t, PlanQueueStats{Depth: 1}, q.Stats())

		// The new term's applier gets it.
		p, err := q.Dequeue(make(chan struct{}), 0)
		must.NoError(t, err)
		must.Eq(t, "after-restore", p.plan.EvalID)
		p.respond(&structs.PlanResult{AllocIndex: 3}, nil)
		res, err := f.Wait()
		must.NoError(t, err)
		must.Eq(t, uint64(3), res.AllocIndex)

		// An applier waiting when its term ends stops at once, without
		// waiting for the queue to be disabled.
		term := make(chan struct{})
		stopped := make(chan error, 1)
		go func() {
			_, err := q.Dequeue(term, 0)
			stopped <- err
		}()
		synctest.Wait()
		close(term)
		must.ErrorIs(t, <-stopped, ErrPlanQueueDisabled)
	})
}
