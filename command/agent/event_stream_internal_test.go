package agent

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/stream"
)

// lockedRecorder is a ResponseWriter whose body a test reads while the
// handler writes.
type lockedRecorder struct {
	mu      sync.Mutex
	body    bytes.Buffer
	flushes int
}

func (r *lockedRecorder) Header() http.Header { return http.Header{} }
func (r *lockedRecorder) WriteHeader(int)     {}
func (r *lockedRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body.Write(p)
}
func (r *lockedRecorder) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushes++
}
func (r *lockedRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Split(strings.TrimSuffix(r.body.String(), "\n"), "\n")
}

// A quiet stream says it lives with {} every 10 s, as upstream, so that
// proxies and clients do not take silence for a dead link; each batch is
// one line, flushed as it is written; a reader that lagged is told why on
// a last line; the stream ends when the client goes away.
func TestWriteEvents_HeartbeatBatchesAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := stream.NewEventBroker(stream.EventBrokerConfig{BufferSize: 1})
		sub := b.Subscribe(stream.SubscribeRequest{})
		ctx, cancel := context.WithCancel(t.Context())
		w := &lockedRecorder{}
		done := make(chan error, 1)
		go func() { done <- writeEvents(ctx, w, sub.Next) }()

		time.Sleep(25 * time.Second)
		synctest.Wait()
		must.Eq(t, []string{"{}", "{}"}, w.lines())

		b.Publish(stream.Events{Index: 7, Events: []stream.Event{{Topic: stream.TopicJob, Key: "web", Namespace: "default", Index: 7}}})
		synctest.Wait()
		lines := w.lines()
		must.StrHasPrefix(t, `{"Index":7,"Events":[{"Topic":"Job","Type":"","Key":"web","Namespace":"default"`, lines[2])
		must.Eq(t, 4, w.flushes, must.Sprint("the headers, two heartbeats and the batch"))

		cancel()
		must.ErrorIs(t, <-done, context.Canceled)

		lagging := b.Subscribe(stream.SubscribeRequest{Index: 1})
		b.Publish(stream.Events{Index: 8, Events: []stream.Event{{Topic: stream.TopicJob}}})
		b.Publish(stream.Events{Index: 9, Events: []stream.Event{{Topic: stream.TopicJob}}})
		w2 := &lockedRecorder{}
		must.ErrorIs(t, writeEvents(t.Context(), w2, lagging.Next), stream.ErrSubscriptionLagged)
		must.StrContains(t, w2.lines()[0], `{"Error":"event subscription fell too far behind`)
	})
}
