package structs

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"
)

// Variable limits and lock defaults, as upstream's.
const (
	// MaxVariableSize bounds the encoded items of one variable.
	MaxVariableSize = 64 * 1024
	// DefaultLockTTL and DefaultLockDelay apply to a lock that names none.
	DefaultLockTTL   = 15 * time.Second
	DefaultLockDelay = 15 * time.Second
	// MinLockTTL and MaxLockTTL bound a lock's TTL; MaxLockDelay its delay.
	MinLockTTL   = 10 * time.Millisecond
	MaxLockTTL   = 24 * time.Hour
	MaxLockDelay = 24 * time.Hour
)

// validVariablePath is upstream's rule: URL-safe characters that do not
// clash with "@" and "." in templates, up to 128 bytes.
var validVariablePath = regexp.MustCompile(`^[a-zA-Z0-9-_~/]{1,128}$`)

// Refusals of a variable write.
var (
	// ErrVariableNotFound answers a read of a path that holds nothing.
	ErrVariableNotFound = errors.New("variable not found")
	// ErrVariableTooLarge refuses a variable whose items exceed
	// MaxVariableSize (upstream's text; ours adds the size).
	ErrVariableTooLarge = fmt.Errorf("%w: variables are limited to 64KiB in total size", ErrInvalidRequest)
	// ErrLockConflict answers a lock operation the variable's lock does
	// not allow: acquiring a held lock, renewing or releasing one the
	// caller does not hold.
	ErrLockConflict = errors.New("conflicting operation over lock")
)

// VariableLock is a lock held over a variable: whoever holds ID may
// change the variable and must renew the lock within TTL; once the lock
// is lost (expired) nobody may acquire it again for LockDelay.
type VariableLock struct {
	ID        string
	TTL       time.Duration
	LockDelay time.Duration
}

// VariableMetadata is what a variable is without its items: what a list
// returns.
type VariableMetadata struct {
	Namespace   string
	Path        string
	Lock        *VariableLock
	CreateIndex uint64
	CreateTime  int64
	ModifyIndex uint64
	ModifyTime  int64
}

// VariableItems are a variable's key/value pairs, the part encrypted.
type VariableItems map[string]string

// Size is the length of the items encoded as the servers encrypt them.
func (vi VariableItems) Size() int {
	buf, _ := json.Marshal(vi)
	return len(buf)
}

// VariableDecrypted is a variable with its items in the clear: what the
// RPC endpoints take and give, never what raft or the state store hold.
type VariableDecrypted struct {
	VariableMetadata
	Items VariableItems
}

// VariableData is a variable's items encrypted with root key KeyID
// (AES-256-GCM, the nonce first).
type VariableData struct {
	Data  []byte
	KeyID string
}

// VariableEncrypted is the stored variable: metadata in the clear, items
// encrypted. LockDelayUntil (ours, never on the wire) is the time, in
// Unix nanoseconds on the leader's clock, before which a lock that
// expired may not be acquired again; it is carried in raft so a new
// leader honours the delay of the old one.
type VariableEncrypted struct {
	VariableMetadata
	VariableData
	LockDelayUntil int64
}

// Copy returns a deep copy.
func (v *VariableEncrypted) Copy() *VariableEncrypted {
	if v == nil {
		return nil
	}
	c := *v
	c.Data = append([]byte(nil), v.Data...)
	if v.Lock != nil {
		l := *v.Lock
		c.Lock = &l
	}
	return &c
}

// Copy returns a deep copy.
func (v *VariableDecrypted) Copy() *VariableDecrypted {
	if v == nil {
		return nil
	}
	c := *v
	c.Items = maps.Clone(v.Items)
	if v.Lock != nil {
		l := *v.Lock
		c.Lock = &l
	}
	return &c
}

// Copy returns a copy.
func (l *VariableLock) Copy() *VariableLock {
	if l == nil {
		return nil
	}
	c := *l
	return &c
}

// LockID is the ID of the variable's lock, or "" when it holds none.
func (m *VariableMetadata) LockID() string {
	if m.Lock == nil {
		return ""
	}
	return m.Lock.ID
}

// ValidateVariablePath checks a path as upstream: URL-safe characters,
// at most 128 bytes, and under the top-level "nomad" directory only
// nomad/jobs and nomad/job-templates and what is below them.
func ValidateVariablePath(path string) error {
	if !validVariablePath.MatchString(path) {
		return fmt.Errorf("%w: invalid path %q: use 1 to 128 letters, digits and the characters - _ ~ /", ErrInvalidRequest, path)
	}
	parts := strings.Split(path, "/")
	if parts[0] != "nomad" {
		return nil
	}
	if len(parts) == 1 || (parts[1] != "jobs" && parts[1] != "job-templates") {
		return fmt.Errorf(`%w: invalid path %q: only paths at "nomad/jobs" or "nomad/job-templates" and below are valid paths under the top-level "nomad" directory`, ErrInvalidRequest, path)
	}
	return nil
}

// Validate checks a variable a caller asks to write. Items may be empty
// only for a lock operation (a lock is often a variable with no items).
func (v *VariableDecrypted) Validate(op VarOp) error {
	var pr problems
	if err := ValidateVariablePath(v.Path); err != nil {
		pr.add("%s", strings.TrimPrefix(err.Error(), ErrInvalidRequest.Error()+": "))
	}
	if len(v.Items) == 0 && !op.IsLock() && op != VarOpDelete && op != VarOpDeleteCAS {
		pr.add("empty variables are invalid: set at least one item")
	}
	for k := range v.Items {
		if k == "" {
			pr.add("items: a key can't be empty")
		}
	}
	if l := v.Lock; l != nil && op == VarOpLockAcquire {
		if l.TTL != 0 && (l.TTL < MinLockTTL || l.TTL > MaxLockTTL) {
			pr.add("lock.ttl %s is out of range: use %s to %s", l.TTL, MinLockTTL, MaxLockTTL)
		}
		if l.LockDelay < 0 || l.LockDelay > MaxLockDelay {
			pr.add("lock.lock_delay %s is out of range: use 0 to %s", l.LockDelay, MaxLockDelay)
		}
	}
	return pr.err()
}

// VarOp is the operation of a variable write.
type VarOp string

// Variable operations (upstream's names on the wire).
const (
	VarOpSet         VarOp = "set"
	VarOpDelete      VarOp = "delete"
	VarOpDeleteCAS   VarOp = "delete-cas"
	VarOpCAS         VarOp = "cas"
	VarOpLockAcquire VarOp = "lock-acquire"
	VarOpLockRelease VarOp = "lock-release"
)

// IsLock reports whether op acquires or releases a lock.
func (op VarOp) IsLock() bool { return op == VarOpLockAcquire || op == VarOpLockRelease }

// VarOpResult is what a variable write did.
type VarOpResult string

// Variable write results.
const (
	VarOpResultOk       VarOpResult = "ok"
	VarOpResultConflict VarOpResult = "conflict"
	VarOpResultRedacted VarOpResult = "conflict-redacted"
	VarOpResultError    VarOpResult = "error"
)

// VariablesApplyRequest is a write of one variable, in the clear: the
// leader encrypts it before it goes through raft.
type VariablesApplyRequest struct {
	Op  VarOp
	Var *VariableDecrypted
	WriteRequest
}

// VariablesApplyResponse is what a write did: the variable written, or
// the one that conflicted (its items only when the caller may read them).
type VariablesApplyResponse struct {
	Op       VarOp
	Input    *VariableDecrypted
	Result   VarOpResult
	Conflict *VariableDecrypted
	Output   *VariableDecrypted
	WriteMeta
}

// IsConflict reports whether the write lost a check-and-set or a lock.
func (r *VariablesApplyResponse) IsConflict() bool {
	return r.Result == VarOpResultConflict || r.Result == VarOpResultRedacted
}

// VarApplyStateRequest is the raft entry of a variable write: the items
// already encrypted. Now is the leader's time, which stamps the variable
// and is compared with a lock delay; LockDelayUntil is set on the release
// of an expired lock only.
type VarApplyStateRequest struct {
	Op             VarOp
	Var            *VariableEncrypted
	Now            int64
	Expired        bool
	LockDelayUntil int64
}

// VarApplyStateResponse is what the FSM did with a variable write.
type VarApplyStateResponse struct {
	Result   VarOpResult
	Conflict *VariableEncrypted
	Written  *VariableEncrypted
	// Err is why the write was refused (Result error), as text.
	Err string
}

// VariablesReadRequest reads one variable.
type VariablesReadRequest struct {
	Path string
	QueryOptions
}

// VariablesReadResponse is one variable, or nil.
type VariablesReadResponse struct {
	Data *VariableDecrypted
	QueryMeta
}

// VariablesListRequest lists variables by path prefix (QueryOptions.Prefix)
// in a namespace, or in every namespace with "*".
type VariablesListRequest struct {
	QueryOptions
}

// VariablesListResponse is the metadata of the variables the caller may
// list.
type VariablesListResponse struct {
	Data []*VariableMetadata
	QueryMeta
}

// VariablesRenewLockRequest renews the lock the caller holds on a
// variable; only the leader's timer moves, nothing goes through raft.
type VariablesRenewLockRequest struct {
	Path   string
	LockID string
	WriteRequest
}

// VariablesRenewLockResponse is the variable whose lock was renewed.
type VariablesRenewLockResponse struct {
	VarMeta *VariableMetadata
	WriteMeta
}
