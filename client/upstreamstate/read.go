package upstreamstate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"
)

// The files of an upstream client's data_dir, relative to it.
var (
	NodeIDFile   = filepath.Join("client", "client-id")
	SecretIDFile = filepath.Join("client", "secret-id")
	StateFile    = filepath.Join("client", "state.db")
)

// SchemaVersion is the only meta/version of state.db this package reads:
// the one Nomad 1.6.5 writes.
const SchemaVersion = "3"

// ErrNotUpstream is returned (wrapped) by Read when the data_dir holds no
// upstream client's node ID: it is not an upstream client's, or that
// client never started.
var ErrNotUpstream = errors.New("not an upstream client's data_dir")

// ErrLocked is returned (wrapped) when state.db stays locked for
// Options.LockTimeout: an upstream agent still runs on the data_dir.
var ErrLocked = errors.New("state.db is locked (is the upstream agent still running on this data_dir? stop it first)")

// Options bound what Read accepts. The zero value of a field means its
// default.
type Options struct {
	// MaxFileSize is the largest state.db read (default 256 MiB: an
	// upstream client with a thousand allocations writes a few MiB).
	MaxFileSize int64
	// MaxValueSize is the largest single value decoded (default 16 MiB;
	// the largest is an allocation with its job).
	MaxValueSize int
	// LockTimeout is how long Read waits for an upstream agent's lock on
	// state.db (default 1s).
	LockTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = 256 << 20
	}
	if o.MaxValueSize <= 0 {
		o.MaxValueSize = 16 << 20
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = time.Second
	}
	return o
}

// Node is what an upstream client left of its node.
type Node struct {
	// NodeID and SecretID are the node's identity (client/client-id and
	// client/secret-id): registering with them, a client is the same node
	// to the servers.
	NodeID   string
	SecretID string
	// Allocs are the allocations in state.db, in the order of their IDs.
	Allocs []Alloc
}

// Alloc is one allocation the upstream client held.
type Alloc struct {
	ID        string
	Namespace string
	// Name is the allocation's name, "<job>.<group>[<index>]".
	Name      string
	JobID     string
	JobName   string
	TaskGroup string
	// DesiredStatus is the servers' wish as of the client's last copy of
	// the allocation (run, stop, evict).
	DesiredStatus string
	// ClientStatus is the status the servers last acknowledged
	// (acknowledged_state), "" when none was acknowledged yet. The
	// allocation's own ClientStatus in state.db is the one it was sent
	// with (pending) and is not reported.
	ClientStatus string
	// Tasks are the group's tasks in the order of the job, then any task
	// state.db holds that the job no longer names.
	Tasks []Task
}

// Task is one task of an allocation.
type Task struct {
	Name string
	// Driver is the task's driver as the allocation's job names it, ""
	// for a task the job does not name.
	Driver string
	// State is the task's state (pending, running, dead), "" when the
	// client recorded none.
	State    string
	Failed   bool
	Restarts uint64
	// StartedAt and FinishedAt are zero when not recorded.
	StartedAt  time.Time
	FinishedAt time.Time
	// Handle is the driver's handle of the task's last run, nil when the
	// client recorded none.
	Handle *Handle
}

// Handle is what the client kept of a driver's task handle.
type Handle struct {
	// Version is the driver's handle version (1 for raw_exec and exec).
	Version int
	// TaskID is the driver's ID of the run, "<alloc>/<task>/<8 hex>".
	TaskID string
	// PID is the task's process (raw_exec and exec: the leader of its own
	// process group, a child of the executor), 0 when the driver's state
	// names none. It is the PID of the last run: for a task that is not
	// running it names a process that has exited, and a PID can be reused,
	// so whoever adopts it checks the process first.
	PID int
	// ExecutorPID, ExecutorNetwork and ExecutorAddr are the executor
	// plugin that supervises the process (raw_exec and exec), 0 and ""
	// for other drivers.
	ExecutorPID     int
	ExecutorNetwork string
	ExecutorAddr    string
	// StartedAt is when the driver started the process, zero when not
	// recorded.
	StartedAt time.Time
	// DriverStateSize is the size of the driver's own state; for a driver
	// whose state this package does not decode (anything but raw_exec and
	// exec) it is all that is reported.
	DriverStateSize int
}

// RunningPID is the task's process if the client last saw the task
// running and its driver named one, else 0.
func (t Task) RunningPID() int {
	if t.State != "running" || t.Handle == nil {
		return 0
	}
	return t.Handle.PID
}

// FormatError is a file of the data_dir that is not what an upstream
// client writes. Key is the bucket path of the key in state.db
// ("allocations/<id>/task-web/local_state"), "" for the file as a whole.
type FormatError struct {
	File string
	Key  string
	Err  error
}

func (e *FormatError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("upstream client state %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("upstream client state %s: key %s: %v", e.File, e.Key, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }

// Read reads the upstream client's data_dir dataDir. It changes nothing
// there.
func Read(dataDir string, opts Options) (node *Node, err error) {
	opts = opts.withDefaults()
	nodeID, err := readID(filepath.Join(dataDir, NodeIDFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w (no %s)", dataDir, ErrNotUpstream, NodeIDFile)
	}
	if err != nil {
		return nil, err
	}
	secretID, err := readID(filepath.Join(dataDir, SecretIDFile))
	if err != nil {
		return nil, err
	}
	node = &Node{NodeID: nodeID, SecretID: secretID}

	// A damaged bbolt file can make bbolt panic (it checks page types and
	// bounds by panicking) or fault on a mapping shorter than the pages
	// it names; both become an error about the file.
	path := filepath.Join(dataDir, StateFile)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			node, err = nil, &FormatError{File: path, Err: fmt.Errorf("damaged bbolt file: %v", r)}
		}
	}()
	allocs, err := readState(path, opts)
	if err != nil {
		return nil, err
	}
	for _, a := range allocs {
		if a.nodeID != "" && a.nodeID != nodeID {
			return nil, &FormatError{File: path, Key: "allocations/" + a.ID + "/alloc",
				Err: fmt.Errorf("the allocation is node %s's, %s names node %s", a.nodeID, NodeIDFile, nodeID)}
		}
		node.Allocs = append(node.Allocs, a.Alloc)
	}
	return node, nil
}

// maxIDFile bounds what is read of an ID file: a UUID and a newline, with
// room to say that a longer file is too long.
const maxIDFile = 64

// readID reads an ID file: a UUID, which upstream writes without a
// newline (one is accepted).
func readID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", &FormatError{File: path, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxIDFile+1))
	if err != nil {
		return "", &FormatError{File: path, Err: err}
	}
	if len(b) > maxIDFile {
		return "", &FormatError{File: path, Err: fmt.Errorf("%d bytes or more, an ID is 36", len(b))}
	}
	id := string(b)
	if n := len(id); n > 0 && id[n-1] == '\n' {
		id = id[:n-1]
	}
	if !isUUID(id) {
		return "", &FormatError{File: path, Err: fmt.Errorf("%q is not a UUID", id)}
	}
	return id, nil
}

// isUUID reports whether s is a UUID in its 8-4-4-4-12 hex form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
