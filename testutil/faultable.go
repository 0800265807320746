package testutil

import (
	"reflect"
	"sync"
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

	mu     sync.Mutex
	mode   fault.Mode
	cutCh  chan struct{} // closed when the link is cut (Reset or Blackhole)
	healCh chan struct{} // closed when the link heals
}

var _ fault.Link = (*FaultableRPC)(nil)

// NewFaultableRPC returns a healthy link to inner.
func NewFaultableRPC(inner client.RPCHandler) *FaultableRPC {
	return &FaultableRPC{inner: inner, BlackholeTimeout: 2 * time.Second,
		cutCh: make(chan struct{}), healCh: make(chan struct{})}
}

// Cut fails the link in mode m until Heal.
func (f *FaultableRPC) Cut(m fault.Mode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m == fault.Healthy {
		f.healLocked()
		return
	}
	if f.mode == fault.Healthy {
		f.healCh = make(chan struct{})
	}
	if m != fault.Stall {
		select {
		case <-f.cutCh:
		default:
			close(f.cutCh)
		}
	}
	f.mode = m
}

// Heal restores the link. Blackholed calls still fail: their packets were
// lost; the caller retries. Stalled calls go through.
func (f *FaultableRPC) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.healLocked()
}

func (f *FaultableRPC) healLocked() {
	if f.mode == fault.Healthy {
		return
	}
	close(f.healCh)
	select {
	case <-f.cutCh:
		f.cutCh = make(chan struct{})
	default:
	}
	f.mode = fault.Healthy
}

// RPC implements client.RPCHandler. A call whose request context ends
// returns at once with the context's error, as one over a real link does.
func (f *FaultableRPC) RPC(method string, args, reply any) error {
	ctx := structs.RequestContext(args)
	f.mu.Lock()
	mode, cutCh, healCh := f.mode, f.cutCh, f.healCh
	f.mu.Unlock()
	switch mode {
	case fault.Reset:
		return fault.ErrPartitioned
	case fault.Blackhole:
		t := time.NewTimer(f.BlackholeTimeout)
		defer t.Stop()
		select {
		case <-healCh:
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		return fault.ErrPartitioned
	case fault.Stall:
		select {
		case <-healCh:
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
		cutCh = f.cutCh
		f.mu.Unlock()
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
