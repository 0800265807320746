package state

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// KeyFile is the client's local encryption key, relative to the client's
// state dir: 32 random bytes, mode 0600, created on the first open. Only
// this client holds it; the servers never see it. It seals what the
// database keeps that a task's secrets flow through (the data templates
// rendered from, the task's workload identity), so that a copy of
// state.db alone reveals none of it.
var KeyFile = filepath.Join("client", "state.key")

// ErrSealed is a sealed value this client's key cannot open: the key
// file was replaced or lost, or the value is damaged.
var ErrSealed = errors.New("sealed value cannot be opened with this client's key")

// sealVersion prefixes every sealed value, so that a later format (or
// key rotation) can tell its values apart.
const sealVersion byte = 1

// sealer seals values with AES-256-GCM under the client's key. The AAD
// binds a value to where it is stored (allocation, task, key), so that a
// value copied to another task's record does not open there.
type sealer struct{ aead cipher.AEAD }

// loadSealer reads the key in path, creating it when missing. A key file
// of the wrong size is an error rather than silently replaced: the data
// sealed under the old key would be lost without a word.
func loadSealer(path string) (*sealer, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("creating the client state key: %w", err)
		}
		if err := writeKey(path, key); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("reading the client state key: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("client state key %s: %d bytes, want 32 (remove it to start with a new key; sealed template data is then dropped)", path, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &sealer{aead: aead}, nil
}

// writeKey creates the key file with 0600, failing if it appeared
// meanwhile (another process created it first).
func writeKey(path string, key []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("creating the client state key: %w", err)
	}
	_, err = f.Write(key)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("creating the client state key: %w", err)
	}
	return nil
}

// seal returns version | nonce | ciphertext of plain, bound to aad.
func (s *sealer) seal(plain, aad []byte) ([]byte, error) {
	out := make([]byte, 1+s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, err
	}
	return s.aead.Seal(out, out[1:], plain, aad), nil
}

// open reverses seal; anything that does not open is ErrSealed.
func (s *sealer) open(sealed, aad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < 1+n || sealed[0] != sealVersion {
		return nil, ErrSealed
	}
	plain, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], aad)
	if err != nil {
		return nil, ErrSealed
	}
	return plain, nil
}

// sealAAD names where a sealed task value is stored.
func sealAAD(allocID, task string, key []byte) []byte {
	return []byte(allocID + "\x00" + task + "\x00" + string(key))
}
