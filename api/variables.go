package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Variables reaches /v1/vars and /v1/var/:path.
type Variables struct {
	client *Client
}

// Variables returns a handle on the variable endpoints.
func (c *Client) Variables() *Variables { return &Variables{client: c} }

// VariableLock is a lock over a variable; TTL and LockDelay are
// durations as strings ("15s"), as upstream's.
type VariableLock struct {
	ID        string `json:",omitempty"`
	TTL       string `json:",omitempty"`
	LockDelay string `json:",omitempty"`
}

// VariableMetadata is a variable without its items, as lists return it.
type VariableMetadata struct {
	Namespace   string
	Path        string
	CreateIndex uint64
	CreateTime  int64
	ModifyIndex uint64
	ModifyTime  int64
	Lock        *VariableLock `json:",omitempty"`
}

// VariableItems are a variable's key/value pairs.
type VariableItems map[string]string

// Variable is a variable with its items.
type Variable struct {
	Namespace   string
	Path        string
	CreateIndex uint64
	CreateTime  int64
	ModifyIndex uint64
	ModifyTime  int64
	Items       VariableItems
	Lock        *VariableLock `json:",omitempty"`
}

// LockID is the ID of the variable's lock, or "".
func (v *Variable) LockID() string {
	if v == nil || v.Lock == nil {
		return ""
	}
	return v.Lock.ID
}

// ErrVariableNotFound is returned by Read for a path that holds nothing.
var ErrVariableNotFound = errors.New("variable not found")

// ErrCASConflict is a check-and-set (or lock) write the server refused
// with 409: Conflict is the variable it lost to (nil when none exists).
type ErrCASConflict struct {
	CheckIndex uint64
	Conflict   *Variable
}

func (e ErrCASConflict) Error() string {
	var found uint64
	if e.Conflict != nil {
		found = e.Conflict.ModifyIndex
	}
	return fmt.Sprintf("cas conflict: expected ModifyIndex %v; found %v", e.CheckIndex, found)
}

func varPath(p string) string { return "/v1/var/" + strings.Trim(p, " /") }

// conflictOf turns a 409 into ErrCASConflict; other errors pass.
func conflictOf(err error, check uint64) error {
	var ure *UnexpectedResponseError
	if !errors.As(err, &ure) || ure.StatusCode != http.StatusConflict {
		return err
	}
	var v *Variable
	if ure.Body != "" && ure.Body != "null" {
		v = new(Variable)
		if jerr := json.Unmarshal([]byte(ure.Body), v); jerr != nil {
			// A 409 that is not a variable (a lock renewal refused).
			return err
		}
	}
	return ErrCASConflict{CheckIndex: check, Conflict: v}
}

// List lists the metadata of the variables (q.Prefix narrows by path).
func (v *Variables) List(q *QueryOptions) ([]*VariableMetadata, *QueryMeta, error) {
	var out []*VariableMetadata
	qm, err := v.client.query("/v1/vars", &out, q)
	return out, qm, err
}

// Read reads a variable; ErrVariableNotFound when the path holds none.
func (v *Variables) Read(path string, q *QueryOptions) (*Variable, *QueryMeta, error) {
	var out Variable
	qm, err := v.client.query(varPath(path), &out, q)
	var ure *UnexpectedResponseError
	if errors.As(err, &ure) && ure.IsNotFound() {
		return nil, nil, ErrVariableNotFound
	}
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Create writes a variable whatever is stored.
func (v *Variables) Create(in *Variable, w *WriteOptions) (*Variable, *WriteMeta, error) {
	var out Variable
	wm, err := v.client.write(http.MethodPut, varPath(in.Path), in, &out, w)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}

// CheckedUpdate writes a variable only if the stored one's modify index
// is check (0: only if none is stored); ErrCASConflict otherwise.
func (v *Variables) CheckedUpdate(in *Variable, check uint64, w *WriteOptions) (*Variable, *WriteMeta, error) {
	var out Variable
	wm, err := v.client.write(http.MethodPut, fmt.Sprintf("%s?cas=%d", varPath(in.Path), check), in, &out, w)
	if err != nil {
		return nil, nil, conflictOf(err, check)
	}
	return &out, wm, nil
}

// Delete deletes a variable.
func (v *Variables) Delete(path string, w *WriteOptions) (*WriteMeta, error) {
	return v.client.write(http.MethodDelete, varPath(path), nil, nil, w)
}

// CheckedDelete deletes a variable only at modify index check.
func (v *Variables) CheckedDelete(path string, check uint64, w *WriteOptions) (*WriteMeta, error) {
	wm, err := v.client.write(http.MethodDelete, fmt.Sprintf("%s?cas=%d", varPath(path), check), nil, nil, w)
	if err != nil {
		return nil, conflictOf(err, check)
	}
	return wm, nil
}

// AcquireLock takes the lock of a variable (made if missing), with the
// TTL and delay of in.Lock; the answer carries the lock ID.
func (v *Variables) AcquireLock(in *Variable, w *WriteOptions) (*Variable, *WriteMeta, error) {
	return v.lockOp(in, "lock-acquire", w)
}

// ReleaseLock releases the lock in.Lock.ID names.
func (v *Variables) ReleaseLock(in *Variable, w *WriteOptions) (*Variable, *WriteMeta, error) {
	return v.lockOp(in, "lock-release", w)
}

func (v *Variables) lockOp(in *Variable, op string, w *WriteOptions) (*Variable, *WriteMeta, error) {
	var out Variable
	wm, err := v.client.write(http.MethodPut, varPath(in.Path)+"?"+op, in, &out, w)
	if err != nil {
		return nil, nil, conflictOf(err, 0)
	}
	return &out, wm, nil
}

// RenewLock renews the lock in.Lock.ID names before its TTL runs out.
func (v *Variables) RenewLock(in *Variable, w *WriteOptions) (*VariableMetadata, *WriteMeta, error) {
	var out VariableMetadata
	wm, err := v.client.write(http.MethodPut, varPath(in.Path)+"?lock-renew", in, &out, w)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}
