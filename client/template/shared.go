package template

import (
	"context"
	"sync"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Shared returns a Source over src whose blocking reads of the same data
// from the same index share one query: a task whose templates all read
// one variable keeps one watch on it, not one per template, and a change
// costs the servers one answer. Reads that do not block go to src as
// they are. A query ends when its answer comes, or when the last reader
// waiting on it gives up; a reader that gives up alone does not end it
// for the others.
//
// Use one per task, never one across tasks: reads carry the task's
// identity, and a query shared with another task would answer with what
// that task's identity may read.
func Shared(src Source) Source {
	return &shared{src: src, flights: map[flightKey]*flight{}}
}

type shared struct {
	src     Source
	mu      sync.Mutex
	flights map[flightKey]*flight
}

type flightKey struct {
	dep      Dep
	minIndex uint64
}

// flight is one blocking query and the readers waiting on it.
type flight struct {
	done    chan struct{}
	cancel  context.CancelFunc
	waiters int
	v       any
	idx     uint64
	err     error
}

func (s *shared) read(ctx context.Context, d Dep, minIndex uint64) (any, uint64, error) {
	if minIndex == 0 {
		return read(ctx, s.src, d, 0)
	}
	k := flightKey{d, minIndex}
	s.mu.Lock()
	f := s.flights[k]
	if f == nil {
		fctx, cancel := context.WithCancel(context.Background())
		f = &flight{done: make(chan struct{}), cancel: cancel}
		s.flights[k] = f
		go func() {
			v, idx, err := read(fctx, s.src, d, minIndex)
			s.mu.Lock()
			if s.flights[k] == f {
				delete(s.flights, k)
			}
			f.v, f.idx, f.err = v, idx, err
			s.mu.Unlock()
			cancel()
			close(f.done)
		}()
	}
	f.waiters++
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.v, f.idx, f.err
	case <-ctx.Done():
		s.mu.Lock()
		f.waiters--
		if f.waiters == 0 {
			f.cancel()
			if s.flights[k] == f {
				delete(s.flights, k)
			}
		}
		s.mu.Unlock()
		return nil, 0, ctx.Err()
	}
}

// typed turns a shared read back into one Source method's result.
func typed[T any](v any, idx uint64, err error) (T, uint64, error) {
	t, _ := v.(T)
	return t, idx, err
}

// Var implements Source.
func (s *shared) Var(ctx context.Context, path string, minIndex uint64) (*structs.VariableDecrypted, uint64, error) {
	return typed[*structs.VariableDecrypted](s.read(ctx, Dep{"var", path}, minIndex))
}

// VarList implements Source.
func (s *shared) VarList(ctx context.Context, prefix string, minIndex uint64) ([]*structs.VariableMetadata, uint64, error) {
	return typed[[]*structs.VariableMetadata](s.read(ctx, Dep{"varList", prefix}, minIndex))
}

// Service implements Source.
func (s *shared) Service(ctx context.Context, name string, minIndex uint64) ([]*structs.ServiceRegistration, uint64, error) {
	return typed[[]*structs.ServiceRegistration](s.read(ctx, Dep{"service", name}, minIndex))
}

// Services implements Source.
func (s *shared) Services(ctx context.Context, minIndex uint64) ([]*structs.ServiceRegistrationStub, uint64, error) {
	return typed[[]*structs.ServiceRegistrationStub](s.read(ctx, Dep{"services", ""}, minIndex))
}
