package nomad

import (
	"container/heap"
	"errors"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/clock"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// ErrPlanQueueDisabled is returned by the PlanQueue when this server is not
// the leader, and to every plan still queued when it stops being one: only
// the leader may commit plans.
var ErrPlanQueueDisabled = errors.New("plan queue is disabled")

// PlanFuture is a submitted plan's eventual outcome.
type PlanFuture interface {
	// Wait blocks until the applier responded or the queue was disabled.
	Wait() (*structs.PlanResult, error)
}

// PlanQueue orders the plans submitted by scheduler workers for the single
// plan applier on the leader. Plans are applied one at a time so each is
// checked against the state the previous one produced; higher-priority
// plans go first, equal priorities in submission order.
//
// All state is guarded by l.
type PlanQueue struct {
	clock Clock

	l       sync.Mutex
	enabled bool
	seq     uint64
	queue   planHeap
	signal  waitSignal
}

// PlanQueueStats is a snapshot of the queue.
type PlanQueueStats struct {
	Depth int
}

// pendingPlan is a plan in (or taken from) the queue and its future. The
// applier reads plan and answers through respond.
type pendingPlan struct {
	plan        *structs.Plan
	enqueueTime time.Time
	seq         uint64

	once   sync.Once
	done   chan struct{}
	result *structs.PlanResult
	err    error
}

var _ PlanFuture = (*pendingPlan)(nil)

// Wait blocks until respond is called.
func (p *pendingPlan) Wait() (*structs.PlanResult, error) {
	<-p.done
	return p.result, p.err
}

// respond completes the future. Only the first response counts, so a
// disable racing with the applier cannot overwrite its answer.
func (p *pendingPlan) respond(result *structs.PlanResult, err error) {
	p.once.Do(func() {
		p.result, p.err = result, err
		close(p.done)
	})
}

// NewPlanQueue returns a disabled plan queue.
func NewPlanQueue() (*PlanQueue, error) {
	return &PlanQueue{clock: clock.Real()}, nil
}

// Enabled reports whether the queue accepts plans.
func (q *PlanQueue) Enabled() bool {
	q.l.Lock()
	defer q.l.Unlock()
	return q.enabled
}

// SetEnabled turns the queue on with leadership and off without it.
// Disabling fails every queued plan with ErrPlanQueueDisabled, so the
// workers waiting on them retry against the new leader, and wakes the
// applier.
func (q *PlanQueue) SetEnabled(enabled bool) {
	q.l.Lock()
	defer q.l.Unlock()
	if q.enabled == enabled {
		return
	}
	q.enabled = enabled
	if !enabled {
		for _, p := range q.queue {
			p.respond(nil, ErrPlanQueueDisabled)
		}
		q.queue = nil
		q.signal.notifyLocked()
	}
}

// Enqueue submits a plan and returns its future.
func (q *PlanQueue) Enqueue(plan *structs.Plan) (PlanFuture, error) {
	q.l.Lock()
	defer q.l.Unlock()
	if !q.enabled {
		return nil, ErrPlanQueueDisabled
	}
	q.seq++
	p := &pendingPlan{
		plan:        plan,
		enqueueTime: q.clock.Now(),
		seq:         q.seq,
		done:        make(chan struct{}),
	}
	heap.Push(&q.queue, p)
	q.signal.notifyLocked()
	return p, nil
}

// Dequeue waits up to timeout (forever when timeout <= 0) for the next plan.
// It returns nil, nil on timeout and ErrPlanQueueDisabled when the queue is
// or becomes disabled, or when done (the applier's leadership term; nil
// for none) is closed, which is the applier's signal to stop.
//
// done is checked under the queue's lock before a plan is taken: an
// applier of an earlier term that wakes only after the queue was disabled
// and enabled again (a reassert: revoke and establish back to back, which
// closes the term's done before it disables) stops without taking a plan
// the new term's applier is there to apply. Taking it would fail it with
// "No cluster leader", once for every such stale applier.
func (q *PlanQueue) Dequeue(done <-chan struct{}, timeout time.Duration) (*pendingPlan, error) {
	expired, stop := clockExpiry(q.clock, timeout)
	defer stop()
	for {
		q.l.Lock()
		if !q.enabled || closed(done) {
			q.l.Unlock()
			return nil, ErrPlanQueueDisabled
		}
		if len(q.queue) > 0 {
			p := heap.Pop(&q.queue).(*pendingPlan)
			q.l.Unlock()
			return p, nil
		}
		wake := q.signal.waitLocked()
		q.l.Unlock()

		select {
		case <-wake:
		case <-done:
		case <-expired:
			return nil, nil
		}
	}
}

// closed reports whether ch is closed; a nil ch never is.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Stats returns the queue depth.
func (q *PlanQueue) Stats() PlanQueueStats {
	q.l.Lock()
	defer q.l.Unlock()
	return PlanQueueStats{Depth: len(q.queue)}
}

// planHeap orders pending plans by priority, then submission.
type planHeap []*pendingPlan

func (h planHeap) Len() int { return len(h) }
func (h planHeap) Less(i, j int) bool {
	if h[i].plan.Priority != h[j].plan.Priority {
		return h[i].plan.Priority > h[j].plan.Priority
	}
	return h[i].seq < h[j].seq
}
func (h planHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *planHeap) Push(x any)   { *h = append(*h, x.(*pendingPlan)) }
func (h *planHeap) Pop() any {
	old := *h
	n := len(old) - 1
	p := old[n]
	old[n] = nil
	*h = old[:n]
	return p
}
