package nomad

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-memdb"

	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Keyring is the Keyring.* RPC endpoint: root key rotation and listing
// (operator), and the key copy between servers.
type Keyring struct {
	srv  *Server
	peer rpcPeer
}

// Rotate makes a new active root key; the previous active key stays to
// decrypt what it encrypted. Full also re-encrypts every variable with
// the new key (the leader does it in the background; the old keys are
// "rekeying" until it is done, then "deprecated"). Needs operator write.
func (k *Keyring) Rotate(args *structs.KeyringRotateRootKeyRequest, reply *structs.KeyringRotateRootKeyResponse) error {
	if done, err := k.srv.forward("Keyring.Rotate", args, reply); done {
		return err
	}
	if err := k.srv.authorize(args.AuthToken, permOperatorWrite); err != nil {
		return err
	}
	switch args.Algorithm {
	case "", structs.EncryptionAlgorithmAES256GCM:
	default:
		return fmt.Errorf("%w: unknown encryption algorithm %q: use %q", structs.ErrInvalidRequest, args.Algorithm, structs.EncryptionAlgorithmAES256GCM)
	}
	meta, index, err := k.srv.newActiveRootKey(args.Full)
	if err != nil {
		return err
	}
	if args.Full {
		k.srv.rekeyKick()
	}
	reply.Key, reply.Index = meta, index
	return nil
}

// List lists the root keys' metadata; needs operator read.
func (k *Keyring) List(args *structs.KeyringListRootKeyMetaRequest, reply *structs.KeyringListRootKeyMetaResponse) error {
	if done, err := k.srv.forwardQuery("Keyring.List", &args.QueryOptions, args, reply); done {
		return err
	}
	if err := k.srv.authorize(args.AuthToken, permOperatorRead); err != nil {
		return err
	}
	return k.srv.blockingRPC(&args.QueryOptions, &reply.QueryMeta, func(ws memdb.WatchSet, st *state.StateStore) (uint64, error) {
		keys, err := st.RootKeyMetas(ws)
		if err != nil {
			return 0, err
		}
		reply.Keys = keys
		return st.Index(state.TableRootKeys)
	})
}

// Delete removes a root key that is neither active nor still encrypting
// a variable; needs operator write. Its metadata leaves raft, and each
// server removes its material from its keystore.
func (k *Keyring) Delete(args *structs.KeyringDeleteRootKeyRequest, reply *structs.KeyringDeleteRootKeyResponse) error {
	if done, err := k.srv.forward("Keyring.Delete", args, reply); done {
		return err
	}
	if err := k.srv.authorize(args.AuthToken, permOperatorWrite); err != nil {
		return err
	}
	if args.KeyID == "" {
		return fmt.Errorf("%w: key ID", structs.ErrMissingField)
	}
	// The FSM checks again; checking here first answers without a raft
	// entry in the common case.
	if err := k.srv.State().DeleteRootKeyMetaCheck(args.KeyID); err != nil {
		return err
	}
	_, index, err := k.srv.raftApply(structs.RootKeyMetaDeleteRequestType, args)
	reply.Index = index
	return err
}

// Get hands a root key's material to another server that lacks it. Only
// servers may call it: with TLS, a server certificate is required; without
// TLS the RPC port is as open as raft itself, which shares it.
func (k *Keyring) Get(args *structs.KeyringGetRootKeyRequest, reply *structs.KeyringGetRootKeyResponse) error {
	if err := k.srv.requireServer(k.peer, "Keyring.Get"); err != nil {
		return err
	}
	key, err := k.srv.encrypter.GetKey(args.KeyID)
	if err != nil {
		return err
	}
	reply.Key = key
	return nil
}

// newActiveRootKey makes a root key, keeps it in the keystore, and makes
// it the active one through raft. rekey marks the keys it replaces for
// re-encryption.
func (s *Server) newActiveRootKey(rekey bool) (*structs.RootKeyMeta, uint64, error) {
	key, err := newRootKey(s.clock.Now().UnixNano())
	if err != nil {
		return nil, 0, err
	}
	if err := s.encrypter.AddKey(key); err != nil {
		return nil, 0, err
	}
	_, index, err := s.raftApply(structs.RootKeyMetaUpsertRequestType, &structs.KeyringUpdateRootKeyMetaRequest{RootKeyMeta: key.Meta, Rekey: rekey})
	if err != nil {
		return nil, 0, err
	}
	meta := key.Meta.Copy()
	meta.CreateIndex, meta.ModifyIndex = index, index
	return meta, index, nil
}

// initializeKeyring gives a new cluster its first root key: the leader
// makes one when raft holds none.
func (s *Server) initializeKeyring() error {
	active, err := s.State().ActiveRootKeyMeta(nil)
	if err != nil || active != nil {
		return err
	}
	meta, _, err := s.newActiveRootKey(false)
	if err != nil {
		return err
	}
	s.logger.Info("initialized keyring", "key_id", meta.KeyID)
	return nil
}

// keystoreDir is where this server keeps its root keys: "" (memory only)
// for a dev or in-memory server.
func keystoreDir(cfg *Config) string {
	if cfg.DevMode || cfg.InMemory || cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(cfg.DataDir, keystoreDirName)
}

// keyRetryWait is how long the replicator waits after a failed copy.
const keyRetryWait = time.Second

// replicateKeys runs on every server until shutdown: whenever raft names
// a root key this server does not hold, it copies it from the leader, or
// from any other server when the leader lacks it. A key not copied is
// tried again after keyRetryWait, or sooner when the keys in raft change.
func (s *Server) replicateKeys() {
	watchLoop{
		state: s.State, clock: s.clock, logger: s.logger,
		failed: "keyring replication: reading root keys", retry: keyRetryWait,
		pass: s.replicateKeysPass,
	}.run(s.shutdownCh)
}

// replicateKeysPass copies every root key raft names that this server
// lacks; it returns keyRetryWait when one could not be copied yet.
func (s *Server) replicateKeysPass(ws memdb.WatchSet) (time.Duration, error) {
	metas, err := s.State().RootKeyMetas(ws)
	if err != nil {
		return 0, err
	}
	// A key removed through raft leaves every server's keystore.
	if dropped, err := s.encrypter.prune(metas); err != nil {
		s.logger.Error("keyring: removing a deleted root key from the keystore", "error", err)
	} else if len(dropped) > 0 {
		s.logger.Info("keyring: removed deleted root keys from the keystore", "key_ids", dropped)
	}
	var next time.Duration
	for _, m := range metas {
		if s.encrypter.Has(m.KeyID) {
			continue
		}
		if err := s.copyRootKey(m); err != nil {
			s.logger.Warn("keyring replication: root key not copied yet", "key_id", m.KeyID, "error", err)
			next = keyRetryWait
		}
	}
	return next, nil
}

// copyRootKey fetches one key from the leader, then from the other peers.
func (s *Server) copyRootKey(meta *structs.RootKeyMeta) error {
	var addrs []string
	if l := s.Leader(); l != "" && l != s.rpcAdvertise.String() {
		addrs = append(addrs, l)
	}
	if f := s.raft.GetConfiguration(); f.Error() == nil {
		for _, srv := range f.Configuration().Servers {
			if a := string(srv.Address); a != s.rpcAdvertise.String() && (len(addrs) == 0 || a != addrs[0]) {
				addrs = append(addrs, a)
			}
		}
	}
	err := fmt.Errorf("%w: no other server to copy %s from", structs.ErrUnknownRootKey, meta.KeyID)
	for _, addr := range addrs {
		var reply structs.KeyringGetRootKeyResponse
		args := &structs.KeyringGetRootKeyRequest{KeyID: meta.KeyID}
		if err = s.connPool.RPC(addr, "Keyring.Get", args, &reply, 0); err != nil {
			continue
		}
		if reply.Key == nil || reply.Key.Meta == nil || reply.Key.Meta.KeyID != meta.KeyID {
			err = fmt.Errorf("%w: %s answered without key %s", structs.ErrUnknownRootKey, addr, meta.KeyID)
			continue
		}
		return s.encrypter.AddKey(reply.Key)
	}
	return err
}
