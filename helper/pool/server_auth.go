package pool

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
)

// RPCServerAuth is the first byte of a connection on which a server
// proves that it is one of the cluster's servers (after RPCTLS, inside
// TLS, when TLS is on): the accepting agent answers with a random
// ServerNonceSize-byte challenge, the dialer writes ServerProof of it
// under the servers' shared secret, then the byte of what the connection
// is (RPCMultiplex or RPCRaft). The secret itself never crosses the
// network, and a proof is good for its connection only. The value is far
// from upstream's connection bytes so that the two never meet.
const RPCServerAuth byte = 0x10

// ServerNonceSize is the size of the challenge and of the proof.
const ServerNonceSize = sha256.Size

// serverProofContext binds a proof to its purpose: the secret keys
// nothing else, but a hash made for this must never pass for another.
const serverProofContext = "nomad-edge server proof v1\x00"

// ServerProof is the proof of holding secret for the challenge nonce.
func ServerProof(secret, nonce []byte) []byte { return contextProof(serverProofContext, secret, nonce) }

// contextProof is HMAC-SHA256 under key of context and nonce: the one
// shape of every challenge's answer, the context telling them apart.
func contextProof(context string, key, nonce []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(context))
	m.Write(nonce)
	return m.Sum(nil)
}

// ServerProver is what a server dials with to prove itself; nil, or one
// that HasServerIdentity false, dials without a proof.
type ServerProver interface {
	// HasServerIdentity reports whether the dialer knows the servers'
	// secret yet. Once true it stays true.
	HasServerIdentity() bool
	// ServerProof answers a challenge (see the function ServerProof).
	ServerProof(nonce []byte) []byte
}

// proveServer answers the accepting agent's challenge on conn, announced
// by kind (RPCServerAuth or RPCBootstrapAuth).
func proveServer(conn net.Conn, kind byte, proof func(nonce []byte) []byte) error {
	if _, err := conn.Write([]byte{kind}); err != nil {
		return err
	}
	nonce := make([]byte, ServerNonceSize)
	if _, err := io.ReadFull(conn, nonce); err != nil {
		return fmt.Errorf("reading the server challenge: %w", err)
	}
	_, err := conn.Write(proof(nonce))
	return err
}

// RPCBootstrapAuth is the first byte of a plaintext connection on which a
// server of tls.auto that holds no certificate yet proves that it holds
// the servers' bootstrap key (derived from the gossip key, server.encrypt),
// with the challenge and answer of RPCServerAuth. It is how servers tell
// each other apart from outsiders before the cluster CA exists, or before
// a new server has its first certificate.
const RPCBootstrapAuth byte = 0x11

// bootstrapProofContext binds a bootstrap proof to its purpose.
const bootstrapProofContext = "nomad-edge server bootstrap proof v1\x00"

// BootstrapProof is the proof of holding the bootstrap key for nonce.
func BootstrapProof(key, nonce []byte) []byte { return contextProof(bootstrapProofContext, key, nonce) }

// BootstrapProver is what a ServerProver also is on servers of tls.auto:
// on a connection dialed without TLS, it proves the bootstrap key first
// (RPCBootstrapAuth).
type BootstrapProver interface {
	// HasBootstrapKey reports whether the dialer has a bootstrap key.
	HasBootstrapKey() bool
	// BootstrapProof answers a challenge (see the function BootstrapProof).
	BootstrapProof(nonce []byte) []byte
}
