package stream

import (
	"context"
	"errors"
	"testing"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"
)

// Whatever the interleaving of publishes and reads, a subscriber reads
// every batch after its start exactly once and in order, until it falls
// more than the buffer behind: then, and only then, it is told it lagged.
// Consumers rely on this to resume from the last index they saw without
// gaps or duplicates.
func TestProperty_SubscriberSeesEveryBatchOrLags(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		size := rapid.IntRange(1, 8).Draw(rt, "size")
		b := NewEventBroker(EventBrokerConfig{BufferSize: size})
		sub := b.Subscribe(SubscribeRequest{})
		var published, read uint64 // indexes: batch i has index i
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			if rapid.Bool().Draw(rt, "publish") {
				published++
				b.Publish(batch(published, jobEvent("default", "web")))
				continue
			}
			if read == published {
				continue // nothing to read: Next would wait
			}
			got, err := sub.Next(context.Background())
			if published-read > uint64(size) {
				must.True(rt, errors.Is(err, ErrSubscriptionLagged), must.Sprintf("read %d of %d with a buffer of %d", read, published, size))
				return
			}
			must.NoError(rt, err)
			read++
			must.Eq(rt, read, got.Index)
		}
	})
}
