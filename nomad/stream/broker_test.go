package stream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func batch(index uint64, events ...Event) Events {
	for i := range events {
		events[i].Index = index
	}
	return Events{Index: index, Events: events}
}

func jobEvent(ns, id string) Event {
	return Event{Topic: TopicJob, Type: TypeJobRegistered, Key: id, Namespace: ns}
}

func nextNow(t *testing.T, s *Subscription) Events {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := s.Next(ctx)
	must.NoError(t, err)
	return got
}

// A subscriber reads batches in raft order with their index; index 0
// starts after what is already published, a later index resumes at the
// first batch at or after it, and an index older than the buffer starts
// at the oldest kept batch (what upstream documents).
func TestSubscribe_StartIndex(t *testing.T) {
	b := NewEventBroker(EventBrokerConfig{BufferSize: 3})
	for i := uint64(10); i <= 14; i++ {
		b.Publish(batch(i, jobEvent("default", "web")))
	}
	must.Eq(t, 13, nextNow(t, b.Subscribe(SubscribeRequest{Index: 13})).Index)
	must.Eq(t, 12, nextNow(t, b.Subscribe(SubscribeRequest{Index: 1})).Index, must.Sprint("11 and older fell out of a buffer of 3"))

	fresh := b.Subscribe(SubscribeRequest{})
	b.Publish(batch(15, jobEvent("default", "web")))
	must.Eq(t, 15, nextNow(t, fresh).Index)
}

// Topic and key filters select by Key or FilterKeys, "*" matches any, and
// the namespace filter lets events without a namespace (nodes) through.
func TestSubscribe_Filters(t *testing.T) {
	alloc := Event{Topic: TopicAllocation, Key: "a1", Namespace: "default", FilterKeys: []string{"web"}}
	node := Event{Topic: TopicNode, Key: "n1"}
	other := jobEvent("prod", "web")
	cases := []struct {
		name string
		req  SubscribeRequest
		want []string
	}{
		{"everything in default", SubscribeRequest{}, []string{"a1", "n1"}},
		{"allocations of job web", SubscribeRequest{Topics: map[Topic][]string{TopicAllocation: {"web"}}}, []string{"a1"}},
		{"node by id", SubscribeRequest{Topics: map[Topic][]string{TopicNode: {"n1"}}}, []string{"n1"}},
		{"any topic, key web, all namespaces", SubscribeRequest{Topics: map[Topic][]string{TopicAll: {"web"}}, Namespace: "*"}, []string{"a1", "web"}},
		{"jobs in prod", SubscribeRequest{Topics: map[Topic][]string{TopicJob: {"*"}}, Namespace: "prod"}, []string{"web"}},
		{"acl drops nodes", SubscribeRequest{Allow: func(e Event) bool { return e.Topic != TopicNode }}, []string{"a1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := NewEventBroker(EventBrokerConfig{})
			s := b.Subscribe(tc.req)
			b.Publish(batch(5, alloc, node, other))
			var keys []string
			for _, e := range nextNow(t, s).Events {
				keys = append(keys, e.Key)
			}
			must.Eq(t, tc.want, keys)
		})
	}
}

// A batch with nothing the subscriber wants is skipped, not delivered
// empty: an empty line would read as a heartbeat.
func TestSubscribe_SkipsUnwantedBatches(t *testing.T) {
	b := NewEventBroker(EventBrokerConfig{})
	s := b.Subscribe(SubscribeRequest{Topics: map[Topic][]string{TopicNode: {"*"}}})
	b.Publish(batch(1, jobEvent("default", "web")))
	b.Publish(batch(2, Event{Topic: TopicNode, Key: "n1"}))
	must.Eq(t, 2, nextNow(t, s).Index)
}

// A reader that falls further behind than the buffer is closed with
// ErrSubscriptionLagged instead of making the server keep what it has not
// read: memory stays bounded whatever the reader does.
func TestSubscribe_SlowConsumerClosed(t *testing.T) {
	b := NewEventBroker(EventBrokerConfig{BufferSize: 2})
	s := b.Subscribe(SubscribeRequest{})
	for i := uint64(1); i <= 3; i++ {
		b.Publish(batch(i, jobEvent("default", "web")))
	}
	_, err := s.Next(context.Background())
	must.ErrorIs(t, err, ErrSubscriptionLagged)
	must.Eq(t, 2, len(b.ring), must.Sprint("the ring never grows"))
}

// A waiting subscriber returns when its context ends, and every
// subscriber ends when the broker closes at shutdown.
func TestSubscribe_ContextAndClose(t *testing.T) {
	b := NewEventBroker(EventBrokerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Subscribe(SubscribeRequest{}).Next(ctx)
	must.ErrorIs(t, err, context.Canceled)

	s := b.Subscribe(SubscribeRequest{})
	done := make(chan error, 1)
	go func() { _, err := s.Next(context.Background()); done <- err }()
	b.Close()
	must.True(t, errors.Is(<-done, ErrBrokerClosed))
	b.Publish(batch(1, jobEvent("default", "web"))) // ignored, no panic
}
