package structs

import "errors"

// EncryptionAlgorithm names a root key's cipher.
type EncryptionAlgorithm string

// EncryptionAlgorithmAES256GCM is the only algorithm, as upstream's.
const EncryptionAlgorithmAES256GCM EncryptionAlgorithm = "aes256-gcm"

// RootKeyState is where a root key is in its life.
type RootKeyState string

// Root key states (upstream's names). Active encrypts new writes;
// inactive only decrypts; rekeying is an old key whose variables a full
// rotation is re-encrypting; deprecated is one no variable uses any more.
const (
	RootKeyStateInactive   RootKeyState = "inactive"
	RootKeyStateActive     RootKeyState = "active"
	RootKeyStateRekeying   RootKeyState = "rekeying"
	RootKeyStateDeprecated RootKeyState = "deprecated"
)

// ErrUnknownRootKey names a root key this server does not hold.
var ErrUnknownRootKey = errors.New("root key not found")

// RootKeyMeta is what raft holds of a root key: never the key itself,
// which lives in each server's keystore and is copied between servers
// over RPC (see nomad/keyring.go).
type RootKeyMeta struct {
	KeyID       string
	Algorithm   EncryptionAlgorithm
	CreateTime  int64
	CreateIndex uint64
	ModifyIndex uint64
	State       RootKeyState
	PublishTime int64
}

// IsActive reports whether the key encrypts new writes.
func (m *RootKeyMeta) IsActive() bool { return m.State == RootKeyStateActive }

// Copy returns a copy.
func (m *RootKeyMeta) Copy() *RootKeyMeta {
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

// RootKey is a root key with its material: held by servers only.
type RootKey struct {
	Meta *RootKeyMeta
	Key  []byte
}

// KeyringRotateRootKeyRequest makes a new active root key. Full also
// re-encrypts every variable with it.
type KeyringRotateRootKeyRequest struct {
	Algorithm EncryptionAlgorithm
	Full      bool
	WriteRequest
}

// KeyringRotateRootKeyResponse is the new key's metadata.
type KeyringRotateRootKeyResponse struct {
	Key *RootKeyMeta
	WriteMeta
}

// KeyringListRootKeyMetaRequest lists the root keys.
type KeyringListRootKeyMetaRequest struct {
	QueryOptions
}

// KeyringListRootKeyMetaResponse is every root key's metadata.
type KeyringListRootKeyMetaResponse struct {
	Keys []*RootKeyMeta
	QueryMeta
}

// KeyringUpdateRootKeyMetaRequest is the raft entry of a root key's
// metadata; an active key makes every other active key inactive (or
// rekeying, with Rekey) in the same entry.
type KeyringUpdateRootKeyMetaRequest struct {
	RootKeyMeta *RootKeyMeta
	Rekey       bool
	WriteRequest
}

// KeyringGetRootKeyRequest asks a server for a root key's material:
// server to server only, for replication.
type KeyringGetRootKeyRequest struct {
	KeyID string
	QueryOptions
}

// KeyringGetRootKeyResponse is the key, or nil.
type KeyringGetRootKeyResponse struct {
	Key *RootKey
	QueryMeta
}

// KeyringDeleteRootKeyRequest removes a root key: its metadata from raft
// and, on every server, its material from the keystore. The active key,
// and a key variables are still encrypted with, are refused.
type KeyringDeleteRootKeyRequest struct {
	KeyID string
	WriteRequest
}

// KeyringDeleteRootKeyResponse is the index of the removal.
type KeyringDeleteRootKeyResponse struct {
	WriteMeta
}
