package testutil

import (
	"context"
	"errors"
	"net"
	"reflect"
	"time"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/fault"
)

// FaultableRPC wraps a client's link to the servers: a fault.Link. Reset
// and Blackhole fail new calls and the calls in flight (a blocking query
// loses its connection), as a real partition does; Stall holds new calls
// until the heal.
type FaultableRPC struct {
	inner client.RPCHandler
	// BlackholeTimeout bounds how long a blackholed call hangs.
	BlackholeTimeout time.Duration

	link fault.Switch
}

var _ fault.Link = (*FaultableRPC)(nil)

// NewFaultableRPC returns a healthy link to inner.
func NewFaultableRPC(inner client.RPCHandler) *FaultableRPC {
	return &FaultableRPC{inner: inner, BlackholeTimeout: 2 * time.Second}
}

// Cut fails the link in mode m until Heal.
func (f *FaultableRPC) Cut(m fault.Mode) { f.link.Cut(m) }

// Heal restores the link. Blackholed calls still fail: their packets were
// lost; the caller retries. Stalled calls go through.
func (f *FaultableRPC) Heal() { f.link.Heal() }

// RPC implements client.RPCHandler. A call whose request context ends
// returns at once with the context's error, as one over a real link does.
func (f *FaultableRPC) RPC(method string, args, reply any) error {
	ctx := structs.RequestContext(args)
	cutCh, err := f.link.Enter(ctx, f.BlackholeTimeout, nil)
	if err != nil {
		return err
	}
	// The call decodes into its own reply so that one abandoned by a cut
	// never writes into the caller's.
	own := reflect.New(reflect.TypeOf(reply).Elem())
	done := make(chan error, 1)
	go func() { done <- f.inner.RPC(method, args, own.Interface()) }()
	select {
	case err := <-done:
		if err == nil {
			reflect.ValueOf(reply).Elem().Set(own.Elem())
		}
		return err
	case <-cutCh:
		return fault.ErrPartitioned
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OpenSession implements client.SessionOpener when inner does: a cut link
// fails a new liveness session as it fails a call. A session already open
// is not cut by Cut; cut the client's host on the MemNet
// (Net.Isolate) to silence it.
func (f *FaultableRPC) OpenSession(ctx context.Context) (net.Conn, error) {
	opener, ok := f.inner.(client.SessionOpener)
	if !ok {
		return nil, errNoSessions
	}
	if _, err := f.link.Enter(ctx, f.BlackholeTimeout, nil); err != nil {
		return nil, err
	}
	return opener.OpenSession(ctx)
}

// errNoSessions is a FaultableRPC over a handler that carries no liveness
// session.
var errNoSessions = errors.New("testutil: the wrapped RPC handler carries no liveness session")
