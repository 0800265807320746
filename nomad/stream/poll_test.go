package stream

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"
)

// A poller that resumes from each answer's NextIndex reads every batch
// once, gets an empty answer (not an error) when nothing comes within its
// wait, and is told it lagged, rather than skipping silently, when what it
// has not read was dropped. Client-only agents serve the event stream this
// way.
func TestPoll_ResumeWaitAndLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewEventBroker(EventBrokerConfig{BufferSize: 2})
		b.Publish(batch(5, jobEvent("default", "web")))

		first, err := Poll(t.Context(), b, &PollRequest{})
		must.NoError(t, err)
		must.SliceEmpty(t, first.Batches, must.Sprint("index 0 starts after what is there"))
		must.Eq(t, 6, first.NextIndex)

		b.Publish(batch(7, jobEvent("default", "web")))
		got, err := Poll(t.Context(), b, &PollRequest{Index: first.NextIndex, Resume: true, Wait: time.Second})
		must.NoError(t, err)
		must.SliceLen(t, 1, got.Batches)
		must.Eq(t, 7, got.Batches[0].Index)
		must.Eq(t, 8, got.NextIndex)

		start := time.Now()
		empty, err := Poll(t.Context(), b, &PollRequest{Index: got.NextIndex, Resume: true, Wait: 10 * time.Second})
		must.NoError(t, err)
		must.SliceEmpty(t, empty.Batches)
		must.Eq(t, 10*time.Second, time.Since(start))
		must.Eq(t, 8, empty.NextIndex)

		for i := uint64(8); i <= 10; i++ {
			b.Publish(batch(i, jobEvent("default", "web")))
		}
		_, err = Poll(context.Background(), b, &PollRequest{Index: 8, Resume: true})
		must.ErrorIs(t, err, ErrSubscriptionLagged)
		old, err := Poll(context.Background(), b, &PollRequest{Index: 8})
		must.NoError(t, err)
		must.Eq(t, 9, old.Batches[0].Index, must.Sprint("without Resume an old index starts at the oldest kept, as upstream"))
	})
}
