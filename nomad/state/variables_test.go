package state

import (
	"testing"

	"github.com/hashicorp/go-memdb"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

func encVar(path string, modifyIndex uint64, lock *structs.VariableLock) *structs.VariableEncrypted {
	return &structs.VariableEncrypted{
		VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: path, ModifyIndex: modifyIndex, Lock: lock},
		VariableData:     structs.VariableData{Data: []byte("ciphertext-" + path), KeyID: "k1"},
	}
}

func varApply(s *StateStore, index uint64, op structs.VarOp, v *structs.VariableEncrypted, now int64) *structs.VarApplyStateResponse {
	return s.VarApply(index, &structs.VarApplyStateRequest{Op: op, Var: v, Now: now})
}

// Check-and-set is decided in the FSM against the stored variable: index 0
// creates only, a stale index loses with the stored variable as the
// conflict, the right one writes and keeps CreateIndex and CreateTime.
// This is what makes two concurrent `var put -check-index` safe.
func TestVariables_CASDecidedInTransaction(t *testing.T) {
	s := testStateStore(t)
	r := varApply(s, 10, structs.VarOpCAS, encVar("a", 0, nil), 100)
	must.Eq(t, structs.VarOpResultOk, r.Result)
	must.Eq(t, uint64(10), r.Written.CreateIndex)

	r = varApply(s, 11, structs.VarOpCAS, encVar("a", 0, nil), 110)
	must.Eq(t, structs.VarOpResultConflict, r.Result, must.Sprint("a second create loses"))
	must.Eq(t, uint64(10), r.Conflict.ModifyIndex)

	r = varApply(s, 12, structs.VarOpCAS, encVar("a", 10, nil), 120)
	must.Eq(t, structs.VarOpResultOk, r.Result)
	got, err := s.VarGet(nil, "default", "a")
	must.NoError(t, err)
	must.Eq(t, uint64(10), got.CreateIndex)
	must.Eq(t, int64(100), got.CreateTime)
	must.Eq(t, uint64(12), got.ModifyIndex)
	must.Eq(t, int64(120), got.ModifyTime)

	r = varApply(s, 13, structs.VarOpDeleteCAS, encVar("a", 10, nil), 130)
	must.Eq(t, structs.VarOpResultConflict, r.Result, must.Sprint("a delete at a stale index loses"))
	r = varApply(s, 14, structs.VarOpDeleteCAS, encVar("a", 12, nil), 140)
	must.Eq(t, structs.VarOpResultOk, r.Result)
	got, err = s.VarGet(nil, "default", "a")
	must.NoError(t, err)
	must.Nil(t, got)

	r = varApply(s, 15, structs.VarOpCAS, encVar("b", 3, nil), 150)
	must.Eq(t, structs.VarOpResultConflict, r.Result, must.Sprint("an update of a missing variable loses"))
	must.Nil(t, r.Conflict)
}

// A locked variable changes only with its lock ID; a held lock can't be
// acquired again; a release keeps the items; an expired lock's release
// starts its delay, during which an acquire stamped earlier than its end
// loses and one stamped after wins.
func TestVariables_LockRules(t *testing.T) {
	s := testStateStore(t)
	lock := &structs.VariableLock{ID: "L1", TTL: 10, LockDelay: 5}
	r := varApply(s, 10, structs.VarOpLockAcquire, encVar("l", 0, lock), 100)
	must.Eq(t, structs.VarOpResultOk, r.Result)

	other := &structs.VariableLock{ID: "L2", TTL: 10}
	must.Eq(t, structs.VarOpResultConflict, varApply(s, 11, structs.VarOpLockAcquire, encVar("l", 0, other), 101).Result)
	must.Eq(t, structs.VarOpResultConflict, varApply(s, 12, structs.VarOpSet, encVar("l", 0, nil), 102).Result,
		must.Sprint("a write without the lock ID loses"))
	must.Eq(t, structs.VarOpResultConflict, varApply(s, 13, structs.VarOpLockRelease, encVar("l", 0, other), 103).Result,
		must.Sprint("only the holder releases"))
	w := varApply(s, 14, structs.VarOpSet, encVar("l", 0, &structs.VariableLock{ID: "L1"}), 104)
	must.Eq(t, structs.VarOpResultOk, w.Result, must.Sprint("the holder writes"))
	must.Eq(t, lock.TTL, w.Written.Lock.TTL, must.Sprint("a write keeps the lock's parameters"))

	rel := &structs.VariableEncrypted{VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: "l", Lock: &structs.VariableLock{ID: "L1"}}}
	r = s.VarApply(15, &structs.VarApplyStateRequest{Op: structs.VarOpLockRelease, Var: rel, Now: 105, Expired: true, LockDelayUntil: 200})
	must.Eq(t, structs.VarOpResultOk, r.Result)
	must.Nil(t, r.Written.Lock)
	must.Eq(t, []byte("ciphertext-l"), r.Written.Data, must.Sprint("a release keeps the items"))

	must.Eq(t, structs.VarOpResultConflict, varApply(s, 16, structs.VarOpLockAcquire, encVar("l", 0, other), 199).Result,
		must.Sprint("inside the lock delay nobody acquires"))
	must.Eq(t, structs.VarOpResultOk, varApply(s, 17, structs.VarOpLockAcquire, encVar("l", 0, other), 200).Result)
}

// Lists are by namespace then path, narrowed by prefix within a namespace
// or across all of them, and a write fires a list's watch (blocking
// queries on /v1/vars wake up).
func TestVariables_ListPrefixAndWatch(t *testing.T) {
	s := testStateStore(t)
	for i, p := range []string{"app/a", "app/b", "other"} {
		must.Eq(t, structs.VarOpResultOk, varApply(s, uint64(10+i), structs.VarOpSet, encVar(p, 0, nil), 1).Result)
	}
	ws := memdb.NewWatchSet()
	got, err := s.Variables(ws, "default", "app/")
	must.NoError(t, err)
	must.Len(t, 2, got)
	all, err := s.Variables(nil, AllNamespaces, "o")
	must.NoError(t, err)
	must.Len(t, 1, all)
	varApply(s, 20, structs.VarOpSet, encVar("app/c", 0, nil), 2)
	watchFired(t, ws)
}

// Making a key active makes the previous active key inactive (a full
// rotation: every older key rekeying) in the same transaction: there is never more or less than one
// active key once the first exists.
func TestRootKeys_OneActive(t *testing.T) {
	s := testStateStore(t)
	must.NoError(t, s.UpsertRootKeyMeta(10, &structs.RootKeyMeta{KeyID: "k1", State: structs.RootKeyStateActive}, false))
	must.NoError(t, s.UpsertRootKeyMeta(11, &structs.RootKeyMeta{KeyID: "k2", State: structs.RootKeyStateActive}, false))
	must.NoError(t, s.UpsertRootKeyMeta(12, &structs.RootKeyMeta{KeyID: "k3", State: structs.RootKeyStateActive}, true))
	keys, err := s.RootKeyMetas(nil)
	must.NoError(t, err)
	states := map[string]structs.RootKeyState{}
	for _, k := range keys {
		states[k.KeyID] = k.State
	}
	must.Eq(t, map[string]structs.RootKeyState{
		"k1": structs.RootKeyStateRekeying, "k2": structs.RootKeyStateRekeying, "k3": structs.RootKeyStateActive,
	}, states)
}
