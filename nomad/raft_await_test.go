package nomad

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"
)

// blockedFuture is a raft future raft took and then dropped when it shut
// down: nothing ever answers it.
type blockedFuture struct{ release chan struct{} }

func (f blockedFuture) Error() error {
	<-f.release
	return nil
}

type doneFuture struct{ err error }

func (f doneFuture) Error() error { return f.err }

// A waiter on a dropped future ends with the server's shutdown. Before,
// a worker waiting on one kept Server.Shutdown (which waits for the
// workers) from returning: a test run under the race detector hung for
// eleven minutes there, and an agent would not stop on SIGTERM.
func TestAwaitRaft_EndsAtShutdown(t *testing.T) {
	s := &Server{shutdownCh: make(chan struct{})}
	f := blockedFuture{release: make(chan struct{})}
	t.Cleanup(func() { close(f.release) })
	errCh := make(chan error, 1)
	go func() { errCh <- s.awaitRaft(f) }()
	close(s.shutdownCh)
	must.ErrorIs(t, <-errCh, raft.ErrRaftShutdown)
}

// An answered future's own result comes back.
func TestAwaitRaft_ReturnsTheFuturesResult(t *testing.T) {
	s := &Server{shutdownCh: make(chan struct{})}
	must.NoError(t, s.awaitRaft(doneFuture{}))
	boom := errors.New("leadership lost")
	must.ErrorIs(t, s.awaitRaft(doneFuture{err: boom}), boom)
}
