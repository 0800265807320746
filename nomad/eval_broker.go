package nomad

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/clock"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// FailedQueue is the scheduler name under which the broker parks evaluations
// that used up their delivery limit. The leader dequeues from it, marks the
// evaluations failed through raft and acks them.
const FailedQueue = "_failed"

// Errors returned by the EvalBroker. Callers compare them with errors.Is.
var (
	// ErrNotOutstanding means the evaluation is not held by any worker: it
	// was never dequeued, was already acked or nacked, or its nack timer
	// expired and the broker took it back.
	ErrNotOutstanding = errors.New("evaluation is not outstanding")

	// ErrTokenMismatch means the caller's token belongs to an earlier
	// delivery of the evaluation; another worker now owns it.
	ErrTokenMismatch = structs.ErrTokenMismatch

	// ErrNackTimeoutReached means the nack timer fired before the worker
	// tried to extend or pause it; the evaluation is being redelivered.
	ErrNackTimeoutReached = errors.New("evaluation nack timeout reached")

	// ErrBrokerDisabled means the broker is not enabled: this server is not
	// the leader, or lost leadership.
	ErrBrokerDisabled = errors.New("eval broker disabled")
)

// cancelDescription explains why the broker handed an evaluation back for
// cancellation.
const cancelDescription = "canceled after a more recent evaluation of the job was processed"

// EvalBrokerConfig holds the tunables of an EvalBroker.
type EvalBrokerConfig struct {
	// NackTimeout is how long a worker may hold an evaluation without
	// acking, nacking or resetting the timer before the broker assumes the
	// worker is gone and redelivers it.
	NackTimeout time.Duration

	// InitialNackDelay is the redelivery delay after the first nack;
	// SubsequentNackDelay after every later one. The delay keeps a failing
	// evaluation from spinning the workers.
	InitialNackDelay    time.Duration
	SubsequentNackDelay time.Duration

	// DeliveryLimit is how many times an evaluation is delivered before it
	// moves to FailedQueue.
	DeliveryLimit int

	// Clock drives the nack timers, delays and dequeue timeouts. Nil means
	// clock.Real().
	Clock Clock
}

// EvalBroker is the leader's in-memory queue of evaluations waiting for a
// scheduler worker. It delivers each evaluation at least once: a delivery
// is outstanding until acked, and a nack or a silent worker (nack timeout)
// puts it back. It never hands out two evaluations of the same job at once,
// because two schedulers planning one job concurrently would produce
// conflicting plans; later evaluations of a busy job wait, and only the
// newest of them runs once the job is free, since it sees the latest state
// anyway.
//
// Only the leader's broker is enabled. The broker is not persisted: a new
// leader rebuilds it from the pending evaluations in the state store.
//
// All state is guarded by l. Lock order: BlockedEvals.l before EvalBroker.l.
type EvalBroker struct {
	cfg EvalBrokerConfig

	l       sync.Mutex
	enabled bool

	// seq numbers every insertion into a queue so equal keys stay FIFO.
	seq uint64

	// evals tracks every evaluation the broker holds in any form (ready,
	// pending behind its job, delayed, outstanding), with the number of
	// deliveries so far. It is what makes Enqueue idempotent.
	evals map[string]int

	// jobEvals maps a job to the one evaluation that currently owns it:
	// ready, outstanding, or waiting for a nack redelivery.
	jobEvals map[structs.NamespacedID]string

	// pending holds further evaluations of jobs that are owned by another.
	pending map[structs.NamespacedID][]*structs.Evaluation

	// cancelable holds superseded evaluations for the leader to cancel.
	cancelable []*structs.Evaluation

	// ready holds deliverable evaluations, one queue per scheduler name.
	ready map[string]*brokerQueue

	// unack holds outstanding deliveries by evaluation ID.
	unack map[string]*unackedEval

	// requeue holds, by delivery token, a newer version of an outstanding
	// evaluation that must be enqueued once that delivery is acked.
	requeue map[string]*structs.Evaluation

	// delayed holds evaluations not deliverable before an instant (Wait,
	// WaitUntil, nack delay). One timer is armed for the earliest.
	delayed    brokerDelayHeap
	delayTimer Timer
	delayAt    time.Time
	delayGen   uint64

	// readyIDs are the evaluations on a scheduler's ready queue (not
	// FailedQueue): handed to no worker yet.
	readyIDs map[string]*structs.Evaluation

	// dequeues counts, per job, the evaluations handed to workers (see
	// JobWaiting); never reset.
	dequeues map[structs.NamespacedID]uint64

	// readySignal wakes blocked Dequeue calls.
	readySignal waitSignal
}

// unackedEval is one outstanding delivery.
type unackedEval struct {
	eval   *structs.Evaluation
	token  string
	queue  string
	timer  Timer
	paused bool
}

// BrokerStats is a snapshot of the broker's queues.
type BrokerStats struct {
	TotalReady   int
	TotalUnacked int
	// TotalBlocked counts evaluations waiting for another evaluation of
	// their job to be acked.
	TotalBlocked int
	// TotalWaiting counts evaluations held until an instant: Wait,
	// WaitUntil or a nack redelivery delay.
	TotalWaiting    int
	TotalCancelable int
	ByScheduler     map[string]*SchedulerStats
}

// SchedulerStats counts one scheduler queue.
type SchedulerStats struct {
	Ready   int
	Unacked int
}

// NewEvalBroker returns a disabled broker.
func NewEvalBroker(cfg EvalBrokerConfig) (*EvalBroker, error) {
	switch {
	case cfg.NackTimeout <= 0:
		return nil, fmt.Errorf("eval broker: nack timeout must be positive, got %v", cfg.NackTimeout)
	case cfg.DeliveryLimit < 1:
		return nil, fmt.Errorf("eval broker: delivery limit must be at least 1, got %d", cfg.DeliveryLimit)
	case cfg.InitialNackDelay < 0 || cfg.SubsequentNackDelay < 0:
		return nil, errors.New("eval broker: nack delays must not be negative")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	// The dequeue counts survive a leadership change: they only grow, so
	// a count read before it never matches one read after a dequeue.
	b := &EvalBroker{cfg: cfg, dequeues: map[structs.NamespacedID]uint64{}}
	b.resetLocked()
	return b, nil
}

// resetLocked empties every structure.
func (b *EvalBroker) resetLocked() {
	b.evals = map[string]int{}
	b.jobEvals = map[structs.NamespacedID]string{}
	b.pending = map[structs.NamespacedID][]*structs.Evaluation{}
	b.cancelable = nil
	b.ready = map[string]*brokerQueue{}
	b.unack = map[string]*unackedEval{}
	b.requeue = map[string]*structs.Evaluation{}
	b.delayed = nil
	b.readyIDs = map[string]*structs.Evaluation{}
}

// Enabled reports whether the broker accepts work.
func (b *EvalBroker) Enabled() bool {
	b.l.Lock()
	defer b.l.Unlock()
	return b.enabled
}

// SetEnabled turns the broker on when this server becomes leader and off
// when it steps down. Disabling drops everything, because the next leader
// rebuilds its broker from the state store, and wakes blocked Dequeue calls
// with no evaluation.
func (b *EvalBroker) SetEnabled(enabled bool) {
	b.l.Lock()
	defer b.l.Unlock()
	if b.enabled == enabled {
		return
	}
	b.enabled = enabled
	if !enabled {
		b.flushLocked()
	}
}

// flushLocked stops all timers, forgets all evaluations and wakes waiters.
func (b *EvalBroker) flushLocked() {
	for _, u := range b.unack {
		u.timer.Stop()
	}
	if b.delayTimer != nil {
		b.delayTimer.Stop()
		b.delayTimer = nil
	}
	b.resetLocked()
	b.readySignal.notifyLocked()
}

// Enqueue adds an evaluation. Enqueuing an evaluation the broker already
// holds does nothing, so the FSM can hand over every pending evaluation it
// applies without checking. Disabled brokers ignore it.
func (b *EvalBroker) Enqueue(eval *structs.Evaluation) {
	b.l.Lock()
	defer b.l.Unlock()
	b.enqueueLocked(eval, "")
}

// EnqueueAll adds evaluations, each with the delivery token under which it
// may currently be outstanding ("" for none). When an evaluation is
// outstanding under that token, the new version is held until the delivery
// is acked (and dropped if it is nacked): the worker that owns it is still
// running, and its job must not be scheduled twice at once.
func (b *EvalBroker) EnqueueAll(evals map[*structs.Evaluation]string) {
	b.l.Lock()
	defer b.l.Unlock()
	for eval, token := range evals {
		b.enqueueLocked(eval, token)
	}
}

// enqueueLocked admits an evaluation into the broker.
func (b *EvalBroker) enqueueLocked(eval *structs.Evaluation, token string) {
	if !b.enabled {
		return
	}
	if _, tracked := b.evals[eval.ID]; tracked {
		if token == "" {
			return
		}
		if u, ok := b.unack[eval.ID]; ok && u.token == token {
			b.requeue[token] = eval
		}
		return
	}
	b.evals[eval.ID] = 0

	now := b.cfg.Clock.Now()
	switch {
	case eval.WaitUntil.After(now):
		b.delayLocked(eval, eval.WaitUntil)
	case eval.Wait > 0:
		b.delayLocked(eval, now.Add(eval.Wait))
	default:
		b.readyLocked(eval, eval.Type)
	}
}

// readyLocked puts an evaluation on a ready queue if its job is free (or
// already owned by this evaluation), and behind the job's owner otherwise.
func (b *EvalBroker) readyLocked(eval *structs.Evaluation, queue string) {
	// Core evaluations are server housekeeping, not jobs; they never
	// conflict with each other.
	if eval.Type != structs.JobTypeCore {
		key := structs.NamespacedID{ID: eval.JobID, Namespace: eval.Namespace}
		switch owner := b.jobEvals[key]; owner {
		case "":
			b.jobEvals[key] = eval.ID
		case eval.ID:
		default:
			b.pending[key] = append(b.pending[key], eval)
			return
		}
	}

	q := b.ready[queue]
	if q == nil {
		q = &brokerQueue{}
		b.ready[queue] = q
	}
	if queue != FailedQueue {
		b.readyIDs[eval.ID] = eval
	}
	b.seq++
	heap.Push(q, brokerItem{eval: eval, seq: b.seq})
	b.readySignal.notifyLocked()
}

// Dequeue waits up to timeout (forever when timeout <= 0) for an evaluation
// of one of the schedulers, and returns it with the token that identifies
// this delivery. On timeout, or when the broker is disabled while waiting,
// it returns no evaluation and no error, so a worker simply polls again;
// calling it on a disabled broker returns ErrBrokerDisabled.
func (b *EvalBroker) Dequeue(schedulers []string, timeout time.Duration) (*structs.Evaluation, string, error) {
	return b.DequeueCtx(context.Background(), schedulers, timeout)
}

// DequeueCtx is Dequeue for a caller that may go away while it waits: when
// ctx ends first it returns ctx.Err(), so a shutting-down worker can tell
// its own cancellation from an empty poll, and an RPC whose caller hung up
// stops waiting instead of taking an evaluation nobody will receive.
func (b *EvalBroker) DequeueCtx(ctx context.Context, schedulers []string, timeout time.Duration) (*structs.Evaluation, string, error) {
	expired, stop := clockExpiry(b.cfg.Clock, timeout)
	defer stop()
	eval, token, err := b.dequeue(schedulers, expired, ctx.Done())
	if eval == nil && err == nil && ctx.Err() != nil {
		return nil, "", ctx.Err()
	}
	return eval, token, err
}

// dequeue blocks until an evaluation is ready, expired or gone is closed,
// or the broker is disabled.
func (b *EvalBroker) dequeue(schedulers []string, expired, gone <-chan struct{}) (*structs.Evaluation, string, error) {
	if len(schedulers) == 0 {
		return nil, "", fmt.Errorf("%w: dequeue needs at least one scheduler", structs.ErrInvalidRequest)
	}
	for first := true; ; first = false {
		b.l.Lock()
		if !b.enabled {
			b.l.Unlock()
			if first {
				return nil, "", ErrBrokerDisabled
			}
			return nil, "", nil
		}
		if eval, token, ok := b.dequeueLocked(schedulers); ok {
			b.l.Unlock()
			return eval, token, nil
		}
		wake := b.readySignal.waitLocked()
		b.l.Unlock()

		select {
		case <-wake:
		case <-expired:
			return nil, "", nil
		case <-gone:
			return nil, "", nil
		}
	}
}

// dequeueLocked takes the best ready evaluation across the schedulers:
// highest priority, then oldest. Comparing across queues rather than
// draining them in the caller's order keeps one busy scheduler type from
// starving another.
func (b *EvalBroker) dequeueLocked(schedulers []string) (*structs.Evaluation, string, bool) {
	var best *brokerQueue
	var bestName string
	for _, name := range schedulers {
		q := b.ready[name]
		if q == nil || q.Len() == 0 {
			continue
		}
		if best == nil || (*q)[0].before((*best)[0]) {
			best, bestName = q, name
		}
	}
	if best == nil {
		return nil, "", false
	}
	eval := heap.Pop(best).(brokerItem).eval
	if best.Len() == 0 {
		delete(b.ready, bestName)
	}
	delete(b.readyIDs, eval.ID)
	if eval.Type != structs.JobTypeCore {
		b.dequeues[structs.NamespacedID{ID: eval.JobID, Namespace: eval.Namespace}]++
	}

	token := structs.GenerateUUID()
	b.evals[eval.ID]++
	b.unack[eval.ID] = &unackedEval{
		eval:  eval,
		token: token,
		queue: bestName,
		timer: b.cfg.Clock.AfterFunc(b.cfg.NackTimeout, func() { b.nackExpired(eval.ID, token) }),
	}
	return eval, token, true
}

// JobWaiting reports whether an evaluation of the job with the trigger
// waits for a worker, on a ready queue or behind the evaluation that owns
// the job, and how many of the job's evaluations workers have taken so
// far. A waiting
// evaluation will see whatever is committed before a worker takes it: a
// caller relying on that for a change it commits next checks afterwards,
// with JobDequeues, that the count did not move, and writes its own
// evaluation if it did (a worker may have taken its snapshot before the
// change was applied).
func (b *EvalBroker) JobWaiting(job structs.NamespacedID, trigger string) (bool, uint64) {
	b.l.Lock()
	defer b.l.Unlock()
	if !b.enabled {
		return false, 0
	}
	if e := b.readyIDs[b.jobEvals[job]]; e != nil && e.TriggeredBy == trigger {
		return true, b.dequeues[job]
	}
	for _, e := range b.pending[job] {
		if e.TriggeredBy == trigger {
			return true, b.dequeues[job]
		}
	}
	return false, b.dequeues[job]
}

// JobDequeues returns how many of the job's evaluations workers have taken
// (see JobWaiting).
func (b *EvalBroker) JobDequeues(job structs.NamespacedID) uint64 {
	b.l.Lock()
	defer b.l.Unlock()
	return b.dequeues[job]
}

// Outstanding returns the token of the current delivery of an evaluation.
func (b *EvalBroker) Outstanding(evalID string) (string, bool) {
	b.l.Lock()
	defer b.l.Unlock()
	u, ok := b.unack[evalID]
	if !ok {
		return "", false
	}
	return u.token, true
}

// outstandingLocked returns the delivery that token identifies.
func (b *EvalBroker) outstandingLocked(evalID, token string) (*unackedEval, error) {
	u, ok := b.unack[evalID]
	if !ok {
		return nil, ErrNotOutstanding
	}
	if u.token != token {
		return nil, ErrTokenMismatch
	}
	return u, nil
}

// OutstandingReset restarts the nack timer of a delivery. A worker calls it
// while a long scheduling run is still making progress. While the timer is
// paused it does nothing: ResumeNackTimeout restarts it.
func (b *EvalBroker) OutstandingReset(evalID, token string) error {
	b.l.Lock()
	defer b.l.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	if u.paused {
		return nil
	}
	if !u.timer.Reset(b.cfg.NackTimeout) {
		return ErrNackTimeoutReached
	}
	return nil
}

// PauseNackTimeout stops the nack timer of a delivery while its plan waits
// in the plan queue: the worker is blocked on the leader, not gone, and a
// long queue must not cause a redelivery.
func (b *EvalBroker) PauseNackTimeout(evalID, token string) error {
	b.l.Lock()
	defer b.l.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	if u.paused {
		return nil
	}
	if !u.timer.Stop() {
		return ErrNackTimeoutReached
	}
	u.paused = true
	return nil
}

// ResumeNackTimeout restarts a paused nack timer with a full NackTimeout.
func (b *EvalBroker) ResumeNackTimeout(evalID, token string) error {
	b.l.Lock()
	defer b.l.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	if u.paused {
		u.timer.Reset(b.cfg.NackTimeout)
		u.paused = false
	}
	return nil
}

// Ack completes a delivery. The evaluation's job becomes free: the newest
// evaluation waiting for it is made ready and the older ones go to the
// cancelable list.
func (b *EvalBroker) Ack(evalID, token string) error {
	b.l.Lock()
	defer b.l.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	u.timer.Stop()
	delete(b.unack, evalID)
	delete(b.evals, evalID)
	b.releaseJobLocked(u.eval)

	if eval, ok := b.requeue[token]; ok {
		delete(b.requeue, token)
		b.enqueueLocked(eval, "")
	}
	return nil
}

// releaseJobLocked frees the job owned by eval and hands it to the newest
// evaluation waiting for it.
func (b *EvalBroker) releaseJobLocked(eval *structs.Evaluation) {
	key := structs.NamespacedID{ID: eval.JobID, Namespace: eval.Namespace}
	if b.jobEvals[key] != eval.ID {
		return
	}
	delete(b.jobEvals, key)

	waiting := b.pending[key]
	if len(waiting) == 0 {
		return
	}
	delete(b.pending, key)

	newest := 0
	for i, e := range waiting[1:] {
		// Later arrivals win ties: they were created from newer state.
		if e.CreateIndex >= waiting[newest].CreateIndex {
			newest = i + 1
		}
	}
	for i, e := range waiting {
		if i == newest {
			continue
		}
		delete(b.evals, e.ID)
		c := e.Copy()
		c.Status = structs.EvalStatusCancelled
		c.StatusDescription = cancelDescription
		b.cancelable = append(b.cancelable, c)
	}
	b.readyLocked(waiting[newest], waiting[newest].Type)
}

// Nack gives a delivery back because the worker failed it. The evaluation
// keeps its job and is redelivered after a delay, or moves to FailedQueue
// once it has been delivered DeliveryLimit times.
func (b *EvalBroker) Nack(evalID, token string) error {
	b.l.Lock()
	defer b.l.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	b.nackLocked(u)
	return nil
}

// GiveBack returns a delivery its worker never received (the RPC that
// dequeued it lost its caller) to the ready queue it came from at once: it
// is not a failure, so it neither counts against the delivery limit nor
// waits out a nack delay, and nobody waits the nack timeout for it.
func (b *EvalBroker) GiveBack(evalID, token string) error {
	b.l.Lock()
	defer b.l.Unlock()
	u, err := b.outstandingLocked(evalID, token)
	if err != nil {
		return err
	}
	u.timer.Stop()
	delete(b.unack, evalID)
	delete(b.requeue, token) // as on a nack: this delivery supersedes it
	b.evals[evalID]--
	b.readyLocked(u.eval, u.queue)
	return nil
}

// nackExpired is the nack timer's callback.
func (b *EvalBroker) nackExpired(evalID, token string) {
	b.l.Lock()
	defer b.l.Unlock()
	if u, err := b.outstandingLocked(evalID, token); err == nil {
		b.nackLocked(u)
	}
}

// nackLocked takes a delivery back and schedules the redelivery.
func (b *EvalBroker) nackLocked(u *unackedEval) {
	u.timer.Stop()
	delete(b.unack, u.eval.ID)
	// The newer version waited for this delivery to succeed; the
	// redelivery below supersedes it.
	delete(b.requeue, u.token)

	deliveries := b.evals[u.eval.ID]
	if deliveries >= b.cfg.DeliveryLimit {
		b.readyLocked(u.eval, FailedQueue)
		return
	}
	delay := b.cfg.SubsequentNackDelay
	if deliveries <= 1 {
		delay = b.cfg.InitialNackDelay
	}
	if delay <= 0 {
		b.readyLocked(u.eval, u.eval.Type)
		return
	}
	b.delayLocked(u.eval, b.cfg.Clock.Now().Add(delay))
}

// delayLocked holds an evaluation until at.
func (b *EvalBroker) delayLocked(eval *structs.Evaluation, at time.Time) {
	b.seq++
	heap.Push(&b.delayed, brokerDelayed{eval: eval, at: at, seq: b.seq})
	b.armDelayLocked()
}

// armDelayLocked makes sure exactly one timer is armed, for the earliest
// delayed evaluation. A fresh timer is created for each new deadline so a
// callback can tell whether it is still the current one.
func (b *EvalBroker) armDelayLocked() {
	if len(b.delayed) == 0 {
		if b.delayTimer != nil {
			b.delayTimer.Stop()
			b.delayTimer = nil
		}
		return
	}
	at := b.delayed[0].at
	if b.delayTimer != nil && b.delayAt.Equal(at) {
		return
	}
	if b.delayTimer != nil {
		b.delayTimer.Stop()
	}
	b.delayGen++
	gen := b.delayGen
	b.delayAt = at
	b.delayTimer = b.cfg.Clock.AfterFunc(at.Sub(b.cfg.Clock.Now()), func() { b.runDelayed(gen) })
}

// runDelayed is the delay timer's callback: it releases every evaluation
// whose instant has come and re-arms for the next.
func (b *EvalBroker) runDelayed(gen uint64) {
	b.l.Lock()
	defer b.l.Unlock()
	if !b.enabled {
		return
	}
	if gen == b.delayGen {
		// This timer has fired; forget it so arming cannot keep it.
		b.delayTimer = nil
	}
	now := b.cfg.Clock.Now()
	for len(b.delayed) > 0 && !b.delayed[0].at.After(now) {
		d := heap.Pop(&b.delayed).(brokerDelayed)
		b.readyLocked(d.eval, d.eval.Type)
	}
	b.armDelayLocked()
}

// Cancelable removes and returns up to batch superseded evaluations, marked
// canceled, for the leader to write through raft.
func (b *EvalBroker) Cancelable(batch int) []*structs.Evaluation {
	b.l.Lock()
	defer b.l.Unlock()
	n := min(batch, len(b.cancelable))
	if n <= 0 {
		return nil
	}
	out := make([]*structs.Evaluation, n)
	copy(out, b.cancelable)
	b.cancelable = append(b.cancelable[:0:0], b.cancelable[n:]...)
	return out
}

// Stats returns the current queue sizes.
func (b *EvalBroker) Stats() BrokerStats {
	b.l.Lock()
	defer b.l.Unlock()
	s := BrokerStats{
		TotalUnacked:    len(b.unack),
		TotalWaiting:    len(b.delayed),
		TotalCancelable: len(b.cancelable),
		ByScheduler:     map[string]*SchedulerStats{},
	}
	byName := func(name string) *SchedulerStats {
		st := s.ByScheduler[name]
		if st == nil {
			st = &SchedulerStats{}
			s.ByScheduler[name] = st
		}
		return st
	}
	for name, q := range b.ready {
		s.TotalReady += q.Len()
		byName(name).Ready += q.Len()
	}
	for _, u := range b.unack {
		byName(u.queue).Unacked++
	}
	for _, w := range b.pending {
		s.TotalBlocked += len(w)
	}
	return s
}

// brokerItem is an evaluation on a ready queue.
type brokerItem struct {
	eval *structs.Evaluation
	seq  uint64
}

// before orders ready evaluations: higher priority first, then lower
// CreateIndex, then insertion order.
func (a brokerItem) before(o brokerItem) bool {
	if a.eval.Priority != o.eval.Priority {
		return a.eval.Priority > o.eval.Priority
	}
	if a.eval.CreateIndex != o.eval.CreateIndex {
		return a.eval.CreateIndex < o.eval.CreateIndex
	}
	return a.seq < o.seq
}

// brokerQueue is a heap of ready evaluations of one scheduler.
type brokerQueue []brokerItem

func (q brokerQueue) Len() int           { return len(q) }
func (q brokerQueue) Less(i, j int) bool { return q[i].before(q[j]) }
func (q brokerQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *brokerQueue) Push(x any)        { *q = append(*q, x.(brokerItem)) }
func (q *brokerQueue) Pop() any {
	old := *q
	n := len(old) - 1
	it := old[n]
	old[n] = brokerItem{}
	*q = old[:n]
	return it
}

// brokerDelayed is an evaluation held until at.
type brokerDelayed struct {
	eval *structs.Evaluation
	at   time.Time
	seq  uint64
}

// brokerDelayHeap is a min-heap of held evaluations by instant.
type brokerDelayHeap []brokerDelayed

func (h brokerDelayHeap) Len() int { return len(h) }
func (h brokerDelayHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h brokerDelayHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *brokerDelayHeap) Push(x any)   { *h = append(*h, x.(brokerDelayed)) }
func (h *brokerDelayHeap) Pop() any {
	old := *h
	n := len(old) - 1
	it := old[n]
	old[n] = brokerDelayed{}
	*h = old[:n]
	return it
}

// waitSignal wakes every goroutine waiting for a change to a structure
// guarded by its owner's lock. Waiters take the channel under the lock and
// wait on it after releasing the lock; the next notify closes it. It is
// shared by the broker, the blocked evaluations and the plan queue.
type waitSignal struct {
	ch chan struct{}
}

// waitLocked returns a channel closed by the next notifyLocked.
func (s *waitSignal) waitLocked() <-chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// notifyLocked wakes the current waiters.
func (s *waitSignal) notifyLocked() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
