package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Layout of the bbolt file:
//
//	meta/node_id, meta/secret_id
//	meta/heartbeat                              msgpack Heartbeat
//	meta/node_meta                              msgpack map[string]*string
//	allocations/<allocID>/alloc                 msgpack *structs.Allocation
//	allocations/<allocID>/tasks/<task>/handle   msgpack *drivers.TaskHandle
//	allocations/<allocID>/tasks/<task>/state    msgpack *structs.TaskState
//	allocations/<allocID>/tasks/<task>/identity sealed msgpack *structs.SignedWorkloadIdentity
//	allocations/<allocID>/tasks/<task>/template_data  sealed template data
//
// Sealed values are AES-256-GCM under KeyFile (seal.go).
var (
	metaBucket   = []byte("meta")
	allocsBucket = []byte("allocations")
	tasksBucket  = []byte("tasks")

	nodeIDKey    = []byte("node_id")
	secretIDKey  = []byte("secret_id")
	heartbeatKey = []byte("heartbeat")
	nodeMetaKey  = []byte("node_meta")
	allocKey     = []byte("alloc")
	handleKey    = []byte("handle")
	stateKey     = []byte("state")
	identityKey  = []byte("identity")
	// namedIdentityPrefix keys a named identity: identity/<name>.
	namedIdentityPrefix = []byte("identity/")
	templateKey         = []byte("template_data")
)

// DBFile is the database's path relative to the client's state dir.
var DBFile = filepath.Join("client", "state.db")

// maxBatchDelay bounds how long a write waits for others to share its
// transaction. Short enough to be invisible next to a task start, long
// enough to gather the writes of a burst of allocations.
const maxBatchDelay = 5 * time.Millisecond

// BoltStateDB is the StateDB kept in a bbolt file.
type BoltStateDB struct {
	db *bolt.DB

	mu     sync.RWMutex // guards closed against Close racing writers
	closed bool

	recovery     *Recovery
	identityPath string // IdentityFile, kept in step with meta/node_id
	sealer       *sealer
}

var _ StateDB = (*BoltStateDB)(nil)

// OpenBolt opens (creating it if needed) the database under stateDir. A
// damaged file is moved aside and replaced with an empty database; see
// Recovery.
func OpenBolt(stateDir string) (*BoltStateDB, error) {
	return openBolt(stateDir, time.Now)
}

// Recovery is a damaged state file found at start-up and moved aside.
type Recovery struct {
	Path    string // where the database is, now a fresh one
	MovedTo string // where the damaged file was kept
	Err     error  // what was wrong with it
	// IdentityErr says why the node identity could not be recovered
	// from IdentityFile; the client then registers as a new node.
	IdentityErr error
}

// Recovery reports the damaged file this database replaced, or nil.
func (s *BoltStateDB) Recovery() *Recovery { return s.recovery }

// ErrCorrupt is a state file that cannot be used as it is.
var ErrCorrupt = errors.New("client state file is damaged")

func openBolt(stateDir string, now func() time.Time) (*BoltStateDB, error) {
	path := filepath.Join(stateDir, DBFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating client state dir: %w", err)
	}
	seal, err := loadSealer(filepath.Join(stateDir, KeyFile))
	if err != nil {
		return nil, err
	}
	db, err := openChecked(path)
	if db != nil {
		db.sealer = seal
	}
	if err == nil {
		db.identityPath = filepath.Join(stateDir, IdentityFile)
		if err := db.syncIdentityFile(); err != nil {
			_ = db.Close()
			return nil, err
		}
		return db, nil
	}
	if !errors.Is(err, ErrCorrupt) {
		return nil, err
	}
	// Keep the damaged file for a post-mortem under a name that cannot
	// collide with an earlier one, and start afresh: a client that does
	// not start helps nobody, and the servers hold the allocations.
	moved := path + ".corrupt-" + now().UTC().Format("20060102T150405Z")
	if rerr := os.Rename(path, moved); rerr != nil {
		return nil, fmt.Errorf("%w; moving it aside failed: %v", err, rerr)
	}
	db, ferr := openChecked(path)
	if ferr != nil {
		return nil, ferr
	}
	db.sealer = seal
	db.recovery = &Recovery{Path: path, MovedTo: moved, Err: err}
	db.identityPath = filepath.Join(stateDir, IdentityFile)
	// An unreadable identity file leaves a new node: worse than the old
	// identity, better than no client.
	if id, ierr := readIdentity(db.identityPath); ierr != nil {
		db.recovery.IdentityErr = ierr
	} else if id.NodeID != "" {
		if perr := db.PutNodeIdentity(id); perr != nil {
			_ = db.Close()
			return nil, perr
		}
	}
	return db, nil
}

// openChecked opens path and checks it, returning an error wrapping
// ErrCorrupt when the file is damaged.
//
// bbolt maps the file into memory and trusts its metadata: pages that
// the metadata points at beyond the end of a truncated file fault when
// touched (SIGBUS), which kills the process. Such a fault during the open
// becomes a panic here (debug.SetPanicOnFault) and is recovered; the size
// check then makes sure nothing later touches a page past the end.
func openChecked(path string) (db *BoltStateDB, err error) {
	// bbolt makes a new database of a zero-length file, silently: the
	// client would then start as a new node, its allocations orphaned.
	// An empty file is a lost database (a full disk, a copy gone wrong),
	// not a new one; a new one has no file.
	if fi, serr := os.Stat(path); serr == nil && fi.Size() == 0 {
		return nil, fmt.Errorf("%w: %s is empty (zero length); to start this client afresh as a new node, stop it and remove the file", ErrCorrupt, path)
	}
	var bdb *bolt.DB
	defer func() {
		if r := recover(); r != nil {
			// The mapping of the damaged file is abandoned, not unmapped:
			// bbolt's state after a fault cannot be trusted to close.
			db, err = nil, fmt.Errorf("%w: %s: reading it faulted: %v", ErrCorrupt, path, r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))

	// The timeout turns a second agent on the same data dir into an
	// error instead of a hang on the file lock.
	bdb, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	switch {
	case errors.Is(err, berrors.ErrTimeout), errors.Is(err, os.ErrPermission):
		return nil, fmt.Errorf("opening client state %s: %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	if err := check(bdb, path); err != nil {
		_ = bdb.Close()
		return nil, err
	}
	bdb.MaxBatchDelay = maxBatchDelay
	err = bdb.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{metaBucket, allocsBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = bdb.Close()
		return nil, fmt.Errorf("initialising client state %s: %w", path, err)
	}
	return &BoltStateDB{db: bdb}, nil
}

// syncIdentityFile writes the identity file of a database from before
// there was one.
func (s *BoltStateDB) syncIdentityFile() error {
	if _, err := os.Stat(s.identityPath); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	id, err := s.GetNodeIdentity()
	if err != nil || id.NodeID == "" {
		return err
	}
	return writeIdentity(s.identityPath, id)
}

// check verifies that the file holds every page its metadata names, then
// runs bbolt's consistency check over them.
func check(db *bolt.DB, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("opening client state %s: %w", path, err)
	}
	return db.View(func(tx *bolt.Tx) error {
		if need := tx.Size(); fi.Size() < need {
			return fmt.Errorf("%w: %s: truncated: %d bytes of %d", ErrCorrupt, path, fi.Size(), need)
		}
		var problems []error
		for err := range tx.Check() {
			problems = append(problems, err)
		}
		if len(problems) > 0 {
			return fmt.Errorf("%w: %s: %w", ErrCorrupt, path, errors.Join(problems...))
		}
		return nil
	})
}

func encode(v any) ([]byte, error) {
	var buf []byte
	if err := codec.NewEncoderBytes(&buf, structs.MsgpackHandle).Encode(v); err != nil {
		return nil, err
	}
	return buf, nil
}

func decode(b []byte, out any) error {
	return codec.NewDecoderBytes(b, structs.MsgpackHandle).Decode(out)
}

// batch runs fn in a shared write transaction. fn may run more than once
// (bbolt retries a failed batch one function at a time), so it must only
// put values computed beforehand.
func (s *BoltStateDB) batch(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return s.db.Batch(fn)
}

func (s *BoltStateDB) view(fn func(tx *bolt.Tx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	return s.db.View(fn)
}

// GetNodeIdentity implements StateDB.
func (s *BoltStateDB) GetNodeIdentity() (NodeIdentity, error) {
	var id NodeIdentity
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(metaBucket)
		id.NodeID = string(b.Get(nodeIDKey))
		id.SecretID = string(b.Get(secretIDKey))
		return nil
	})
	return id, err
}

// PutNodeIdentity implements StateDB.
// The identity file is written first: a crash between the two leaves the
// file ahead of the database, never behind it.
func (s *BoltStateDB) PutNodeIdentity(id NodeIdentity) error {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if s.identityPath != "" {
		if err := writeIdentity(s.identityPath, id); err != nil {
			return err
		}
	}
	return s.batch(func(tx *bolt.Tx) error {
		b := tx.Bucket(metaBucket)
		if err := b.Put(nodeIDKey, []byte(id.NodeID)); err != nil {
			return err
		}
		return b.Put(secretIDKey, []byte(id.SecretID))
	})
}

// GetHeartbeat implements StateDB.
func (s *BoltStateDB) GetHeartbeat() (Heartbeat, error) {
	var hb Heartbeat
	err := s.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(metaBucket).Get(heartbeatKey)
		if raw == nil {
			return nil
		}
		if err := decode(raw, &hb); err != nil {
			return fmt.Errorf("decoding last heartbeat: %w", err)
		}
		return nil
	})
	return hb, err
}

// PutHeartbeat implements StateDB.
func (s *BoltStateDB) PutHeartbeat(hb Heartbeat) error {
	raw, err := encode(hb)
	if err != nil {
		return fmt.Errorf("encoding last heartbeat: %w", err)
	}
	return s.batch(func(tx *bolt.Tx) error { return tx.Bucket(metaBucket).Put(heartbeatKey, raw) })
}

// GetNodeMeta implements StateDB.
func (s *BoltStateDB) GetNodeMeta() (map[string]*string, error) {
	out := map[string]*string{}
	err := s.view(func(tx *bolt.Tx) error {
		raw := tx.Bucket(metaBucket).Get(nodeMetaKey)
		if raw == nil {
			return nil
		}
		if err := decode(raw, &out); err != nil {
			return fmt.Errorf("decoding dynamic node metadata: %w", err)
		}
		return nil
	})
	return out, err
}

// PutNodeMeta implements StateDB.
func (s *BoltStateDB) PutNodeMeta(meta map[string]*string) error {
	raw, err := encode(meta)
	if err != nil {
		return fmt.Errorf("encoding dynamic node metadata: %w", err)
	}
	return s.batch(func(tx *bolt.Tx) error { return tx.Bucket(metaBucket).Put(nodeMetaKey, raw) })
}

// GetAllocations implements StateDB.
func (s *BoltStateDB) GetAllocations() ([]*AllocRecord, map[string]error, error) {
	var out []*AllocRecord
	errs := make(map[string]error)
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(allocsBucket).ForEachBucket(func(k []byte) error {
			id := string(k)
			rec, err := s.readAlloc(id, tx.Bucket(allocsBucket).Bucket(k))
			if err != nil {
				errs[id] = err
				return nil
			}
			out = append(out, rec)
			return nil
		})
	})
	if err != nil {
		return nil, nil, err
	}
	return out, errs, nil
}

func (s *BoltStateDB) readAlloc(allocID string, ab *bolt.Bucket) (*AllocRecord, error) {
	raw := ab.Get(allocKey)
	if raw == nil {
		return nil, errors.New("allocation record has no allocation")
	}
	rec := &AllocRecord{Tasks: make(map[string]*TaskRecord)}
	if err := decode(raw, &rec.Alloc); err != nil {
		return nil, fmt.Errorf("decoding allocation: %w", err)
	}
	tb := ab.Bucket(tasksBucket)
	if tb == nil {
		return rec, nil
	}
	err := tb.ForEachBucket(func(name []byte) error {
		b := tb.Bucket(name)
		tr := &TaskRecord{}
		if raw := b.Get(handleKey); raw != nil {
			if err := decode(raw, &tr.Handle); err != nil {
				return fmt.Errorf("decoding handle of task %q: %w", name, err)
			}
		}
		if raw := b.Get(stateKey); raw != nil {
			if err := decode(raw, &tr.State); err != nil {
				return fmt.Errorf("decoding state of task %q: %w", name, err)
			}
		}
		// A sealed value that does not open is dropped and reported:
		// the task still restores, without what it held.
		var dropped []error
		if raw := b.Get(templateKey); raw != nil {
			plain, err := s.sealer.open(raw, sealAAD(allocID, string(name), templateKey))
			if err != nil {
				dropped = append(dropped, fmt.Errorf("template data: %w", err))
			}
			tr.TemplateData = plain
		}
		if raw := b.Get(identityKey); raw != nil {
			plain, err := s.sealer.open(raw, sealAAD(allocID, string(name), identityKey))
			if err == nil {
				if err := decode(plain, &tr.Identity); err != nil {
					return fmt.Errorf("decoding identity of task %q: %w", name, err)
				}
			} else {
				dropped = append(dropped, fmt.Errorf("workload identity: %w", err))
			}
		}
		c := b.Cursor()
		for k, raw := c.Seek(namedIdentityPrefix); k != nil && bytes.HasPrefix(k, namedIdentityPrefix); k, raw = c.Next() {
			idName := string(k[len(namedIdentityPrefix):])
			plain, err := s.sealer.open(raw, sealAAD(allocID, string(name), k))
			if err != nil {
				dropped = append(dropped, fmt.Errorf("workload identity %q: %w", idName, err))
				continue
			}
			var id *structs.SignedWorkloadIdentity
			if err := decode(plain, &id); err != nil {
				return fmt.Errorf("decoding identity %q of task %q: %w", idName, name, err)
			}
			if tr.NamedIdentities == nil {
				tr.NamedIdentities = map[string]*structs.SignedWorkloadIdentity{}
			}
			tr.NamedIdentities[idName] = id
		}
		tr.Dropped = errors.Join(dropped...)
		rec.Tasks[string(name)] = tr
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// PutAllocations implements StateDB.
func (s *BoltStateDB) PutAllocations(allocs ...*structs.Allocation) error {
	if len(allocs) == 0 {
		return nil
	}
	encoded := make([][]byte, len(allocs))
	for i, a := range allocs {
		b, err := encode(a)
		if err != nil {
			return fmt.Errorf("encoding allocation %s: %w", a.ID, err)
		}
		encoded[i] = b
	}
	return s.batch(func(tx *bolt.Tx) error {
		root := tx.Bucket(allocsBucket)
		for i, a := range allocs {
			ab, err := root.CreateBucketIfNotExists([]byte(a.ID))
			if err != nil {
				return err
			}
			if err := ab.Put(allocKey, encoded[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteAllocation implements StateDB.
func (s *BoltStateDB) DeleteAllocation(allocID string) error {
	return s.batch(func(tx *bolt.Tx) error {
		err := tx.Bucket(allocsBucket).DeleteBucket([]byte(allocID))
		if errors.Is(err, berrors.ErrBucketNotFound) {
			return nil
		}
		return err
	})
}

// PutTaskHandle implements StateDB. Writes for an allocation that is not
// stored are dropped, so that a task runner racing the destruction of its
// allocation cannot bring the record back.
func (s *BoltStateDB) PutTaskHandle(allocID, task string, h *drivers.TaskHandle) error {
	var raw []byte
	if h != nil {
		var err error
		if raw, err = encode(h); err != nil {
			return fmt.Errorf("encoding handle of task %s/%s: %w", allocID, task, err)
		}
	}
	return s.putTaskKey(allocID, task, handleKey, raw)
}

// PutTaskState implements StateDB, with PutTaskHandle's rule for missing
// allocations.
func (s *BoltStateDB) PutTaskState(allocID, task string, ts *structs.TaskState) error {
	raw, err := encode(ts)
	if err != nil {
		return fmt.Errorf("encoding state of task %s/%s: %w", allocID, task, err)
	}
	return s.putTaskKey(allocID, task, stateKey, raw)
}

// PutTaskIdentity implements StateDB, with PutTaskHandle's rule for
// missing allocations.
func (s *BoltStateDB) PutTaskIdentity(allocID, task string, id *structs.SignedWorkloadIdentity) error {
	key := identityKey
	if id != nil && id.IdentityName != "" {
		key = append(slices.Clone(namedIdentityPrefix), id.IdentityName...)
	}
	var raw []byte
	if id != nil {
		plain, err := encode(id)
		if err != nil {
			return fmt.Errorf("encoding identity of task %s/%s: %w", allocID, task, err)
		}
		if raw, err = s.sealer.seal(plain, sealAAD(allocID, task, key)); err != nil {
			return fmt.Errorf("sealing identity of task %s/%s: %w", allocID, task, err)
		}
	}
	return s.putTaskKey(allocID, task, key, raw)
}

// PutTaskTemplateData implements StateDB, with PutTaskHandle's rule for
// missing allocations; the bytes are sealed under the client's key, nil
// deletes them.
func (s *BoltStateDB) PutTaskTemplateData(allocID, task string, data []byte) error {
	var raw []byte
	if data != nil {
		var err error
		if raw, err = s.sealer.seal(data, sealAAD(allocID, task, templateKey)); err != nil {
			return fmt.Errorf("sealing template data of task %s/%s: %w", allocID, task, err)
		}
	}
	return s.putTaskKey(allocID, task, templateKey, raw)
}

// putTaskKey writes (or, for nil raw, deletes) one key of a task's bucket.
func (s *BoltStateDB) putTaskKey(allocID, task string, key, raw []byte) error {
	return s.batch(func(tx *bolt.Tx) error {
		ab := tx.Bucket(allocsBucket).Bucket([]byte(allocID))
		if ab == nil {
			return nil
		}
		tb, err := ab.CreateBucketIfNotExists(tasksBucket)
		if err != nil {
			return err
		}
		b, err := tb.CreateBucketIfNotExists([]byte(task))
		if err != nil {
			return err
		}
		if raw == nil {
			return b.Delete(key)
		}
		return b.Put(key, raw)
	})
}

// Close implements StateDB. It waits for writes in flight.
func (s *BoltStateDB) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}
