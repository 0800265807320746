package upstreamrpc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// SnapshotState is what ReadSnapshotState found in an upstream snapshot:
// the objects our model carries, translated, and a report of the rest.
// Objects keep upstream's IDs, indexes, secrets, statuses and times.
type SnapshotState struct {
	// Index is the highest index the snapshot's index table records.
	Index uint64
	// Indexes is the snapshot's index table: table name to the index of
	// its last write. Upstream's table names are ours for every table we
	// carry (nodes, jobs, allocs, acl_token, ...).
	Indexes map[string]uint64

	Nodes        []*structs.Node
	Jobs         []*structs.Job // the current version of each job
	JobVersions  []*structs.Job // every version kept, the current one included
	JobSummaries []*structs.JobSummary
	Evals        []*structs.Evaluation
	Allocs       []*structs.Allocation
	Deployments  []*structs.Deployment
	Namespaces   []*structs.Namespace
	NodePools    []*structs.NodePool
	ACLPolicies  []*structs.ACLPolicy
	ACLTokens    []*structs.ACLToken
	// ScalingPolicies are upstream's scaling policy table. Ours keeps each
	// policy in its group (structs.TaskGroup.Scaling), so they are carried
	// by Jobs and JobVersions, whose policies take these indexes; the list
	// is here for a report.
	ScalingPolicies      []*structs.ScalingPolicy
	ScalingEvents        []*structs.JobScalingEvents
	ServiceRegistrations []*structs.ServiceRegistration
	SchedulerConfig      *structs.SchedulerConfiguration

	// NotCarried lists, by kind, every record of the file that is not in
	// the fields above, and why.
	NotCarried []NotCarried
}

// NotCarried is one kind of record a snapshot holds that we do not
// restore.
type NotCarried struct {
	Kind   string
	Count  int
	Reason string
}

// Errors of ReadSnapshotState.
var (
	// ErrNotUpstreamState refuses a stream that does not open with
	// upstream's snapshot header.
	ErrNotUpstreamState = errors.New("not an upstream Nomad snapshot state stream")
	// ErrSnapshotRecord wraps a record that cannot be read: truncated,
	// corrupt, or larger than MaxSnapshotRecord.
	ErrSnapshotRecord = errors.New("upstream snapshot record")
)

// MaxSnapshotRecord bounds one record of an upstream snapshot (its
// msgpack object), so that a corrupt length prefix fails the read
// instead of allocating what it claims. Upstream's own limits keep real
// objects far below it: a job is refused above a few MiB.
const MaxSnapshotRecord = 64 << 20

// IsUpstreamState reports whether prefix, the first bytes of a state.bin,
// is upstream's: its FSM snapshot opens with an empty msgpack map (its
// snapshot header), then a record type byte. Ours opens with a record's
// kind, a small msgpack integer (the FSM's fsmSnapshot.Persist), or is
// empty.
func IsUpstreamState(prefix []byte) bool {
	return len(prefix) > 0 && prefix[0] == 0x80
}

// ReadSnapshotState decodes upstream v1.6.5's FSM snapshot stream (the
// state.bin of its snapshot archive) into our model. It reads the stream
// to its end; a record it cannot read fails the whole read (nothing is
// returned half-read), naming the record's number and type byte. A record
// of a type it does not know is skipped and counted in NotCarried.
func ReadSnapshotState(r io.Reader) (*SnapshotState, error) {
	br := bufio.NewReader(r)
	var buf bytes.Buffer
	first, err := br.Peek(1)
	if err != nil || !IsUpstreamState(first) {
		return nil, fmt.Errorf("%w: the stream does not open with an empty msgpack map", ErrNotUpstreamState)
	}
	if err := readObject(br, &buf); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrSnapshotRecord, err)
	}
	t := newTranslation()
	for n := 1; ; n++ {
		typ, err := br.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w %d: %w", ErrSnapshotRecord, n, err)
		}
		buf.Reset()
		if err := readObject(br, &buf); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("%w %d (type byte %d, %s): %w", ErrSnapshotRecord, n, typ, recordKindName(typ), err)
		}
		if err := t.add(typ, buf.Bytes()); err != nil {
			return nil, fmt.Errorf("%w %d (type byte %d, %s): %w", ErrSnapshotRecord, n, typ, recordKindName(typ), err)
		}
	}
	return t.finish(), nil
}

// readObject copies one msgpack object from r to buf, checking its shape
// as it goes: lengths are trusted only as far as the bytes that follow
// them, and the object may not exceed MaxSnapshotRecord. It walks the
// object without recursing (a count of the values still due), so neither
// depth nor a huge container count costs memory.
func readObject(r *bufio.Reader, buf *bytes.Buffer) error {
	due := uint64(1)
	for due > 0 {
		due--
		b, err := r.ReadByte()
		if err != nil {
			return err
		}
		buf.WriteByte(b)
		var lenBytes, skip int // a length of lenBytes bytes follows; then skip more bytes
		var items, per uint64  // a container of items, each of per values
		var payload bool       // the length counts payload bytes
		var ext bool           // an extension: a type byte follows the length
		switch {
		case b <= 0x7f, b >= 0xe0, b == 0xc0, b == 0xc2, b == 0xc3:
		case b&0xf0 == 0x80:
			items, per = uint64(b&0x0f), 2
		case b&0xf0 == 0x90:
			items, per = uint64(b&0x0f), 1
		case b&0xe0 == 0xa0:
			skip = int(b & 0x1f)
		case b == 0xc4, b == 0xd9:
			lenBytes, payload = 1, true
		case b == 0xc5, b == 0xda:
			lenBytes, payload = 2, true
		case b == 0xc6, b == 0xdb:
			lenBytes, payload = 4, true
		case b == 0xc7:
			lenBytes, payload, ext = 1, true, true
		case b == 0xc8:
			lenBytes, payload, ext = 2, true, true
		case b == 0xc9:
			lenBytes, payload, ext = 4, true, true
		case b == 0xca:
			skip = 4
		case b == 0xcb:
			skip = 8
		case b >= 0xcc && b <= 0xcf:
			skip = 1 << (b - 0xcc)
		case b >= 0xd0 && b <= 0xd3:
			skip = 1 << (b - 0xd0)
		case b >= 0xd4 && b <= 0xd8:
			skip = 1 + 1<<(b-0xd4)
		case b == 0xdc:
			lenBytes, per = 2, 1
		case b == 0xdd:
			lenBytes, per = 4, 1
		case b == 0xde:
			lenBytes, per = 2, 2
		case b == 0xdf:
			lenBytes, per = 4, 2
		default:
			return fmt.Errorf("byte 0x%02x is not a msgpack value", b)
		}
		if lenBytes > 0 {
			var l [8]byte
			if _, err := io.ReadFull(r, l[8-lenBytes:]); err != nil {
				return err
			}
			buf.Write(l[8-lenBytes:])
			n := binary.BigEndian.Uint64(l[:])
			if payload {
				if n > MaxSnapshotRecord {
					return fmt.Errorf("a value of %d bytes exceeds the %d-byte record limit", n, MaxSnapshotRecord)
				}
				skip = int(n)
				if ext {
					skip++
				}
			} else {
				items = n
			}
		}
		if buf.Len()+skip > MaxSnapshotRecord {
			return fmt.Errorf("the record exceeds %d bytes", MaxSnapshotRecord)
		}
		if skip > 0 {
			// CopyN grows buf by what arrives, not by what was claimed.
			if _, err := io.CopyN(buf, r, int64(skip)); err != nil {
				return err
			}
		}
		due += items * per
	}
	return nil
}

// Carried is how many objects of one kind a snapshot carries.
type Carried struct {
	Kind  string
	Count int
}

// Carried lists the carried kinds with their counts, in a fixed order,
// kinds named as NotCarried names upstream's: the rows `snapshot inspect`
// shows beside NotCarried.
func (s *SnapshotState) Carried() []Carried {
	sched := 0
	if s.SchedulerConfig != nil {
		sched = 1
	}
	return []Carried{
		{"Node", len(s.Nodes)},
		{"Job", len(s.Jobs)},
		{"JobVersion", len(s.JobVersions)},
		{"JobSummary", len(s.JobSummaries)},
		{"Evaluation", len(s.Evals)},
		{"Allocation", len(s.Allocs)},
		{"Deployment", len(s.Deployments)},
		{"Namespace", len(s.Namespaces)},
		{"NodePool", len(s.NodePools)},
		{"ACLPolicy", len(s.ACLPolicies)},
		{"ACLToken", len(s.ACLTokens)},
		{"ScalingPolicy", len(s.ScalingPolicies)},
		{"ScalingEvents", len(s.ScalingEvents)},
		{"ServiceRegistration", len(s.ServiceRegistrations)},
		{"SchedulerConfig", sched},
	}
}
