package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// DefaultBufferSize is how many batches (raft entries) a broker keeps when
// its config says nothing. Batches hold the store's own immutable objects,
// so a batch costs a few pointers beyond what the store holds anyway.
const DefaultBufferSize = 1000

var (
	// ErrSubscriptionLagged ends a subscription whose reader fell further
	// behind than the buffer reaches: the batches it has not read yet are
	// gone. It may subscribe again from the index it last saw.
	ErrSubscriptionLagged = errors.New("event subscription fell too far behind and was closed")

	// ErrBrokerClosed ends every subscription when the server shuts down.
	ErrBrokerClosed = errors.New("event broker closed")
)

// EventBrokerConfig configures an EventBroker.
type EventBrokerConfig struct {
	// BufferSize is how many batches are kept; 0 means DefaultBufferSize.
	BufferSize int
}

// EventBroker keeps the newest batches of events in a ring and wakes
// subscriptions when one is published. It is safe for concurrent use; the
// FSM is its only publisher.
type EventBroker struct {
	mu sync.Mutex
	// ring holds batch number n at n % len(ring); numbers [first, next)
	// are retained.
	ring        []Events
	first, next uint64
	// lastIndex is the raft index of the newest batch published, dropped
	// that of the newest batch the ring overwrote.
	lastIndex, dropped uint64
	// wake is closed and replaced at each publish and at Close.
	wake   chan struct{}
	closed bool
}

// NewEventBroker returns an empty broker.
func NewEventBroker(cfg EventBrokerConfig) *EventBroker {
	size := cfg.BufferSize
	if size <= 0 {
		size = DefaultBufferSize
	}
	return &EventBroker{ring: make([]Events, size), wake: make(chan struct{})}
}

// Publish appends a batch; an empty one is dropped. Batches must come in
// raft order, which the FSM guarantees.
func (b *EventBroker) Publish(batch Events) {
	if len(batch.Events) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if b.next-b.first == uint64(len(b.ring)) {
		b.dropped = b.at(b.first).Index
		b.first++
	}
	b.ring[b.next%uint64(len(b.ring))] = batch
	b.next++
	b.lastIndex = batch.Index
	close(b.wake)
	b.wake = make(chan struct{})
}

// Close ends every subscription with ErrBrokerClosed.
func (b *EventBroker) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		close(b.wake)
	}
}

// SubscribeRequest says which events a subscription receives.
type SubscribeRequest struct {
	// Topics maps a topic (or TopicAll) to the keys wanted; a key matches
	// an event's Key or one of its FilterKeys, and "*" matches any. No
	// topics at all means every event.
	Topics map[Topic][]string
	// Namespace selects events of one namespace ("*": all). Events without
	// a namespace (nodes) always pass. Empty means "default".
	Namespace string
	// Index 0 starts with the next batch published. A non-zero Index starts
	// with the first retained batch at or after it; when that batch is no
	// longer retained, with the oldest that is.
	Index uint64
	// Allow, when set, drops the events it refuses (the caller's ACL).
	Allow func(Event) bool
	// Resume marks Index as where an earlier subscription stopped
	// (Subscription.NextIndex): when a batch at or after it is no longer
	// kept, Next fails with ErrSubscriptionLagged instead of starting at
	// the oldest kept batch, so a reader that polls never skips silently.
	Resume bool
}

// Subscribe returns a subscription positioned as req.Index says.
func (b *EventBroker) Subscribe(req SubscribeRequest) *Subscription {
	if req.Namespace == "" {
		req.Namespace = "default"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	sub := &Subscription{broker: b, req: req, cursor: b.next, resume: b.lastIndex + 1}
	if req.Index > 0 {
		n := int(b.next - b.first)
		i := sort.Search(n, func(i int) bool { return b.at(b.first+uint64(i)).Index >= req.Index })
		sub.cursor, sub.resume = b.first+uint64(i), req.Index
		if req.Resume && b.dropped >= req.Index {
			sub.err = fmt.Errorf("%w: the batches from index %d on are no longer kept", ErrSubscriptionLagged, req.Index)
		}
	}
	return sub
}

func (b *EventBroker) at(n uint64) Events { return b.ring[n%uint64(len(b.ring))] }

// Subscription reads a broker's batches in order, filtered by its request.
// It is a cursor: it holds nothing the broker must keep, and needs no
// unsubscribe. One goroutine reads it at a time.
type Subscription struct {
	broker *EventBroker
	req    SubscribeRequest
	cursor uint64
	// resume is the raft index a later subscription resumes from.
	resume uint64
	err    error
}

// NextIndex is the index to resume from (SubscribeRequest.Index with
// Resume) so as to read what this subscription has not read yet.
func (s *Subscription) NextIndex() uint64 {
	s.broker.mu.Lock()
	defer s.broker.mu.Unlock()
	return s.resume
}

// Next returns the next batch with at least one event the subscription
// wants (only those events), waiting for one to be published. It returns
// ctx's error when ctx ends first, ErrSubscriptionLagged when the reader
// fell behind the buffer and ErrBrokerClosed at shutdown.
func (s *Subscription) Next(ctx context.Context) (Events, error) {
	for {
		batch, wake, err := s.take()
		if err != nil {
			return Events{}, err
		}
		if wake == nil {
			if out, ok := s.filter(batch); ok {
				return out, nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return Events{}, ctx.Err()
		case <-wake:
		}
	}
}

// take returns the batch at the cursor and advances it, or the channel to
// wait on when there is none yet.
func (s *Subscription) take() (Events, <-chan struct{}, error) {
	b := s.broker
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case s.err != nil:
		return Events{}, nil, s.err
	case b.closed:
		return Events{}, nil, ErrBrokerClosed
	case s.cursor < b.first:
		return Events{}, nil, fmt.Errorf("%w: %d batches behind, the buffer keeps %d", ErrSubscriptionLagged, b.next-s.cursor, len(b.ring))
	case s.cursor == b.next:
		return Events{}, b.wake, nil
	}
	batch := b.at(s.cursor)
	s.cursor++
	s.resume = batch.Index + 1
	return batch, nil, nil
}

func (s *Subscription) filter(batch Events) (Events, bool) {
	var out []Event
	for _, e := range batch.Events {
		if s.wants(e) {
			out = append(out, e)
		}
	}
	return Events{Index: batch.Index, Events: out}, len(out) > 0
}

func (s *Subscription) wants(e Event) bool {
	if e.Namespace != "" && s.req.Namespace != "*" && s.req.Namespace != e.Namespace {
		return false
	}
	if len(s.req.Topics) > 0 && !keyMatches(s.req.Topics[e.Topic], e) && !keyMatches(s.req.Topics[TopicAll], e) {
		return false
	}
	return s.req.Allow == nil || s.req.Allow(e)
}

func keyMatches(keys []string, e Event) bool {
	for _, k := range keys {
		if k == "*" || k == e.Key || slices.Contains(e.FilterKeys, k) {
			return true
		}
	}
	return false
}
