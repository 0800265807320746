// Package templatetest has an in-memory template.Source for tests of the
// renderer and of the client's template hook.
package templatetest

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Source is an in-memory template.Source. Every change bumps one index;
// a blocking read waits for it, as the servers' blocking queries do.
// SetDown makes every read fail, as servers out of reach do.
type Source struct {
	mu       sync.Mutex
	index    uint64
	vars     map[string]*structs.VariableDecrypted
	services map[string][]*structs.ServiceRegistration
	down     error
	changed  chan struct{}
	reads    int
}

var _ template.Source = (*Source)(nil)

// New returns an empty source at index 1.
func New() *Source {
	return &Source{index: 1, vars: map[string]*structs.VariableDecrypted{},
		services: map[string][]*structs.ServiceRegistration{}, changed: make(chan struct{})}
}

func (s *Source) bumpLocked() {
	s.index++
	close(s.changed)
	s.changed = make(chan struct{})
}

// PutVar sets a variable's items.
func (s *Source) PutVar(path string, items map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bumpLocked()
	s.vars[path] = &structs.VariableDecrypted{
		VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: path, ModifyIndex: s.index},
		Items:            structs.VariableItems(items),
	}
}

// PutService sets a service's instances.
func (s *Source) PutService(name string, regs ...*structs.ServiceRegistration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bumpLocked()
	s.services[name] = regs
}

// SetDown makes every read fail with err (nil: answer again); blocked
// reads wake up and fail.
func (s *Source) SetDown(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = err
	close(s.changed)
	s.changed = make(chan struct{})
}

// Reads counts the reads made so far, blocking or not.
func (s *Source) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// wait blocks until the index passes minIndex (0: not at all); it returns
// with the lock held.
func (s *Source) wait(ctx context.Context, minIndex uint64) error {
	s.mu.Lock()
	s.reads++
	for {
		if s.down != nil {
			err := s.down
			s.mu.Unlock()
			return err
		}
		if minIndex == 0 || s.index > minIndex {
			return nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
	}
}

// Var implements template.Source.
func (s *Source) Var(ctx context.Context, path string, minIndex uint64) (*structs.VariableDecrypted, uint64, error) {
	if err := s.wait(ctx, minIndex); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	v := s.vars[path]
	if v == nil {
		return nil, s.index, nil
	}
	c := *v
	return &c, s.index, nil
}

// VarList implements template.Source.
func (s *Source) VarList(ctx context.Context, prefix string, minIndex uint64) ([]*structs.VariableMetadata, uint64, error) {
	if err := s.wait(ctx, minIndex); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	var out []*structs.VariableMetadata
	for p, v := range s.vars {
		if strings.HasPrefix(p, prefix) {
			m := v.VariableMetadata
			out = append(out, &m)
		}
	}
	slices.SortFunc(out, func(a, b *structs.VariableMetadata) int { return strings.Compare(a.Path, b.Path) })
	return out, s.index, nil
}

// Service implements template.Source.
func (s *Source) Service(ctx context.Context, name string, minIndex uint64) ([]*structs.ServiceRegistration, uint64, error) {
	if err := s.wait(ctx, minIndex); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	return slices.Clone(s.services[name]), s.index, nil
}

// Services implements template.Source.
func (s *Source) Services(ctx context.Context, minIndex uint64) ([]*structs.ServiceRegistrationStub, uint64, error) {
	if err := s.wait(ctx, minIndex); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	var out []*structs.ServiceRegistrationStub
	for name, regs := range s.services {
		var tags []string
		for _, r := range regs {
			tags = append(tags, r.Tags...)
		}
		out = append(out, &structs.ServiceRegistrationStub{ServiceName: name, Tags: tags})
	}
	slices.SortFunc(out, func(a, b *structs.ServiceRegistrationStub) int { return strings.Compare(a.ServiceName, b.ServiceName) })
	return out, s.index, nil
}
