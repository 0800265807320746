package upstreamstate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Bucket and key names of an upstream client's state.db (see doc.go).
var (
	metaBucket   = []byte("meta")
	versionKey   = []byte("version")
	allocsBucket = []byte("allocations")

	allocKey      = []byte("alloc")
	ackStateKey   = []byte("acknowledged_state")
	taskPrefix    = "task-"
	taskStateKey  = []byte("task_state")
	localStateKey = []byte("local_state")
)

// maxPID is the largest PID Linux hands out (PID_MAX_LIMIT on 64-bit).
const maxPID = 1 << 22

// handle is the msgpack settings the values are decoded with: no
// collection is allocated ahead of its elements beyond a small size, so a
// corrupt length costs nothing before the decoder finds the bytes missing.
var handle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.MaxInitLen = 256
	return h
}()

// The shapes decoded: the few fields of upstream's structs this package
// reports, by the names upstream's msgpack carries. Other fields are
// skipped by the decoder.
type (
	allocRecord struct {
		Alloc *allocShape
	}
	allocShape struct {
		ID            string
		Namespace     string
		Name          string
		NodeID        string
		JobID         string
		TaskGroup     string
		DesiredStatus string
		Job           *jobShape
	}
	jobShape struct {
		ID         string
		Name       string
		TaskGroups []groupShape
	}
	groupShape struct {
		Name  string
		Tasks []taskShape
	}
	taskShape struct {
		Name   string
		Driver string
	}
	ackRecord struct {
		State *struct{ ClientStatus string }
	}
	taskStateShape struct {
		State      string
		Failed     bool
		Restarts   uint64
		StartedAt  []byte // time.Time in its MarshalBinary form
		FinishedAt []byte
	}
	localStateShape struct {
		TaskHandle *handleShape
	}
	handleShape struct {
		Version     int
		Config      *struct{ ID string }
		DriverState []byte // the driver's own msgpack
	}
	// executorState is the driver state of raw_exec and exec: the task's
	// process and the executor plugin that supervises it.
	executorState struct {
		Pid            int64
		ReattachConfig *struct {
			Pid     int64
			Network string
			Addr    string
		}
		StartedAt []byte
	}
)

// executorDrivers are the drivers whose driver state is an executorState.
var executorDrivers = map[string]bool{"raw_exec": true, "exec": true}

// allocRead is an Alloc with what Read checks it against.
type allocRead struct {
	Alloc
	nodeID string
}

// reader reads one state.db.
type reader struct {
	path string
	opts Options
}

func (r *reader) errf(key string, format string, args ...any) error {
	return &FormatError{File: r.path, Key: key, Err: fmt.Errorf(format, args...)}
}

func readState(path string, opts Options) ([]allocRead, error) {
	r := &reader{path: path, opts: opts}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, r.errf("", "not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > opts.MaxFileSize {
		return nil, r.errf("", "%d bytes, more than the %d this reader accepts", fi.Size(), opts.MaxFileSize)
	}
	db, err := bolt.Open(path, 0, &bolt.Options{ReadOnly: true, Timeout: opts.LockTimeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, &FormatError{File: path, Err: ErrLocked}
	}
	if err != nil {
		return nil, r.errf("", "not a bbolt file an upstream client wrote: %w", err)
	}
	defer db.Close()
	var allocs []allocRead
	err = db.View(func(tx *bolt.Tx) error {
		if err := r.checkVersion(tx); err != nil {
			return err
		}
		root := tx.Bucket(allocsBucket)
		if root == nil {
			return nil // a client that never ran an allocation
		}
		return root.ForEach(func(k, v []byte) error {
			key := "allocations/" + printable(k)
			if v != nil {
				return r.errf(key, "a value where an allocation's bucket belongs")
			}
			a, err := r.readAlloc(key, string(k), root.Bucket(k))
			if err != nil {
				return err
			}
			allocs = append(allocs, a)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return allocs, nil
}

func (r *reader) checkVersion(tx *bolt.Tx) error {
	meta := tx.Bucket(metaBucket)
	if meta == nil {
		return r.errf("meta", "no such bucket: not an upstream client's state.db")
	}
	v := meta.Get(versionKey)
	if v == nil {
		if meta.Bucket(versionKey) != nil {
			return r.errf("meta/version", "a bucket where the schema version belongs")
		}
		return r.errf("meta/version", "missing: not an upstream client's state.db")
	}
	if string(v) != SchemaVersion {
		return r.errf("meta/version", "schema %q; this reader knows %q (Nomad 1.6)", printable(v), SchemaVersion)
	}
	return nil
}

func (r *reader) readAlloc(key, id string, b *bolt.Bucket) (allocRead, error) {
	if !isUUID(id) {
		return allocRead{}, r.errf(key, "the bucket's name is not an allocation ID")
	}
	var rec allocRecord
	if err := r.decode(b, key, allocKey, &rec, true); err != nil {
		return allocRead{}, err
	}
	ak := key + "/alloc"
	if rec.Alloc == nil {
		return allocRead{}, r.errf(ak, "no Alloc in the record")
	}
	al := rec.Alloc
	if al.ID != id {
		return allocRead{}, r.errf(ak, "allocation %s in the bucket of %s", printable([]byte(al.ID)), id)
	}
	a := allocRead{nodeID: al.NodeID, Alloc: Alloc{
		ID: al.ID, Namespace: al.Namespace, Name: al.Name, JobID: al.JobID,
		TaskGroup: al.TaskGroup, DesiredStatus: al.DesiredStatus,
	}}
	var group *groupShape
	if al.Job != nil {
		a.JobName = al.Job.Name
		for i := range al.Job.TaskGroups {
			if al.Job.TaskGroups[i].Name == al.TaskGroup {
				group = &al.Job.TaskGroups[i]
			}
		}
	}
	if group == nil {
		return allocRead{}, r.errf(ak, "the allocation's job has no group %s", printable([]byte(al.TaskGroup)))
	}

	var ack ackRecord
	if err := r.decode(b, key, ackStateKey, &ack, false); err != nil {
		return allocRead{}, err
	}
	if ack.State != nil {
		a.ClientStatus = ack.State.ClientStatus
	}

	// The tasks the job names, in its order, then any other task bucket.
	drivers := map[string]string{}
	var names []string
	for _, t := range group.Tasks {
		if _, dup := drivers[t.Name]; dup {
			return allocRead{}, r.errf(ak, "task %s twice in group %s", printable([]byte(t.Name)), printable([]byte(group.Name)))
		}
		drivers[t.Name] = t.Driver
		names = append(names, t.Name)
	}
	var extra []string
	err := b.ForEach(func(k, v []byte) error {
		name, ok := strings.CutPrefix(string(k), taskPrefix)
		if !ok {
			return nil // alloc, acknowledged_state, deploy_status, network_status, ...
		}
		if v != nil {
			return r.errf(key+"/"+printable(k), "a value where a task's bucket belongs")
		}
		if _, known := drivers[name]; !known {
			extra = append(extra, name)
		}
		return nil
	})
	if err != nil {
		return allocRead{}, err
	}
	slices.Sort(extra)
	for _, name := range append(names, extra...) {
		t, err := r.readTask(key, name, drivers[name], b.Bucket([]byte(taskPrefix+name)))
		if err != nil {
			return allocRead{}, err
		}
		a.Tasks = append(a.Tasks, t)
	}
	return a, nil
}

// readTask reads a task's bucket; tb is nil for a task the client has
// recorded nothing of yet.
func (r *reader) readTask(allocKey, name, driver string, tb *bolt.Bucket) (Task, error) {
	t := Task{Name: name, Driver: driver}
	if tb == nil {
		return t, nil
	}
	key := allocKey + "/" + taskPrefix + printable([]byte(name))
	var ts taskStateShape
	if err := r.decode(tb, key, taskStateKey, &ts, false); err != nil {
		return Task{}, err
	}
	t.State, t.Failed, t.Restarts = ts.State, ts.Failed, ts.Restarts
	var err error
	if t.StartedAt, err = r.time(key+"/task_state", "StartedAt", ts.StartedAt); err != nil {
		return Task{}, err
	}
	if t.FinishedAt, err = r.time(key+"/task_state", "FinishedAt", ts.FinishedAt); err != nil {
		return Task{}, err
	}

	var ls localStateShape
	if err := r.decode(tb, key, localStateKey, &ls, false); err != nil {
		return Task{}, err
	}
	if ls.TaskHandle == nil {
		return t, nil
	}
	lk := key + "/local_state"
	h := &Handle{Version: ls.TaskHandle.Version, DriverStateSize: len(ls.TaskHandle.DriverState)}
	if ls.TaskHandle.Config != nil {
		h.TaskID = ls.TaskHandle.Config.ID
	}
	if executorDrivers[driver] && len(ls.TaskHandle.DriverState) > 0 {
		var es executorState
		if err := r.decodeValue(lk+": TaskHandle.DriverState", ls.TaskHandle.DriverState, &es); err != nil {
			return Task{}, err
		}
		if es.Pid <= 0 || es.Pid > maxPID {
			return Task{}, r.errf(lk, "%s driver state: task PID %d", driver, es.Pid)
		}
		h.PID = int(es.Pid)
		if rc := es.ReattachConfig; rc != nil {
			if rc.Pid < 0 || rc.Pid > maxPID {
				return Task{}, r.errf(lk, "%s driver state: executor PID %d", driver, rc.Pid)
			}
			h.ExecutorPID, h.ExecutorNetwork, h.ExecutorAddr = int(rc.Pid), rc.Network, rc.Addr
		}
		if h.StartedAt, err = r.time(lk, "TaskHandle.DriverState.StartedAt", es.StartedAt); err != nil {
			return Task{}, err
		}
	}
	t.Handle = h
	return t, nil
}

// decode decodes the msgpack map at b's key k into out. An absent key is
// an error only when required.
func (r *reader) decode(b *bolt.Bucket, bucketKey string, k []byte, out any, required bool) error {
	key := bucketKey + "/" + string(k)
	v := b.Get(k)
	if v == nil {
		if b.Bucket(k) != nil {
			return r.errf(key, "a bucket where a value belongs")
		}
		if required {
			return r.errf(key, "missing")
		}
		return nil
	}
	return r.decodeValue(key, v, out)
}

// decodeValue decodes one msgpack map, the whole of v, into out.
func (r *reader) decodeValue(key string, v []byte, out any) (err error) {
	if len(v) > r.opts.MaxValueSize {
		return r.errf(key, "%d bytes, more than the %d this reader decodes", len(v), r.opts.MaxValueSize)
	}
	if !isMsgpackMap(v) {
		return r.errf(key, "not a msgpack map (first byte %#02x)", v[0])
	}
	defer func() {
		if p := recover(); p != nil {
			err = r.errf(key, "malformed msgpack: %v", p)
		}
	}()
	// v lives in bbolt's read-only mapping: decode a copy, so that no
	// decoded value points into it after the transaction.
	dec := codec.NewDecoderBytes(bytes.Clone(v), handle)
	if err := dec.Decode(out); err != nil {
		return r.errf(key, "malformed msgpack: %v", err)
	}
	if n := dec.NumBytesRead(); n != len(v) {
		return r.errf(key, "%d bytes after the msgpack value", len(v)-n)
	}
	return nil
}

// time decodes a time.Time upstream encoded in its MarshalBinary form.
// Nothing recorded is the zero time.
func (r *reader) time(key, field string, b []byte) (time.Time, error) {
	if len(b) == 0 {
		return time.Time{}, nil
	}
	var t time.Time
	if err := t.UnmarshalBinary(b); err != nil {
		return time.Time{}, r.errf(key, "%s: %v", field, err)
	}
	if t.IsZero() {
		return time.Time{}, nil
	}
	return t, nil
}

// isMsgpackMap reports whether v begins a msgpack map (fixmap, map 16,
// map 32).
func isMsgpackMap(v []byte) bool {
	return len(v) > 0 && (v[0]&0xf0 == 0x80 || v[0] == 0xde || v[0] == 0xdf)
}

// printable quotes a key for an error when it is not plain text, and
// shortens a long one.
func printable(k []byte) string {
	const max = 80
	s := string(k)
	if len(s) > max {
		s = s[:max] + "..."
	}
	for _, c := range []byte(s) {
		if c < 0x20 || c >= 0x7f || c == '/' {
			return fmt.Sprintf("%q", s)
		}
	}
	return s
}
