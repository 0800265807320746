package agent

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Limits on what one HTTP client can make the agent hold. Upstream's
// clients send jobs of a few kilobytes; every figure leaves them far
// from a limit while bounding what strangers on the network can pin.
const (
	// maxBodyBudget bounds the request bodies held at once, by every
	// client together. Decoding a body takes a few times its size again,
	// so four bodies of the largest size are several hundred megabytes.
	maxBodyBudget = 64 << 20
	// bodyBudgetWait is how long a body waits for room in the budget
	// before the request is refused with 503.
	bodyBudgetWait = 10 * time.Second
	// bodyReadTimeout bounds the time to receive a request body: a
	// client that stops sending in the middle no longer holds its
	// connection (and its share of the budget) forever.
	bodyReadTimeout = 30 * time.Second
	// headerReadTimeout bounds the time to receive a request's headers.
	headerReadTimeout = 10 * time.Second
	// idleTimeout closes keep-alive connections with no request for
	// this long; clients redial transparently.
	idleTimeout = 2 * time.Minute
)

// bodyLimits are the limits one HTTPServer applies, fields so tests can
// shrink them.
type bodyLimits struct {
	budget      *byteBudget
	wait        time.Duration
	readTimeout time.Duration
}

func defaultBodyLimits() bodyLimits {
	return bodyLimits{budget: newByteBudget(maxBodyBudget), wait: bodyBudgetWait, readTimeout: bodyReadTimeout}
}

// readBody reads r's body into memory before the handler runs, within
// the size cap, the shared budget and the read timeout, and replaces it
// with the bytes read. The returned func gives the bytes back to the
// budget once the handler is done with them.
func (l bodyLimits) readBody(w http.ResponseWriter, r *http.Request) (release func(), err error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return func() {}, nil
	}
	if r.ContentLength > maxRequestBody {
		return nil, codedErrorf(http.StatusRequestEntityTooLarge, "Request body too large: the limit is %d bytes", maxRequestBody)
	}
	want := r.ContentLength
	if want < 0 { // chunked: it may be as large as allowed
		want = maxRequestBody
	}
	ctx, cancel := context.WithTimeout(r.Context(), l.wait)
	defer cancel()
	if err := l.budget.acquire(ctx, want); err != nil {
		w.Header().Set("Retry-After", "5")
		return nil, codedErrorf(http.StatusServiceUnavailable,
			"Too many request bodies in flight: the agent holds at most %d bytes of them at once and waited %s for room; retry later", l.budget.size, l.wait)
	}
	held := min(want, l.budget.size) // what acquire took
	release = func() { l.budget.release(held) }

	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(l.readTimeout))
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	// The deadline covers the body only: once it is read, a slow
	// handler must not find its connection cut under it.
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		release()
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return nil, codedErrorf(http.StatusRequestEntityTooLarge, "Request body too large: the limit is %d bytes", tooBig.Limit)
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, codedErrorf(http.StatusRequestTimeout, "Request body not received within %s", l.readTimeout)
		}
		return nil, codedErrorf(http.StatusBadRequest, "Reading request body failed: %v", err)
	}
	if n := int64(len(data)); n < held {
		l.budget.release(held - n)
		held = n
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	return release, nil
}

// byteBudget is a counting semaphore of bytes whose waiters are served
// in arrival order, so a large body is not starved by a stream of small
// ones.
type byteBudget struct {
	size int64

	mu      sync.Mutex
	free    int64
	peak    int64     // the most ever taken at once
	waiters list.List // of *budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

func newByteBudget(size int64) *byteBudget { return &byteBudget{size: size, free: size} }

// acquire takes n bytes (at most size), waiting until they are free or
// ctx is done.
func (b *byteBudget) acquire(ctx context.Context, n int64) error {
	n = min(n, b.size)
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.free >= n {
		b.take(n)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	el := b.waiters.PushBack(w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready:
			// Granted as the wait ended: hand the bytes back.
			b.free += n
		default:
			b.waiters.Remove(el)
		}
		b.grantLocked()
		b.mu.Unlock()
		return ctx.Err()
	}
}

// release returns n bytes taken by acquire.
func (b *byteBudget) release(n int64) {
	n = min(n, b.size)
	b.mu.Lock()
	b.free += n
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked wakes waiters, in order, while the first one fits.
func (b *byteBudget) grantLocked() {
	for el := b.waiters.Front(); el != nil; el = b.waiters.Front() {
		w := el.Value.(*budgetWaiter)
		if b.free < w.n {
			return
		}
		b.take(w.n)
		b.waiters.Remove(el)
		close(w.ready)
	}
}

func (b *byteBudget) take(n int64) {
	b.free -= n
	b.peak = max(b.peak, b.size-b.free)
}

// usage reports the bytes taken now and at most, for tests and metrics.
func (b *byteBudget) usage() (now, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size - b.free, b.peak
}
