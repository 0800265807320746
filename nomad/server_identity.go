package nomad

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/helper/atomicfile"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// The servers' identity: a secret the first leader writes to raft
// (structs.ServerIdentity), which every server then holds and proves on
// the connections it dials (pool.RPCServerAuth). It is what lets a server
// tell a fellow server from a client or an outsider when there is no TLS
// certificate to tell it by: the scheduling RPCs, Keyring.Get and raft
// answer only servers, whatever the TLS setting.
//
// A server that holds no identity yet (a new one, before the leader's log
// reaches it) accepts raft from anyone: the leader it is about to follow
// can prove nothing to it. Under tls.auto it accepts only certified
// servers, or in the bootstrap window servers proving the gossip key
// (tls_server.go). Everything it accepts then is overwritten by the
// leader's log once it is a member; what an outsider on an open gossip
// network can do against that is in website/content/docs/security.md.

// serverIdentitySize is the size of the generated secret.
const serverIdentitySize = 32

// ErrBadServerProof refuses a connection whose server proof does not match
// this cluster's servers' identity: a server of another cluster, or a
// forgery.
var ErrBadServerProof = errors.New("server proof does not match this cluster's server identity")

// serverSecret is the servers' shared secret, or nil while none is known:
// the one in the state store, or, until the state store has it again
// (a restarted server replays its log only once the leader tells it the
// commit index), the copy kept in the data dir. Without that copy, a
// restarted server could neither prove itself nor check a proof, and a
// candidate it had to vote for could be refused by the others.
func (s *Server) serverSecret() []byte {
	if id, err := s.State().ServerIdentity(nil); err == nil && id != nil {
		s.identity.learn(id.Secret, s.logger)
		return id.Secret
	}
	return s.identity.get()
}

// serverIdentityFile is the copy of the servers' secret in the data dir.
const serverIdentityFile = "server-identity"

// identityCache is the server's last known servers' secret, kept on disk.
type identityCache struct {
	path string // "" keeps it in memory only (dev servers)
	mu   sync.Mutex
	// secret is guarded by mu.
	secret []byte
}

// loadIdentityCache reads the copy kept in cfg's data dir, if any.
func loadIdentityCache(cfg *Config) (*identityCache, error) {
	c := &identityCache{}
	if cfg.DevMode || cfg.InMemory || cfg.DataDir == "" {
		return c, nil
	}
	c.path = filepath.Join(cfg.DataDir, serverIdentityFile)
	buf, err := os.ReadFile(c.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("reading the servers' identity %s: %w", c.path, err)
	case len(buf) != serverIdentitySize:
		return nil, fmt.Errorf("the servers' identity %s is corrupt (%d bytes, not %d); remove it and this server learns it again from the leader", c.path, len(buf), serverIdentitySize)
	default:
		c.secret = buf
	}
	return c, nil
}

func (c *identityCache) get() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.secret
}

// learn keeps secret, the state store's, writing it to disk when it is new.
func (c *identityCache) learn(secret []byte, logger hclog.Logger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if bytes.Equal(c.secret, secret) {
		return
	}
	c.secret = secret
	if c.path == "" {
		return
	}
	if err := atomicfile.Write(c.path, secret, 0o600); err != nil {
		logger.Error("failed to keep the servers' identity in the data dir", "path", c.path, "error", err)
	}
}

// serverProver is the server's pool.ServerProver, for its pool and raft
// layer (which exist before its state store does).
type serverProver struct{ s *Server }

var _ pool.ServerProver = serverProver{}

func (p serverProver) HasServerIdentity() bool {
	return p.s.fsm != nil && p.s.serverSecret() != nil
}

func (p serverProver) ServerProof(nonce []byte) []byte {
	return pool.ServerProof(p.s.serverSecret(), nonce)
}

var _ pool.BootstrapProver = serverProver{}

// HasBootstrapKey is set on servers of tls.auto (tls_server.go).
func (p serverProver) HasBootstrapKey() bool { return p.s.autoCert.key != nil }

func (p serverProver) BootstrapProof(nonce []byte) []byte {
	return pool.BootstrapProof(p.s.autoCert.key, nonce)
}

// checkServerProof challenges a connection that announced a server proof
// and reads its answer: proven when it matches; a wrong answer is an error
// (the connection is refused). When this server knows no identity yet to
// check the answer against, it is kept as a lateProof instead.
func (s *Server) checkServerProof(conn net.Conn) (bool, *lateProof, error) {
	nonce := make([]byte, pool.ServerNonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return false, nil, err
	}
	if _, err := conn.Write(nonce); err != nil {
		return false, nil, err
	}
	proof := make([]byte, pool.ServerNonceSize)
	if _, err := io.ReadFull(conn, proof); err != nil {
		return false, nil, fmt.Errorf("reading server proof: %w", err)
	}
	secret := s.serverSecret()
	if secret == nil {
		return false, &lateProof{nonce: nonce, proof: proof, secret: s.serverSecret}, nil
	}
	if !hmac.Equal(proof, pool.ServerProof(secret, nonce)) {
		return false, nil, ErrBadServerProof
	}
	return true, nil, nil
}

// lateProof is a server proof given on a connection this server accepted
// before it knew the servers' identity, checked when a call needs it
// against the identity as this server knows it then. A server can learn
// the identity before another, and dial it with a proof at once: a
// follower applies the entry that writes it as soon as it hears it is
// committed, which may be before the leader's own FSM has applied it.
// Taken for unproven, such a connection would stay so for its whole
// life, since the dialer's pool, having proved it, never replaces it:
// every server-only RPC on it refused, the follower's node-session
// digests, root-key copies and workers' calls included.
type lateProof struct {
	nonce, proof []byte
	secret       func() []byte
	// ok is set once the proof matched; the identity never changes.
	ok atomic.Bool
}

// valid reports whether the proof matches the servers' identity as this
// server knows it now; false while it knows none.
func (p *lateProof) valid() bool {
	if p == nil {
		return false
	}
	if p.ok.Load() {
		return true
	}
	secret := p.secret()
	if secret == nil || !hmac.Equal(p.proof, pool.ServerProof(secret, p.nonce)) {
		return false
	}
	p.ok.Store(true)
	return true
}

// ErrRaftNotServer refuses a raft connection from a caller that is not a
// server.
var ErrRaftNotServer = fmt.Errorf("%w: raft is for servers only", structs.ErrPermissionDenied)

// mayCarryRaft says whether a connection may carry raft: a server's (by
// certificate or proof) always; a TLS client certificate never; an
// unproven plaintext one only while this server knows no identity yet.
func (s *Server) mayCarryRaft(peer rpcPeer) error {
	switch {
	case peer.isServer():
		return nil
	case peer.tls:
		return fmt.Errorf("%w: a non-server certificate", ErrRaftNotServer)
	case s.serverSecret() != nil:
		return fmt.Errorf("%w: the caller did not prove the servers' identity", ErrRaftNotServer)
	}
	return nil
}

// ensureServerIdentity writes the servers' identity when the cluster has
// none: on the first leader of a new cluster, and on the first leader of
// an upgraded one.
func (s *Server) ensureServerIdentity() error {
	if s.serverSecret() != nil {
		return nil
	}
	secret := make([]byte, serverIdentitySize)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	_, _, err := s.raftApply(structs.ServerIdentitySetRequestType, &structs.ServerIdentitySetRequest{
		Identity: &structs.ServerIdentity{ID: structs.ServerIdentityID, Secret: secret},
	})
	return err
}

func (f *nomadFSM) applyServerIdentitySet(req *structs.ServerIdentitySetRequest, index uint64) error {
	_, err := f.State().SetServerIdentity(index, req.Identity)
	return err
}
