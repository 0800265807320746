package nomad

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nomad-edge/nomad/helper/atomicfile"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The keyring, as upstream's: root keys are made by the leader, their
// metadata goes through raft, and the key material never does. Each
// server keeps the keys it holds in its keystore (<data_dir>/keystore,
// one <key ID>.nks.json file per key) and copies the ones it lacks from
// another server over RPC (Keyring.Get, servers only). So neither the
// raft log nor a snapshot holds a key or a variable's items in the clear:
// both hold ciphertext and key IDs.
//
// A keystore file holds the key wrapped (AES-256-GCM) with a key
// encryption key kept beside it, as upstream's default does: it keeps
// the raw key out of the file, not away from someone who can read the
// data dir, which must stay readable by the server alone (files are
// 0600).

const (
	rootKeySize       = 32 // AES-256
	keystoreSuffix    = ".nks.json"
	keystoreDirName   = "keystore"
	keystoreFileMode  = 0o600
	keystoreDirMode   = 0o700
	varAADSeparator   = "\x00"
	keystoreWrapLabel = "nomad-edge keystore "
)

// encrypter holds the root keys this server has and encrypts and
// decrypts variables' items with them. Safe for concurrent use.
type encrypter struct {
	// dir is the keystore directory; "" keeps keys in memory only (a dev
	// server without a data dir).
	dir string

	mu   sync.RWMutex
	keys map[string]*heldKey
}

type heldKey struct {
	root *structs.RootKey
	aead cipher.AEAD
}

// keystoreFile is a key as stored on disk.
type keystoreFile struct {
	Meta *structs.RootKeyMeta
	// KEK wraps EncryptedDEK; both base64 in the JSON.
	KEK          []byte
	EncryptedDEK []byte
}

// newEncrypter loads the keystore in dir ("" for memory only).
func newEncrypter(dir string) (*encrypter, error) {
	e := &encrypter{dir: dir, keys: map[string]*heldKey{}}
	if dir == "" {
		return e, nil
	}
	if err := os.MkdirAll(dir, keystoreDirMode); err != nil {
		return nil, fmt.Errorf("keystore %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("keystore %s: %w", dir, err)
	}
	for _, ent := range entries {
		if ent.IsDir() || !strings.HasSuffix(ent.Name(), keystoreSuffix) {
			continue
		}
		k, err := readKeystoreFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return nil, err
		}
		if err := e.hold(k); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func readKeystoreFile(path string) (*structs.RootKey, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keystore: %w", err)
	}
	var f keystoreFile
	if err := json.Unmarshal(buf, &f); err != nil {
		return nil, fmt.Errorf("keystore %s: %w", path, err)
	}
	if f.Meta == nil || f.Meta.KeyID == "" {
		return nil, fmt.Errorf("keystore %s: no key metadata", path)
	}
	aead, err := newAEAD(f.KEK)
	if err != nil {
		return nil, fmt.Errorf("keystore %s: %w", path, err)
	}
	key, err := open(aead, f.EncryptedDEK, []byte(keystoreWrapLabel+f.Meta.KeyID))
	if err != nil {
		return nil, fmt.Errorf("keystore %s: unwrapping the key: %w", path, err)
	}
	return &structs.RootKey{Meta: f.Meta, Key: key}, nil
}

// newRootKey makes a fresh AES-256 root key, stamped at now (Unix ns).
func newRootKey(now int64) (*structs.RootKey, error) {
	key := make([]byte, rootKeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("root key: %w", err)
	}
	return &structs.RootKey{
		Meta: &structs.RootKeyMeta{
			KeyID: structs.GenerateUUID(), Algorithm: structs.EncryptionAlgorithmAES256GCM,
			CreateTime: now, State: structs.RootKeyStateActive,
		},
		Key: key,
	}, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != rootKeySize {
		return nil, fmt.Errorf("%w: key is %d bytes, want %d", structs.ErrInvalidRequest, len(key), rootKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts plaintext with a fresh random nonce, put first.
func seal(aead cipher.AEAD, plaintext, aad []byte) ([]byte, error) {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, plaintext, aad), nil
}

func open(aead cipher.AEAD, ciphertext, aad []byte) ([]byte, error) {
	n := aead.NonceSize()
	if len(ciphertext) < n {
		return nil, errors.New("ciphertext too short")
	}
	return aead.Open(nil, ciphertext[:n], ciphertext[n:], aad)
}

// AddKey keeps a root key: written to the keystore first, so a key this
// server announces through raft survives its restart.
func (e *encrypter) AddKey(k *structs.RootKey) error {
	if k == nil || k.Meta == nil || k.Meta.KeyID == "" {
		return fmt.Errorf("root key: %w", structs.ErrMissingField)
	}
	if e.dir != "" {
		if err := e.writeKeystoreFile(k); err != nil {
			return err
		}
	}
	return e.hold(k)
}

func (e *encrypter) hold(k *structs.RootKey) error {
	aead, err := newAEAD(k.Key)
	if err != nil {
		return fmt.Errorf("root key %s: %w", k.Meta.KeyID, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.keys[k.Meta.KeyID] = &heldKey{root: &structs.RootKey{Meta: k.Meta.Copy(), Key: append([]byte(nil), k.Key...)}, aead: aead}
	return nil
}

func (e *encrypter) writeKeystoreFile(k *structs.RootKey) error {
	kek := make([]byte, rootKeySize)
	if _, err := rand.Read(kek); err != nil {
		return err
	}
	aead, err := newAEAD(kek)
	if err != nil {
		return err
	}
	wrapped, err := seal(aead, k.Key, []byte(keystoreWrapLabel+k.Meta.KeyID))
	if err != nil {
		return err
	}
	buf, err := json.Marshal(&keystoreFile{Meta: k.Meta, KEK: kek, EncryptedDEK: wrapped})
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(e.dir, k.Meta.KeyID+keystoreSuffix), buf, keystoreFileMode); err != nil {
		return fmt.Errorf("keystore: %w", err)
	}
	return nil
}

// prune drops the keys raft no longer names: removed from the keystore
// and from memory. Only keys older than raft's active key go: a key this
// server has just made is held before raft names it (AddKey comes
// first), and is newer than the active key until then; a removed key is
// always older, since the active key cannot be removed. It returns the
// IDs dropped.
func (e *encrypter) prune(listed []*structs.RootKeyMeta) ([]string, error) {
	names := map[string]bool{}
	var activeCreated int64
	for _, m := range listed {
		names[m.KeyID] = true
		if m.IsActive() {
			activeCreated = m.CreateTime
		}
	}
	if activeCreated == 0 {
		return nil, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var dropped []string
	var errs []error
	for id, k := range e.keys {
		if names[id] || k.root.Meta.CreateTime >= activeCreated {
			continue
		}
		if e.dir != "" {
			if err := os.Remove(filepath.Join(e.dir, id+keystoreSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("keystore: %w", err))
				continue
			}
		}
		delete(e.keys, id)
		dropped = append(dropped, id)
	}
	return dropped, errors.Join(errs...)
}

// Has reports whether this server holds key id.
func (e *encrypter) Has(id string) bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.keys[id] != nil
}

// GetKey returns key id with its material, for another server.
func (e *encrypter) GetKey(id string) (*structs.RootKey, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	k := e.keys[id]
	if k == nil {
		return nil, fmt.Errorf("%w: %s", structs.ErrUnknownRootKey, id)
	}
	return &structs.RootKey{Meta: k.root.Meta.Copy(), Key: append([]byte(nil), k.root.Key...)}, nil
}

func (e *encrypter) aead(id string) (cipher.AEAD, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	k := e.keys[id]
	if k == nil {
		return nil, fmt.Errorf("%w: %s is not (yet) on this server", structs.ErrUnknownRootKey, id)
	}
	return k.aead, nil
}

// varAAD binds a variable's ciphertext to its namespace and path, so
// stored ciphertext moved to another variable does not decrypt.
func varAAD(ns, path string) []byte { return []byte(ns + varAADSeparator + path) }

// encryptItems encrypts a variable's items with key id.
func (e *encrypter) encryptItems(id, ns, path string, items structs.VariableItems) ([]byte, error) {
	aead, err := e.aead(id)
	if err != nil {
		return nil, err
	}
	plain, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	return seal(aead, plain, varAAD(ns, path))
}

// decryptVar returns a stored variable with its items in the clear.
func (e *encrypter) decryptVar(v *structs.VariableEncrypted) (*structs.VariableDecrypted, error) {
	out := &structs.VariableDecrypted{VariableMetadata: v.VariableMetadata, Items: structs.VariableItems{}}
	out.Lock = v.Lock.Copy()
	if len(v.Data) == 0 {
		return out, nil
	}
	aead, err := e.aead(v.KeyID)
	if err != nil {
		return nil, err
	}
	plain, err := open(aead, v.Data, varAAD(v.Namespace, v.Path))
	if err != nil {
		return nil, fmt.Errorf("decrypting variable %q: %w", v.Path, err)
	}
	if err := json.Unmarshal(plain, &out.Items); err != nil {
		return nil, fmt.Errorf("decoding variable %q: %w", v.Path, err)
	}
	return out, nil
}
