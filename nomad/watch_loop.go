package nomad

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/state"
)

// watchLoop is the one shape of the state watchers: the leader's (the
// drainer, the deployment watcher, the periodic dispatcher, the site
// outage detector) and every server's keyring replicator. A pass reads
// the state store, adding what it read to a watch set, and says how long
// until it must run again; the loop runs it again when anything it read
// changes, when that time comes, or retry after a failed pass, until stop
// closes. The loop owns the bridge from the stop
// channel to a context and the wait, so a pass is a plain function of the
// state it reads.
type watchLoop struct {
	// state is the store the pass reads; the loop also wakes when a
	// snapshot restore abandons it, so the pass reads the new one.
	state  func() *state.StateStore
	clock  Clock
	logger hclog.Logger
	// failed is the log message of a failed pass.
	failed string
	retry  time.Duration
	// pass does one round of work. next is how long until it must run
	// again; zero means only a change of what ws watches wakes it.
	pass func(ws memdb.WatchSet) (next time.Duration, err error)
}

// run runs the passes until stop closes.
func (l watchLoop) run(stop <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for ctx.Err() == nil {
		ws := memdb.NewWatchSet()
		ws.Add(l.state().AbandonCh())
		next, err := l.pass(ws)
		if err != nil {
			l.logger.Error(l.failed, "error", err)
			next = l.retry
		}
		l.wait(ctx, ws, next)
	}
}

// wait returns when the watched state changes, after d (when d is
// positive) or when ctx ends.
func (l watchLoop) wait(ctx context.Context, ws memdb.WatchSet, d time.Duration) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if d > 0 {
		t := l.clock.AfterFunc(d, cancel)
		defer t.Stop()
	}
	_ = ws.WatchCtx(wctx)
}
