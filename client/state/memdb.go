package state

import (
	"slices"
	"sync"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// MemDB is the in-memory twin of BoltStateDB, for tests. Its Close is a
// no-op that keeps the data, so one MemDB can be handed to a client, then
// to the client that replaces it, the way a restarted agent reopens its
// state file.
type MemDB struct {
	mu     sync.Mutex
	node   NodeIdentity
	hb     Heartbeat
	meta   map[string]*string
	allocs map[string]*AllocRecord
}

var _ StateDB = (*MemDB)(nil)

// NewMemDB returns an empty in-memory database.
func NewMemDB() *MemDB { return &MemDB{allocs: make(map[string]*AllocRecord)} }

// GetNodeIdentity implements StateDB.
func (m *MemDB) GetNodeIdentity() (NodeIdentity, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.node, nil
}

// PutNodeIdentity implements StateDB.
func (m *MemDB) PutNodeIdentity(id NodeIdentity) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.node = id
	return nil
}

// GetAllocations implements StateDB.
func (m *MemDB) GetAllocations() ([]*AllocRecord, map[string]error, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*AllocRecord, 0, len(m.allocs))
	for _, rec := range m.allocs {
		out = append(out, rec.copy())
	}
	return out, map[string]error{}, nil
}

// PutAllocations implements StateDB.
func (m *MemDB) PutAllocations(allocs ...*structs.Allocation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, a := range allocs {
		rec, ok := m.allocs[a.ID]
		if !ok {
			rec = &AllocRecord{Tasks: make(map[string]*TaskRecord)}
			m.allocs[a.ID] = rec
		}
		rec.Alloc = a.Copy()
	}
	return nil
}

// DeleteAllocation implements StateDB.
func (m *MemDB) DeleteAllocation(allocID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.allocs, allocID)
	return nil
}

// PutTaskHandle implements StateDB.
func (m *MemDB) PutTaskHandle(allocID, task string, h *drivers.TaskHandle) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tr := m.taskLocked(allocID, task); tr != nil {
		tr.Handle = h.Copy()
	}
	return nil
}

// PutTaskState implements StateDB.
func (m *MemDB) PutTaskState(allocID, task string, ts *structs.TaskState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tr := m.taskLocked(allocID, task); tr != nil {
		tr.State = ts.Copy()
	}
	return nil
}

// PutTaskIdentity implements StateDB.
func (m *MemDB) PutTaskIdentity(allocID, task string, id *structs.SignedWorkloadIdentity) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tr := m.taskLocked(allocID, task); tr != nil {
		if id != nil && id.IdentityName != "" {
			if tr.NamedIdentities == nil {
				tr.NamedIdentities = map[string]*structs.SignedWorkloadIdentity{}
			}
			tr.NamedIdentities[id.IdentityName] = copyIdentity(id)
		} else {
			tr.Identity = copyIdentity(id)
		}
	}
	return nil
}

// PutTaskTemplateData implements StateDB.
func (m *MemDB) PutTaskTemplateData(allocID, task string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tr := m.taskLocked(allocID, task); tr != nil {
		tr.TemplateData = slices.Clone(data)
	}
	return nil
}

func copyIdentities(m map[string]*structs.SignedWorkloadIdentity) map[string]*structs.SignedWorkloadIdentity {
	if m == nil {
		return nil
	}
	out := make(map[string]*structs.SignedWorkloadIdentity, len(m))
	for k, v := range m {
		out[k] = copyIdentity(v)
	}
	return out
}

func copyIdentity(id *structs.SignedWorkloadIdentity) *structs.SignedWorkloadIdentity {
	if id == nil {
		return nil
	}
	c := *id
	return &c
}

// taskLocked returns the task's record, creating it, or nil when the
// allocation is not stored.
func (m *MemDB) taskLocked(allocID, task string) *TaskRecord {
	rec, ok := m.allocs[allocID]
	if !ok {
		return nil
	}
	tr, ok := rec.Tasks[task]
	if !ok {
		tr = &TaskRecord{}
		rec.Tasks[task] = tr
	}
	return tr
}

// GetHeartbeat implements StateDB.
func (m *MemDB) GetHeartbeat() (Heartbeat, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hb, nil
}

// PutHeartbeat implements StateDB.
func (m *MemDB) PutHeartbeat(hb Heartbeat) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hb = hb
	return nil
}

// GetNodeMeta implements StateDB.
func (m *MemDB) GetNodeMeta() (map[string]*string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return copyMeta(m.meta), nil
}

// PutNodeMeta implements StateDB.
func (m *MemDB) PutNodeMeta(meta map[string]*string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.meta = copyMeta(meta)
	return nil
}

// copyMeta copies the map and the strings its values point to.
func copyMeta(meta map[string]*string) map[string]*string {
	out := make(map[string]*string, len(meta))
	for k, v := range meta {
		if v != nil {
			s := *v
			v = &s
		}
		out[k] = v
	}
	return out
}

// Close implements StateDB; see MemDB.
func (m *MemDB) Close() error { return nil }

func (r *AllocRecord) copy() *AllocRecord {
	out := &AllocRecord{Alloc: r.Alloc.Copy(), Tasks: make(map[string]*TaskRecord, len(r.Tasks))}
	for name, tr := range r.Tasks {
		out.Tasks[name] = &TaskRecord{Handle: tr.Handle.Copy(), State: tr.State.Copy(), Identity: copyIdentity(tr.Identity), NamedIdentities: copyIdentities(tr.NamedIdentities),
			TemplateData: slices.Clone(tr.TemplateData)}
	}
	return out
}
