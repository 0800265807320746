package state

import (
	"errors"
	"time"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// ErrClosed is returned by every method of a closed database.
var ErrClosed = errors.New("client state database is closed")

// NodeIdentity is what makes a client the same node across restarts.
type NodeIdentity struct {
	NodeID   string
	SecretID string
}

// TaskRecord is what is persisted for one task. Handle is nil until the
// task has been started, and again after it exited and was destroyed.
type TaskRecord struct {
	Handle *drivers.TaskHandle
	State  *structs.TaskState
	// Identity is the task's last signed workload identity, nil for
	// none: a client restarted while cut off hands it to the task until
	// it expires.
	Identity *structs.SignedWorkloadIdentity
	// NamedIdentities are the task's last signed named identities, by
	// name.
	NamedIdentities map[string]*structs.SignedWorkloadIdentity
	// TemplateData is the data the task's templates last rendered from
	// (client/template.Snapshot, encoded by the task runner), nil for
	// none: a client restarted while cut off renders from it.
	TemplateData []byte
	// Dropped says why sealed values of this task (TemplateData,
	// Identity) could not be opened and were left out, nil when none
	// were; the task restores without them.
	Dropped error
}

// AllocRecord is a persisted allocation and its tasks, keyed by task name.
type AllocRecord struct {
	Alloc *structs.Allocation
	Tasks map[string]*TaskRecord
}

// Heartbeat is the client's last successful heartbeat (or registration),
// persisted so that a client restarted while cut off knows how long it has
// been alone (docs/concepts/disconnected-clients.md, "Offline reboot").
// Wall is the wall clock; BootID and SinceBoot are the boot it happened in
// and the boot clock (CLOCK_BOOTTIME) then, empty where the platform has
// none. Within one boot the boot clock measures the gap, immune to wall
// clock steps; across a reboot only the wall clock can.
type Heartbeat struct {
	Wall      time.Time
	BootID    string
	SinceBoot time.Duration
}

// StateDB is the client's local database. Implementations are safe for
// concurrent use; values are copied on the way in and out, so callers may
// keep changing what they passed.
type StateDB interface {
	// GetNodeIdentity returns the stored identity, or a zero value when
	// none was stored yet.
	GetNodeIdentity() (NodeIdentity, error)
	PutNodeIdentity(id NodeIdentity) error

	// GetAllocations returns every stored allocation with its tasks. A
	// record that cannot be decoded is skipped and reported in errs by
	// allocation ID, so that one corrupt entry does not cost the others.
	GetAllocations() (records []*AllocRecord, errs map[string]error, err error)

	// PutAllocations stores allocations in one write.
	PutAllocations(allocs ...*structs.Allocation) error

	// DeleteAllocation removes an allocation and all its task records.
	DeleteAllocation(allocID string) error

	// PutTaskHandle stores the driver handle of a started task; a nil
	// handle deletes it.
	PutTaskHandle(allocID, task string, h *drivers.TaskHandle) error

	// PutTaskState stores a task's state.
	PutTaskState(allocID, task string, ts *structs.TaskState) error

	// PutTaskIdentity stores a task's signed workload identity, the
	// default one or the one its IdentityName names.
	PutTaskIdentity(allocID, task string, id *structs.SignedWorkloadIdentity) error

	// PutTaskTemplateData stores the data a task's templates rendered
	// from.
	PutTaskTemplateData(allocID, task string, data []byte) error

	// GetHeartbeat returns the last persisted heartbeat, or a zero value
	// when none was stored yet.
	GetHeartbeat() (Heartbeat, error)
	PutHeartbeat(hb Heartbeat) error

	// GetNodeMeta returns the node's dynamic metadata (nomad node meta
	// apply): a nil value unsets the key, a config key included. Empty
	// when none was stored yet.
	GetNodeMeta() (map[string]*string, error)
	// PutNodeMeta replaces the node's dynamic metadata.
	PutNodeMeta(meta map[string]*string) error

	// Close releases the database. Later calls fail with ErrClosed.
	Close() error
}
