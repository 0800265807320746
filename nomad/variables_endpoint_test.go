package nomad

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// putVar writes items at path in the default namespace with token secret.
func putVar(t *testing.T, s *Server, op structs.VarOp, v *structs.VariableDecrypted, secret string) (*structs.VariablesApplyResponse, error) {
	t.Helper()
	var reply structs.VariablesApplyResponse
	err := s.RPC("Variables.Apply", &structs.VariablesApplyRequest{Op: op, Var: v, WriteRequest: structs.WriteRequest{AuthToken: secret}}, &reply)
	return &reply, err
}

func newVar(path string, items map[string]string) *structs.VariableDecrypted {
	return &structs.VariableDecrypted{VariableMetadata: structs.VariableMetadata{Path: path}, Items: items}
}

// A variable's items reach neither the raft log nor a snapshot in the
// clear: both hold ciphertext and the key ID, and no root key either. The
// path, which is metadata, is there, which shows the bytes scanned are
// the right ones. Reading it back decrypts.
func TestVariables_EncryptedAtRest_RaftLogAndSnapshot(t *testing.T) {
	s := testServer(t, nil)
	const marker = "plaintext-marker-7f3a9c"
	_, err := putVar(t, s, structs.VarOpSet, newVar("secret/at-rest", map[string]string{"password": marker}), "")
	must.NoError(t, err)

	first, err := s.raftStores.log.FirstIndex()
	must.NoError(t, err)
	last, err := s.raftStores.log.LastIndex()
	must.NoError(t, err)
	var logBytes bytes.Buffer
	for i := first; i <= last; i++ {
		var l raft.Log
		if err := s.raftStores.log.GetLog(i, &l); err == nil {
			logBytes.Write(l.Data)
		}
	}
	snap, err := s.fsm.Snapshot()
	must.NoError(t, err)
	sink := &bufferSink{}
	must.NoError(t, snap.Persist(sink))

	active, err := s.State().ActiveRootKeyMeta(nil)
	must.NoError(t, err)
	key, err := s.encrypter.GetKey(active.KeyID)
	must.NoError(t, err)
	for name, b := range map[string][]byte{"raft log": logBytes.Bytes(), "snapshot": sink.Bytes()} {
		must.True(t, bytes.Contains(b, []byte("secret/at-rest")), must.Sprintf("%s: the path is metadata and is stored", name))
		must.False(t, bytes.Contains(b, []byte(marker)), must.Sprintf("%s holds the item in the clear", name))
		must.False(t, bytes.Contains(b, key.Key), must.Sprintf("%s holds the root key", name))
	}

	var read structs.VariablesReadResponse
	must.NoError(t, s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "secret/at-rest"}, &read))
	must.Eq(t, marker, read.Data.Items["password"])
}

// A keystore file holds the key wrapped, never raw, and a server that
// starts again on the same data dir reads its keys back: variables
// written before a restart still decrypt.
func TestKeyring_KeystoreSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	e, err := newEncrypter(dir)
	must.NoError(t, err)
	key, err := newRootKey(1)
	must.NoError(t, err)
	must.NoError(t, e.AddKey(key))
	data, err := e.encryptItems(key.Meta.KeyID, "default", "p", structs.VariableItems{"k": "v"})
	must.NoError(t, err)

	raw, err := os.ReadFile(filepath.Join(dir, key.Meta.KeyID+keystoreSuffix))
	must.NoError(t, err)
	must.False(t, bytes.Contains(raw, key.Key), must.Sprint("the keystore file holds the raw key"))

	again, err := newEncrypter(dir)
	must.NoError(t, err)
	got, err := again.decryptVar(&structs.VariableEncrypted{
		VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: "p"},
		VariableData:     structs.VariableData{Data: data, KeyID: key.Meta.KeyID},
	})
	must.NoError(t, err)
	must.Eq(t, "v", got.Items["k"])

	// Ciphertext moved to another variable does not decrypt there.
	_, err = again.decryptVar(&structs.VariableEncrypted{
		VariableMetadata: structs.VariableMetadata{Namespace: "default", Path: "other"},
		VariableData:     structs.VariableData{Data: data, KeyID: key.Meta.KeyID},
	})
	must.Error(t, err)
}

// After a rotation new writes use the new key and old ones still read;
// a full rotation re-encrypts every variable with the new key and then
// deprecates the old one.
func TestKeyring_RotateAndFullRekey(t *testing.T) {
	s := testServer(t, nil)
	_, err := putVar(t, s, structs.VarOpSet, newVar("old", map[string]string{"k": "1"}), "")
	must.NoError(t, err)
	old, err := s.State().VarGet(nil, "default", "old")
	must.NoError(t, err)

	var rot structs.KeyringRotateRootKeyResponse
	must.NoError(t, s.RPC("Keyring.Rotate", &structs.KeyringRotateRootKeyRequest{}, &rot))
	_, err = putVar(t, s, structs.VarOpSet, newVar("new", map[string]string{"k": "2"}), "")
	must.NoError(t, err)
	fresh, err := s.State().VarGet(nil, "default", "new")
	must.NoError(t, err)
	must.Eq(t, rot.Key.KeyID, fresh.KeyID)
	var read structs.VariablesReadResponse
	must.NoError(t, s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "old"}, &read))
	must.Eq(t, "1", read.Data.Items["k"])

	var full structs.KeyringRotateRootKeyResponse
	must.NoError(t, s.RPC("Keyring.Rotate", &structs.KeyringRotateRootKeyRequest{Full: true}, &full))
	wait.Poll(t, 10*time.Second, "the rekey", func() (bool, string) {
		a, _ := s.State().VarGet(nil, "default", "old")
		b, _ := s.State().VarGet(nil, "default", "new")
		keys, _ := s.State().RootKeyMetas(nil)
		deprecated := 0
		for _, k := range keys {
			if k.State == structs.RootKeyStateDeprecated {
				deprecated++
			}
		}
		return a.KeyID == full.Key.KeyID && b.KeyID == full.Key.KeyID && deprecated == 2,
			fmt.Sprintf("old on %s, new on %s, %d deprecated keys (want all on %s)", a.KeyID, b.KeyID, deprecated, full.Key.KeyID)
	})
	must.NotEq(t, old.KeyID, full.Key.KeyID)
	must.NoError(t, s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "old"}, &read))
	must.Eq(t, "1", read.Data.Items["k"])
}

// ACL: a variables block grants per path glob inside its namespace; the
// best-matching path rule applies and its deny wins; write does not read,
// list shows metadata only, destroy is needed to delete; a conflict shows
// the stored items only to a caller that may read them; the namespace's
// coarse policy grants read (and list) everywhere in it.
func TestVariables_ACLRefusals(t *testing.T) {
	s, mgmt := aclServer(t)
	_, err := putVar(t, s, structs.VarOpSet, newVar("team/secret", map[string]string{"k": "v"}), mgmt.SecretID)
	must.NoError(t, err)
	_, err = putVar(t, s, structs.VarOpSet, newVar("other/x", map[string]string{"k": "v"}), mgmt.SecretID)
	must.NoError(t, err)

	writer := clientToken(t, s, mgmt, `namespace "default" {
  variables {
    path "team/*" { capabilities = ["write"] }
    path "team/locked" { capabilities = ["deny"] }
  }
}`)
	_, err = putVar(t, s, structs.VarOpSet, newVar("team/new", map[string]string{"k": "v"}), writer.SecretID)
	must.NoError(t, err)
	_, err = putVar(t, s, structs.VarOpSet, newVar("team/locked", map[string]string{"k": "v"}), writer.SecretID)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	_, err = putVar(t, s, structs.VarOpSet, newVar("other/y", map[string]string{"k": "v"}), writer.SecretID)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	err = s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "team/secret", QueryOptions: structs.QueryOptions{AuthToken: writer.SecretID}}, &structs.VariablesReadResponse{})
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	_, err = putVar(t, s, structs.VarOpDelete, newVar("team/new", nil), writer.SecretID)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)

	var list structs.VariablesListResponse
	must.NoError(t, s.RPC("Variables.List", &structs.VariablesListRequest{QueryOptions: structs.QueryOptions{AuthToken: writer.SecretID}}, &list))
	var paths []string
	for _, m := range list.Data {
		paths = append(paths, m.Path)
	}
	must.Eq(t, []string{"team/new", "team/secret"}, paths, must.Sprint("write includes list, on its paths only"))

	conflict, err := putVar(t, s, structs.VarOpCAS, newVar("team/secret", map[string]string{"k": "w"}), writer.SecretID)
	must.NoError(t, err)
	must.Eq(t, structs.VarOpResultRedacted, conflict.Result)
	must.MapEmpty(t, conflict.Conflict.Items, must.Sprint("a writer that can't read sees no items in a conflict"))

	reader := clientToken(t, s, mgmt, `namespace "default" { policy = "read" }`)
	var read structs.VariablesReadResponse
	must.NoError(t, s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "other/x", QueryOptions: structs.QueryOptions{AuthToken: reader.SecretID}}, &read))
	must.Eq(t, "v", read.Data.Items["k"])
	_, err = putVar(t, s, structs.VarOpSet, newVar("other/x", map[string]string{"k": "w"}), reader.SecretID)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)

	_, err = putVar(t, s, structs.VarOpSet, newVar("team/x", map[string]string{"k": "v"}), "")
	must.ErrorIs(t, err, structs.ErrPermissionDenied, must.Sprint("anonymous gets nothing"))
}

// A lock's TTL runs on the leader's clock: renewed, it lives on; not
// renewed, the leader releases it when the TTL runs out, and nobody may
// acquire it again until the lock delay has passed too. A renewal after
// the expiry is refused as a conflict.
func TestVariables_LockTTLAndDelay(t *testing.T) {
	clk := clocktest.NewManual(time.Unix(1000, 0))
	s := testServer(t, func(c *Config) { c.Clock = clk })
	v := newVar("locks/a", nil)
	v.Lock = &structs.VariableLock{TTL: 10 * time.Second, LockDelay: 5 * time.Second}
	held, err := putVar(t, s, structs.VarOpLockAcquire, v, "")
	must.NoError(t, err)
	must.Eq(t, structs.VarOpResultOk, held.Result)
	id := held.Output.LockID()
	must.NotEq(t, "", id)

	renew := func() error {
		return s.RPC("Variables.RenewLock", &structs.VariablesRenewLockRequest{Path: "locks/a", LockID: id}, &structs.VariablesRenewLockResponse{})
	}
	clk.Advance(8 * time.Second)
	must.NoError(t, renew())
	clk.Advance(8 * time.Second)
	stored, err := s.State().VarGet(nil, "default", "locks/a")
	must.NoError(t, err)
	must.Eq(t, id, stored.LockID(), must.Sprint("16s after the acquire, renewed at 8s: still held"))

	clk.Advance(2 * time.Second)
	stored, err = s.State().VarGet(nil, "default", "locks/a")
	must.NoError(t, err)
	must.Nil(t, stored.Lock, must.Sprint("10s after the last renewal the leader released it"))
	err = renew()
	must.True(t, errors.Is(err, structs.ErrLockConflict), must.Sprint(err))

	again := newVar("locks/a", nil)
	again.Lock = &structs.VariableLock{TTL: 10 * time.Second}
	r, err := putVar(t, s, structs.VarOpLockAcquire, again, "")
	must.NoError(t, err)
	must.Eq(t, structs.VarOpResultConflict, r.Result, must.Sprint("inside the lock delay"))
	clk.Advance(5 * time.Second)
	r, err = putVar(t, s, structs.VarOpLockAcquire, again, "")
	must.NoError(t, err)
	must.Eq(t, structs.VarOpResultOk, r.Result)
}

// A blocking read of a variable returns when the variable changes, with
// the new items and index, and a list across namespace "*" shows every
// namespace's variables: the shapes templates and tools watch.
func TestVariables_BlockingReadAndWildcardList(t *testing.T) {
	s := testServer(t, nil)
	must.NoError(t, s.RPC("Namespace.UpsertNamespaces", &structs.NamespaceUpsertRequest{
		Namespaces: []*structs.Namespace{{Name: "prod"}}}, &structs.GenericResponse{}))
	first, err := putVar(t, s, structs.VarOpSet, newVar("app/cfg", map[string]string{"v": "1"}), "")
	must.NoError(t, err)
	prod := newVar("app/cfg", map[string]string{"v": "p"})
	prod.Namespace = "prod"
	_, err = putVar(t, s, structs.VarOpSet, prod, "")
	must.NoError(t, err)

	done := make(chan *structs.VariablesReadResponse, 1)
	go func() {
		var reply structs.VariablesReadResponse
		err := s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "app/cfg", QueryOptions: structs.QueryOptions{
			MinQueryIndex: first.Output.ModifyIndex, MaxQueryTime: time.Minute}}, &reply)
		if err != nil {
			t.Errorf("blocking read: %v", err)
		}
		done <- &reply
	}()
	select {
	case r := <-done:
		t.Fatalf("the blocking read returned before any change: %+v", r.Data)
	case <-time.After(50 * time.Millisecond):
	}
	second, err := putVar(t, s, structs.VarOpSet, newVar("app/cfg", map[string]string{"v": "2"}), "")
	must.NoError(t, err)
	select {
	case r := <-done:
		must.Eq(t, "2", r.Data.Items["v"])
		must.Eq(t, second.Output.ModifyIndex, r.Index)
	case <-time.After(10 * time.Second):
		t.Fatal("the blocking read did not return after the write")
	}

	var list structs.VariablesListResponse
	must.NoError(t, s.RPC("Variables.List", &structs.VariablesListRequest{QueryOptions: structs.QueryOptions{Namespace: "*", Prefix: "app/"}}, &list))
	must.Len(t, 2, list.Data)
	must.Eq(t, "default", list.Data[0].Namespace)
	must.Eq(t, "prod", list.Data[1].Namespace)
}

// A lock's timers are in place before the server answers as leader: a
// renewal the moment leadership is acquired finds them, instead of "No
// cluster leader" from a duty whose goroutine had not run yet (CI saw it).
func TestVariables_LockTimersReadyWithLeadership(t *testing.T) {
	s := testServer(t, nil)
	s.varLocks.mu.Lock()
	enabled := s.varLocks.enabled
	s.varLocks.mu.Unlock()
	must.True(t, enabled, must.Sprint("the server leads, its lock timers are not running"))
}
