package fault

import (
	"context"
	"sync"
	"time"
)

// Switch is the fault state of one Link: the mode it fails in, and the
// channels a call waits on while it fails. The Links of the tests
// (testutil.FaultableRPC, clienttest.FakeServer) hold one, so a cut fails
// their calls alike: Reset at once, Blackhole after its timeout, Stall
// held until the heal, and a call in flight lost with the link. The zero
// value is a healthy link; it is safe for concurrent use.
type Switch struct {
	mu   sync.Mutex
	mode Mode
	cut  chan struct{} // closed when the link is cut (Reset or Blackhole)
	heal chan struct{} // closed when a failed link heals
}

func (s *Switch) initLocked() {
	if s.cut == nil {
		s.cut, s.heal = make(chan struct{}), make(chan struct{})
	}
}

// Cut fails the link in mode m until Heal; Healthy heals it.
func (s *Switch) Cut(m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	if m == Healthy {
		s.healLocked()
		return
	}
	if s.mode == Healthy {
		s.heal = make(chan struct{})
	}
	if m != Stall {
		select {
		case <-s.cut:
		default:
			close(s.cut)
		}
	}
	s.mode = m
}

// Heal restores the link. Blackholed calls still fail: what they sent
// was lost, and the caller retries. Stalled calls go through.
func (s *Switch) Heal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	s.healLocked()
}

func (s *Switch) healLocked() {
	if s.mode == Healthy {
		return
	}
	close(s.heal)
	select {
	case <-s.cut:
		s.cut = make(chan struct{})
	default:
	}
	s.mode = Healthy
}

// Cutting returns the channel closed when the link is next cut (Reset
// or Blackhole): a call in flight, a blocking query above all, that sees
// it close has lost its answer with the link.
func (s *Switch) Cutting() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	return s.cut
}

// Enter is what a call meets before it goes over the link. Over a reset
// link it fails at once with ErrPartitioned; over a blackholed one it
// hangs until blackhole passes, the link heals or closed closes, then
// fails with ErrPartitioned; over a stalled one it waits for the heal
// (closed fails it). A call whose ctx ends first returns ctx's error, as
// one over a real link does. A call let through gets Cutting's channel:
// if it closes before the call is answered, the answer is lost.
// closed may be nil.
func (s *Switch) Enter(ctx context.Context, blackhole time.Duration, closed <-chan struct{}) (<-chan struct{}, error) {
	s.mu.Lock()
	s.initLocked()
	mode, heal := s.mode, s.heal
	s.mu.Unlock()
	switch mode {
	case Reset:
		return nil, ErrPartitioned
	case Blackhole:
		t := time.NewTimer(blackhole)
		defer t.Stop()
		select {
		case <-heal:
		case <-t.C:
		case <-closed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return nil, ErrPartitioned
	case Stall:
		select {
		case <-heal:
		case <-closed:
			return nil, ErrPartitioned
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	// A stalled call let through by a heal meets the link as it is now:
	// it may have been cut again meanwhile.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode == Reset || s.mode == Blackhole {
		return nil, ErrPartitioned
	}
	return s.cut, nil
}
