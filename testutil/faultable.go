package testutil

import (
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/pool"
)

// RPCHandler is how a client reaches the servers.
type RPCHandler interface {
	RPC(method string, args, reply any) error
}

// FaultMode is how a cut link fails.
type FaultMode int

const (
	// Healthy passes every call through.
	Healthy FaultMode = iota
	// Blackhole swallows calls: they hang until the link heals or
	// BlackholeTimeout passes, then fail, like packets that vanish.
	Blackhole
	// Reset fails calls at once, like refused connections.
	Reset
)

// ErrPartitioned is returned by calls over a cut link. It is a transport
// error, as a dead link is to the client's real RPC handler, so the client
// retries it as it would a real partition.
var ErrPartitioned = fmt.Errorf("testutil: link partitioned: %w", pool.ErrTransport)

// FaultableRPC wraps a client's link to the servers. Cutting it fails new
// calls and the calls in flight (a blocking query loses its connection),
// as a real partition does.
type FaultableRPC struct {
	inner RPCHandler
	// BlackholeTimeout bounds how long a blackholed call hangs.
	BlackholeTimeout time.Duration

	mu     sync.Mutex
	mode   FaultMode
	cutCh  chan struct{} // closed when the link is cut
	healCh chan struct{} // closed when the link heals
}

// NewFaultableRPC returns a healthy link to inner.
func NewFaultableRPC(inner RPCHandler) *FaultableRPC {
	return &FaultableRPC{inner: inner, BlackholeTimeout: 2 * time.Second,
		cutCh: make(chan struct{}), healCh: make(chan struct{})}
}

// Cut partitions the link in the given mode.
func (f *FaultableRPC) Cut(mode FaultMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mode == Healthy {
		close(f.cutCh)
		f.healCh = make(chan struct{})
	}
	f.mode = mode
}

// Heal restores the link. Blackholed calls still fail: their packets were
// lost; the caller retries.
func (f *FaultableRPC) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mode != Healthy {
		close(f.healCh)
		f.cutCh = make(chan struct{})
	}
	f.mode = Healthy
}

// RPC implements RPCHandler.
func (f *FaultableRPC) RPC(method string, args, reply any) error {
	f.mu.Lock()
	mode, cutCh, healCh := f.mode, f.cutCh, f.healCh
	f.mu.Unlock()
	switch mode {
	case Reset:
		return ErrPartitioned
	case Blackhole:
		t := time.NewTimer(f.BlackholeTimeout)
		defer t.Stop()
		select {
		case <-healCh:
		case <-t.C:
		}
		return ErrPartitioned
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
		return ErrPartitioned
	}
}
