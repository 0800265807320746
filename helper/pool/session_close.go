package pool

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// SessionContext returns a context that ends when s closes, for
// EndReadsWhenDone; it costs one goroutine for the session's life.
func SessionContext(s *yamux.Session) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.CloseChan()
		cancel()
	}()
	return ctx
}

// EndReadsWhenDone returns stream with every read on it ended, with a
// timeout error, once ctx ends (a SessionContext: the stream's session
// closed), whatever read deadline is set on it after that. Close the
// returned stream, not stream, so that ctx lets go of it.
//
// yamux (v0.1.2) closes a session's done channel before it marks its
// streams closed, and a read parked on one of its streams wakes on that
// channel, finds the stream still open and parks again, at once, again
// and again, until the session's Close gets round to the streams: a
// spin, with a new timer each time round when the read has a deadline.
// A session carries many streams (every call a node or a fleet's
// simulator has in flight, every blocking query); on a loaded machine
// hundreds of them spinning took the CPU from the Close that would end
// them, and from everything else: a 10,000-node fleet's servers went
// without a leader for minutes. A read past its deadline returns at
// once.
func EndReadsWhenDone(ctx context.Context, stream net.Conn) net.Conn {
	e := &endingStream{Conn: stream}
	e.stop = context.AfterFunc(ctx, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.ended = true
		_ = e.Conn.SetReadDeadline(time.Now())
	})
	return e
}

// endingStream is EndReadsWhenDone's stream.
type endingStream struct {
	net.Conn
	stop  func() bool
	mu    sync.Mutex
	ended bool
}

func (e *endingStream) SetReadDeadline(t time.Time) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		t = time.Now()
	}
	return e.Conn.SetReadDeadline(t)
}

func (e *endingStream) SetDeadline(t time.Time) error {
	if err := e.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return e.SetReadDeadline(t)
}

func (e *endingStream) Close() error {
	e.stop()
	return e.Conn.Close()
}
