package tasks

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/nomad-edge/nomad/drivers"
)

// Set is the tasks a driver tracks, keyed by task ID.
//
// Starting a task takes time (forking a process, a mock's start_block_for),
// so an ID is first reserved, then filled once the task exists, or released
// if starting failed. A reserved ID is already taken for Reserve (two
// concurrent starts of one ID must not both run) but not yet visible to Get.
type Set[T any] struct {
	mu       sync.RWMutex
	m        map[string]T
	reserved map[string]struct{}
}

// NewSet returns an empty set.
func NewSet[T any]() *Set[T] {
	return &Set[T]{m: make(map[string]T), reserved: make(map[string]struct{})}
}

// Reserve claims id for a task about to start, or fails with
// drivers.ErrTaskExists. The caller must follow with Fill or Release.
func (s *Set[T]) Reserve(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.takenLocked(id) {
		return fmt.Errorf("%w: %q", drivers.ErrTaskExists, id)
	}
	s.reserved[id] = struct{}{}
	return nil
}

// Fill turns the reservation of id into the tracked task v.
func (s *Set[T]) Fill(id string, v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reserved, id)
	s.m[id] = v
}

// Release drops the reservation of id after a failed start.
func (s *Set[T]) Release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reserved, id)
}

// Add tracks v under id in one step, or fails with drivers.ErrTaskExists.
func (s *Set[T]) Add(id string, v T) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.takenLocked(id) {
		return fmt.Errorf("%w: %q", drivers.ErrTaskExists, id)
	}
	s.m[id] = v
	return nil
}

func (s *Set[T]) takenLocked(id string) bool {
	_, ok := s.m[id]
	_, pending := s.reserved[id]
	return ok || pending
}

// Get returns the task under id, or fails with drivers.ErrTaskNotFound.
func (s *Set[T]) Get(id string) (T, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.m[id]
	if !ok {
		var zero T
		return zero, fmt.Errorf("%w: %q", drivers.ErrTaskNotFound, id)
	}
	return v, nil
}

// Has reports whether id is tracked or reserved.
func (s *Set[T]) Has(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.takenLocked(id)
}

// Delete forgets id; deleting an unknown id is a no-op.
func (s *Set[T]) Delete(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// Len returns the number of tracked tasks.
func (s *Set[T]) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.m)
}

// IDs returns the tracked task IDs, sorted, for shutdown and tests.
func (s *Set[T]) IDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.m))
}
