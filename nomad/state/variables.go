package state

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// TableVariables holds the variables, their items encrypted; TableRootKeys
// the root keys' metadata (the keys themselves are in each server's
// keystore, never in the state store).
const (
	TableVariables = "variables"
	TableRootKeys  = "root_keys"
)

func variablesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableVariables,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: "Path"},
			}}},
		},
	}
}

func rootKeysTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: TableRootKeys,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: &memdb.StringFieldIndex{Field: "KeyID"}},
		},
	}
}

// VarGet returns the variable at path in namespace ns, or nil.
func (s *StateStore) VarGet(ws memdb.WatchSet, ns, path string) (*structs.VariableEncrypted, error) {
	watch, raw, err := s.db.Txn(false).FirstWatch(TableVariables, indexID, ns, path)
	if err != nil {
		return nil, fmt.Errorf("variable lookup: %w", err)
	}
	ws.Add(watch)
	if raw == nil {
		return nil, nil
	}
	return raw.(*structs.VariableEncrypted), nil
}

// Variables returns the variables of namespace ns (every namespace for
// AllNamespaces) whose path starts with prefix, by namespace then path.
func (s *StateStore) Variables(ws memdb.WatchSet, ns, prefix string) ([]*structs.VariableEncrypted, error) {
	txn := s.db.Txn(false)
	var iter memdb.ResultIterator
	var err error
	if ns == AllNamespaces {
		iter, err = getWatch(txn, ws, TableVariables, indexID)
	} else {
		iter, err = getWatch(txn, ws, TableVariables, indexID+prefixSuffix, ns, prefix)
	}
	if err != nil {
		return nil, err
	}
	var out []*structs.VariableEncrypted
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if v := raw.(*structs.VariableEncrypted); strings.HasPrefix(v.Path, prefix) {
			out = append(out, v)
		}
	}
	return out, nil
}

// VarApply applies one variable write, deciding check-and-set and lock
// conflicts against the stored variable in the same transaction: the FSM
// is the only writer, so the decision is the same on every server. A
// conflict is a result, not an error: the caller learns what it lost to.
func (s *StateStore) VarApply(index uint64, req *structs.VarApplyStateRequest) *structs.VarApplyStateResponse {
	txn := s.writeTxn(index)
	defer txn.Abort()
	resp, err := varApplyTxn(txn, index, req)
	if err != nil {
		return &structs.VarApplyStateResponse{Result: structs.VarOpResultError, Err: err.Error()}
	}
	if resp.Result != structs.VarOpResultOk {
		return resp
	}
	if err := txn.commit(); err != nil {
		return &structs.VarApplyStateResponse{Result: structs.VarOpResultError, Err: err.Error()}
	}
	return resp
}

func varApplyTxn(txn *writeTxn, index uint64, req *structs.VarApplyStateRequest) (*structs.VarApplyStateResponse, error) {
	in := req.Var
	if in == nil {
		return nil, fmt.Errorf("variable write: %w", structs.ErrMissingField)
	}
	raw, err := txn.First(TableVariables, indexID, in.Namespace, in.Path)
	if err != nil {
		return nil, fmt.Errorf("variable lookup: %w", err)
	}
	var old *structs.VariableEncrypted
	if raw != nil {
		old = raw.(*structs.VariableEncrypted)
	}
	conflict := &structs.VarApplyStateResponse{Result: structs.VarOpResultConflict, Conflict: old}
	// A variable under a lock changes only with the holder's lock ID.
	if old != nil && old.Lock != nil && old.Lock.ID != in.LockID() {
		return conflict, nil
	}
	switch req.Op {
	case structs.VarOpCAS, structs.VarOpDeleteCAS:
		var stored uint64
		if old != nil {
			stored = old.ModifyIndex
		}
		if in.ModifyIndex != stored {
			return conflict, nil
		}
	case structs.VarOpLockAcquire:
		if old != nil && (old.Lock != nil || req.Now < old.LockDelayUntil) {
			return conflict, nil
		}
	case structs.VarOpLockRelease:
		if old == nil || old.Lock == nil {
			return conflict, nil
		}
	}
	switch req.Op {
	case structs.VarOpDelete, structs.VarOpDeleteCAS:
		if old != nil {
			if err := txn.Delete(TableVariables, old); err != nil {
				return nil, err
			}
		}
		return &structs.VarApplyStateResponse{Result: structs.VarOpResultOk}, nil
	case structs.VarOpSet, structs.VarOpCAS, structs.VarOpLockAcquire, structs.VarOpLockRelease:
	default:
		return nil, fmt.Errorf("%w: unknown variable operation %q", structs.ErrInvalidRequest, req.Op)
	}
	v := in.Copy()
	v.CreateIndex, v.CreateTime = index, req.Now
	v.LockDelayUntil = 0
	if old != nil {
		v.CreateIndex, v.CreateTime = old.CreateIndex, old.CreateTime
		v.LockDelayUntil = old.LockDelayUntil
		// A lock operation that brings no items keeps the stored ones.
		if req.Op.IsLock() && len(in.Data) == 0 {
			v.VariableData = old.VariableData
		}
	}
	// A plain write keeps the lock as it is: only a lock operation takes
	// or drops one, and a held lock's parameters can't change.
	if req.Op == structs.VarOpSet || req.Op == structs.VarOpCAS {
		v.Lock = nil
		if old != nil {
			v.Lock = old.Lock.Copy()
		}
	}
	if req.Op == structs.VarOpLockRelease {
		v.Lock = nil
		if req.Expired {
			v.LockDelayUntil = req.LockDelayUntil
		}
	}
	v.ModifyIndex, v.ModifyTime = index, req.Now
	if err := txn.Insert(TableVariables, v); err != nil {
		return nil, err
	}
	return &structs.VarApplyStateResponse{Result: structs.VarOpResultOk, Written: v}, nil
}

// RootKeyMetas returns every root key's metadata, by key ID.
func (s *StateStore) RootKeyMetas(ws memdb.WatchSet) ([]*structs.RootKeyMeta, error) {
	iter, err := getWatch(s.db.Txn(false), ws, TableRootKeys, indexID)
	if err != nil {
		return nil, err
	}
	var out []*structs.RootKeyMeta
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		out = append(out, raw.(*structs.RootKeyMeta))
	}
	return out, nil
}

// ActiveRootKeyMeta returns the active root key's metadata, or nil.
func (s *StateStore) ActiveRootKeyMeta(ws memdb.WatchSet) (*structs.RootKeyMeta, error) {
	keys, err := s.RootKeyMetas(ws)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.IsActive() {
			return k, nil
		}
	}
	return nil, nil
}

// UpsertRootKeyMeta stores a root key's metadata, keeping CreateIndex. A
// key stored active makes every other active key inactive in the same
// transaction, so there is one active key; with rekey, the active and
// inactive keys become rekeying instead.
func (s *StateStore) UpsertRootKeyMeta(index uint64, meta *structs.RootKeyMeta, rekey bool) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	if meta == nil || meta.KeyID == "" {
		return fmt.Errorf("root key: key ID: %w", structs.ErrMissingField)
	}
	m := meta.Copy()
	raw, err := txn.First(TableRootKeys, indexID, m.KeyID)
	if err != nil {
		return fmt.Errorf("root key lookup: %w", err)
	}
	m.CreateIndex = index
	if raw != nil {
		m.CreateIndex = raw.(*structs.RootKeyMeta).CreateIndex
	}
	m.ModifyIndex = index
	if m.IsActive() {
		iter, err := txn.Get(TableRootKeys, indexID)
		if err != nil {
			return fmt.Errorf("root key lookup: %w", err)
		}
		var demote []*structs.RootKeyMeta
		for raw := iter.Next(); raw != nil; raw = iter.Next() {
			k := raw.(*structs.RootKeyMeta)
			if k.KeyID == m.KeyID {
				continue
			}
			// A full rotation re-encrypts what every older key encrypted.
			if k.IsActive() || (rekey && k.State == structs.RootKeyStateInactive) {
				demote = append(demote, k)
			}
		}
		for _, k := range demote {
			c := k.Copy()
			c.State, c.ModifyIndex = structs.RootKeyStateInactive, index
			if rekey {
				c.State = structs.RootKeyStateRekeying
			}
			if err := txn.Insert(TableRootKeys, c); err != nil {
				return err
			}
		}
	}
	if err := txn.Insert(TableRootKeys, m); err != nil {
		return err
	}
	return txn.commit()
}

// ErrRootKeyInUse is a root key removal refused: the key is active, or
// variables are still encrypted with it.
var ErrRootKeyInUse = errors.New("root key in use")

// DeleteRootKeyMeta removes a root key's metadata. The active key, and a
// key any variable is still encrypted with, are refused (ErrRootKeyInUse,
// wrapping structs.ErrInvalidRequest), so that no variable is left that
// nothing can decrypt; a key that does not exist is
// structs.ErrUnknownRootKey.
func (s *StateStore) DeleteRootKeyMeta(index uint64, keyID string) error {
	txn := s.writeTxn(index)
	defer txn.Abort()
	raw, err := rootKeyRemovable(txn.Txn, keyID)
	if err != nil {
		return err
	}
	if err := txn.Delete(TableRootKeys, raw); err != nil {
		return err
	}
	return txn.commit()
}

// DeleteRootKeyMetaCheck is DeleteRootKeyMeta's refusal, without the
// write.
func (s *StateStore) DeleteRootKeyMetaCheck(keyID string) error {
	_, err := rootKeyRemovable(s.db.Txn(false), keyID)
	return err
}

// rootKeyRemovable returns key keyID if it may be removed.
func rootKeyRemovable(txn *memdb.Txn, keyID string) (any, error) {
	raw, err := txn.First(TableRootKeys, indexID, keyID)
	if err != nil {
		return nil, fmt.Errorf("root key lookup: %w", err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: %s", structs.ErrUnknownRootKey, keyID)
	}
	if raw.(*structs.RootKeyMeta).IsActive() {
		return nil, fmt.Errorf("%w: %w: %s is the active root key and cannot be removed; rotate first", structs.ErrInvalidRequest, ErrRootKeyInUse, keyID)
	}
	iter, err := txn.Get(TableVariables, indexID)
	if err != nil {
		return nil, err
	}
	used := 0
	for v := iter.Next(); v != nil; v = iter.Next() {
		if v.(*structs.VariableEncrypted).KeyID == keyID {
			used++
		}
	}
	if used > 0 {
		return nil, fmt.Errorf("%w: %w: %d variable(s) are still encrypted with root key %s; re-encrypt them first (nomad operator root keyring rotate -full)",
			structs.ErrInvalidRequest, ErrRootKeyInUse, used, keyID)
	}
	cas, err := tlsCAsUsingKey(txn, keyID)
	if err != nil {
		return nil, err
	}
	if cas > 0 {
		return nil, fmt.Errorf("%w: %w: the key of %d TLS CA(s) is encrypted with root key %s; rotate the CA first (nomad operator tls ca rotate)",
			structs.ErrInvalidRequest, ErrRootKeyInUse, cas, keyID)
	}
	return raw, nil
}
