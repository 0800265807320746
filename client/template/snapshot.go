package template

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Snapshot is the data a task's templates last rendered from, kept so
// that a template renders the same content while its Source cannot be
// reached (a client restarted while cut off from the servers). It is safe
// for concurrent use and marshals to JSON for the client's state
// database.
type Snapshot struct {
	mu   sync.Mutex
	data snapshotData
}

type snapshotData struct {
	// Vars holds nil for a variable known not to exist.
	Vars        map[string]*structs.VariableDecrypted     `json:",omitempty"`
	VarLists    map[string][]*structs.VariableMetadata    `json:",omitempty"`
	Services    map[string][]*structs.ServiceRegistration `json:",omitempty"`
	ServiceList []*structs.ServiceRegistrationStub        `json:",omitempty"`
	HasList     bool                                      `json:",omitempty"`
}

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot { return &Snapshot{} }

// Record keeps what a render read.
func (s *Snapshot) Record(res *Result) {
	if res == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := &s.data
	for dep, v := range res.Data {
		switch dep.Kind {
		case "var":
			if d.Vars == nil {
				d.Vars = map[string]*structs.VariableDecrypted{}
			}
			d.Vars[dep.Arg], _ = v.(*structs.VariableDecrypted)
		case "varList":
			if d.VarLists == nil {
				d.VarLists = map[string][]*structs.VariableMetadata{}
			}
			d.VarLists[dep.Arg], _ = v.([]*structs.VariableMetadata)
		case "service":
			if d.Services == nil {
				d.Services = map[string][]*structs.ServiceRegistration{}
			}
			d.Services[dep.Arg], _ = v.([]*structs.ServiceRegistration)
		case "services":
			d.ServiceList, _ = v.([]*structs.ServiceRegistrationStub)
			d.HasList = true
		}
	}
}

// MarshalJSON implements json.Marshaler.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.Marshal(&s.data)
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	var d snapshotData
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("template data: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = d
	return nil
}

// WithFallback returns a Source that reads from primary and, when a read
// that does not block fails, answers from snap if it holds that read
// (at index 0, so that a Watch on it wakes at the primary's first
// answer). Blocking reads go to primary only: only the servers can say
// that something changed.
func WithFallback(primary Source, snap *Snapshot) Source {
	return &fallback{primary: primary, snap: snap}
}

type fallback struct {
	primary Source
	snap    *Snapshot
}

func (f *fallback) Var(ctx context.Context, path string, minIndex uint64) (*structs.VariableDecrypted, uint64, error) {
	v, idx, err := f.primary.Var(ctx, path, minIndex)
	if err == nil || minIndex > 0 || ctx.Err() != nil {
		return v, idx, err
	}
	f.snap.mu.Lock()
	defer f.snap.mu.Unlock()
	if kept, ok := f.snap.data.Vars[path]; ok {
		return kept, 0, nil
	}
	return v, idx, err
}

func (f *fallback) VarList(ctx context.Context, prefix string, minIndex uint64) ([]*structs.VariableMetadata, uint64, error) {
	v, idx, err := f.primary.VarList(ctx, prefix, minIndex)
	if err == nil || minIndex > 0 || ctx.Err() != nil {
		return v, idx, err
	}
	f.snap.mu.Lock()
	defer f.snap.mu.Unlock()
	if kept, ok := f.snap.data.VarLists[prefix]; ok {
		return kept, 0, nil
	}
	return v, idx, err
}

func (f *fallback) Service(ctx context.Context, name string, minIndex uint64) ([]*structs.ServiceRegistration, uint64, error) {
	v, idx, err := f.primary.Service(ctx, name, minIndex)
	if err == nil || minIndex > 0 || ctx.Err() != nil {
		return v, idx, err
	}
	f.snap.mu.Lock()
	defer f.snap.mu.Unlock()
	if kept, ok := f.snap.data.Services[name]; ok {
		return kept, 0, nil
	}
	return v, idx, err
}

func (f *fallback) Services(ctx context.Context, minIndex uint64) ([]*structs.ServiceRegistrationStub, uint64, error) {
	v, idx, err := f.primary.Services(ctx, minIndex)
	if err == nil || minIndex > 0 || ctx.Err() != nil {
		return v, idx, err
	}
	f.snap.mu.Lock()
	defer f.snap.mu.Unlock()
	if f.snap.data.HasList {
		return f.snap.data.ServiceList, 0, nil
	}
	return v, idx, err
}
