package nomad

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// TestKeyring_Delete checks upstream's key removal: the active key is
// refused, and (beyond upstream, which leaves such variables unreadable)
// so is a key a variable is still encrypted with; a key nothing uses
// leaves raft and the server's keyring, and an unknown key is not found.
func TestKeyring_Delete(t *testing.T) {
	s := testServer(t, nil)
	_, err := putVar(t, s, structs.VarOpSet, newVar("app/db", map[string]string{"k": "1"}), "")
	must.NoError(t, err)
	first, err := s.State().ActiveRootKeyMeta(nil)
	must.NoError(t, err)
	del := func(id string) error {
		return s.RPC("Keyring.Delete", &structs.KeyringDeleteRootKeyRequest{KeyID: id}, &structs.KeyringDeleteRootKeyResponse{})
	}

	var rot structs.KeyringRotateRootKeyResponse
	must.NoError(t, s.RPC("Keyring.Rotate", &structs.KeyringRotateRootKeyRequest{}, &rot))
	err = del(rot.Key.KeyID)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "is the active root key and cannot be removed; rotate first")
	err = del(first.KeyID)
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
	must.ErrorContains(t, err, "1 variable(s) are still encrypted with root key "+first.KeyID)

	// Written again, the variable moves to the active key.
	_, err = putVar(t, s, structs.VarOpSet, newVar("app/db", map[string]string{"k": "2"}), "")
	must.NoError(t, err)
	must.NoError(t, del(first.KeyID))
	keys, err := s.State().RootKeyMetas(nil)
	must.NoError(t, err)
	must.Len(t, 1, keys)
	must.Eq(t, rot.Key.KeyID, keys[0].KeyID)
	wait.Poll(t, 10*time.Second, "the removed key leaves the keyring", func() (bool, string) {
		return !s.encrypter.Has(first.KeyID), "still held"
	})
	var read structs.VariablesReadResponse
	must.NoError(t, s.RPC("Variables.Read", &structs.VariablesReadRequest{Path: "app/db"}, &read))
	must.Eq(t, "2", read.Data.Items["k"])

	must.ErrorIs(t, del(first.KeyID), structs.ErrUnknownRootKey)
}

// TestEncrypter_PruneKeepsNewKeys checks what a server drops from its
// keystore once raft no longer names a key: the file and the key go for a
// key older than the active one, but a key newer than it (one this server
// has just made, not yet through raft) stays.
func TestEncrypter_PruneKeepsNewKeys(t *testing.T) {
	dir := t.TempDir()
	e, err := newEncrypter(dir)
	must.NoError(t, err)
	old, err := newRootKey(100)
	must.NoError(t, err)
	active, err := newRootKey(200)
	must.NoError(t, err)
	active.Meta.State = structs.RootKeyStateActive
	pending, err := newRootKey(300)
	must.NoError(t, err)
	for _, k := range []*structs.RootKey{old, active, pending} {
		must.NoError(t, e.AddKey(k))
	}
	dropped, err := e.prune([]*structs.RootKeyMeta{active.Meta})
	must.NoError(t, err)
	must.Eq(t, []string{old.Meta.KeyID}, dropped)
	must.False(t, e.Has(old.Meta.KeyID))
	must.True(t, e.Has(pending.Meta.KeyID))
	_, err = os.Stat(filepath.Join(dir, old.Meta.KeyID+keystoreSuffix))
	must.True(t, os.IsNotExist(err))
	_, err = os.Stat(filepath.Join(dir, pending.Meta.KeyID+keystoreSuffix))
	must.NoError(t, err)
}
