package nomad

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"slices"
	"time"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/nomad/upstreamrpc"
)

// rpcPeer is what a server knows about who is calling: the server itself,
// or the other end of one network connection. net/rpc hands endpoints
// nothing but their arguments, so every network connection gets its own
// rpc.Server whose endpoints carry the connection's rpcPeer (see
// registerEndpoints); in-process calls use the server's own, with
// local set.
type rpcPeer struct {
	// local marks calls the server makes to itself (its workers, its HTTP
	// API, a dev agent's client).
	local bool
	// tls is set when the connection is TLS with a certificate the CA
	// signed; server when that certificate is a server's of this region.
	tls    bool
	server bool
	// serverProof is set when the caller proved that it holds the
	// servers' shared identity (see server_identity.go); lateProof holds
	// the proof it gave while this server knew no identity to check it
	// against.
	serverProof bool
	lateProof   *lateProof
	// bootstrapProof is set on a plaintext connection of tls.auto whose
	// dialer proved the bootstrap key (tls_server.go): a server without
	// its certificate yet, accepted only in the bootstrap window.
	bootstrapProof bool
	// auto marks a connection of tls.auto (tls_auto.go): node is the node
	// its certificate names, "" for a caller without one (anonymous), and
	// certExpired a node certificate let through for renewal only.
	auto        bool
	node        string
	certExpired bool
}

// isServer reports whether the peer is one of the cluster's servers, by
// its certificate or by its proof.
func (p rpcPeer) isServer() bool {
	return p.local || p.server || p.serverProof || p.bootstrapProof || p.lateProof.valid()
}

// rpcTLS holds the server's TLS configurations while tls.rpc is enabled.
type rpcTLS struct {
	incoming *tls.Config
	outgoing *tls.Config
	region   string
}

// ErrPlaintextRefused is why a server with tls.rpc enabled drops a
// connection that does not start a TLS handshake.
var ErrPlaintextRefused = errors.New("plaintext RPC connection refused: this server requires TLS (tls.rpc = true)")

// errSilentConn marks a connection that closed or idled before saying
// anything: port scanners and TCP health checks, not worth a log line.
var errSilentConn = errors.New("connection sent nothing")

// newRPCTLS builds the server's TLS side from cfg; nil when RPC TLS is off.
func newRPCTLS(cfg *tlsutil.Config, region string) (*rpcTLS, error) {
	if cfg == nil || !cfg.EnableRPC {
		return nil, nil
	}
	c := *cfg
	c.Region = region
	in, err := c.IncomingRPC()
	if err != nil {
		return nil, err
	}
	out, err := c.OutgoingRPC()
	if err != nil {
		return nil, err
	}
	return &rpcTLS{incoming: in, outgoing: out, region: region}, nil
}

// outgoingTLS is what the server dials other servers with, or nil.
func (t *rpcTLS) outgoingTLS() *tls.Config {
	if t == nil {
		return nil
	}
	return t.outgoing
}

// openConn reads what an accepted connection is, doing the TLS handshake
// first when it asks for one and checking a server's proof when it gives
// one (RPCServerAuth), and returns the connection to use from then on
// (the TLS one, when it is) with its kind and peer. With tls.rpc enabled
// anything but TLS is refused.
func (s *Server) openConn(conn net.Conn) (net.Conn, byte, rpcPeer, error) {
	// Idle strangers must not hold connections: the first byte, the TLS
	// handshake and the server proof get RPCHandshakeTimeout together.
	if d := s.config.RPCHandshakeTimeout; d > 0 {
		_ = conn.SetDeadline(time.Now().Add(d))
	}
	kind, err := readByte(conn)
	if err != nil {
		return nil, 0, rpcPeer{}, fmt.Errorf("%w: %w", errSilentConn, err)
	}
	if kind == upstreamrpc.ConnTLS && s.tls != nil {
		conn, kind = upstreamTLS(conn)
	}
	var peer rpcPeer
	switch {
	case kind != pool.RPCTLS && s.tls != nil:
		return nil, 0, rpcPeer{}, ErrPlaintextRefused
	case kind != pool.RPCTLS:
	case s.tls == nil && s.autoTLSOn():
		var ap autoPeer
		tconn := tls.Server(conn, s.autoIncomingTLS(func(p autoPeer) { ap = p }))
		if kind, err = handshakeKind(tconn); err != nil {
			return nil, 0, rpcPeer{}, err
		}
		conn = tconn
		peer = rpcPeer{tls: true, server: ap.server, auto: true, node: ap.nodeID, certExpired: ap.expired}
	case s.tls == nil:
		return nil, 0, rpcPeer{}, errors.New("TLS RPC connection refused: this server has tls.rpc disabled")
	default:
		tconn := tls.Server(conn, s.tls.incoming)
		if kind, err = handshakeKind(tconn); err != nil {
			return nil, 0, rpcPeer{}, err
		}
		conn = tconn
		peer = rpcPeer{tls: true, server: tlsutil.IsServer(tconn.ConnectionState(), s.tls.region)}
	}
	if kind == pool.RPCBootstrapAuth {
		if !s.autoTLSOn() || peer.tls {
			return nil, 0, rpcPeer{}, errors.New("bootstrap proof refused: it is for plaintext connections to servers of tls.auto")
		}
		if err := s.checkBootstrapProof(conn); err != nil {
			return nil, 0, rpcPeer{}, err
		}
		peer.bootstrapProof = true
		if kind, err = readByte(conn); err != nil {
			return nil, 0, rpcPeer{}, err
		}
		if kind == pool.RPCTLS || kind == pool.RPCBootstrapAuth {
			return nil, 0, rpcPeer{}, fmt.Errorf("connection byte %#x after a bootstrap proof refused", kind)
		}
	}
	if kind == pool.RPCServerAuth {
		if peer.serverProof, peer.lateProof, err = s.checkServerProof(conn); err != nil {
			return nil, 0, rpcPeer{}, err
		}
		if kind, err = readByte(conn); err != nil {
			return nil, 0, rpcPeer{}, err
		}
		if kind == pool.RPCTLS || kind == pool.RPCServerAuth || kind == pool.RPCBootstrapAuth {
			return nil, 0, rpcPeer{}, fmt.Errorf("connection byte %#x after a server proof refused", kind)
		}
	}
	if peer.auto && !peer.server {
		// Under tls.auto a server dials TLS only with its certificate
		// (before it has one it dials plaintext): a proof of the servers'
		// identity without one is not a server's, whoever learnt it.
		peer.serverProof, peer.lateProof = false, nil
	}
	if s.autoTLSOn() && !peer.tls {
		// Plaintext under tls.auto: only a server proven by the bootstrap
		// key, and only in the bootstrap window (tls_server.go).
		switch {
		case !peer.bootstrapProof:
			return nil, 0, rpcPeer{}, ErrPlaintextRefusedAuto
		case s.autoCAKnown() || !s.trackPlain(conn):
			return nil, 0, rpcPeer{}, errPlaintextCAKnown
		}
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, kind, peer, nil
}

// ErrPlaintextRefusedAuto is why a server running tls.auto drops a
// plaintext connection: every one but a bootstrapping server's.
var ErrPlaintextRefusedAuto = errors.New("plaintext RPC connection refused: this server requires TLS (tls.auto = true)")

// handshakeKind finishes a TLS handshake and reads the connection's kind
// inside it.
func handshakeKind(tconn *tls.Conn) (byte, error) {
	if err := tconn.Handshake(); err != nil {
		return 0, fmt.Errorf("TLS handshake: %w", err)
	}
	kind, err := readByte(tconn)
	if err != nil {
		return 0, err
	}
	if kind == pool.RPCTLS {
		return 0, errors.New("TLS inside TLS refused")
	}
	return kind, nil
}

func readByte(r io.Reader) (byte, error) {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	return b[0], nil
}

// connRPCServer returns the rpc.Server for one network connection, its
// endpoints bound to peer.
func (s *Server) connRPCServer(peer rpcPeer) (*rpc.Server, error) {
	srv := rpc.NewServer()
	if err := s.registerEndpoints(srv, peer); err != nil {
		return nil, err
	}
	return srv, nil
}

// ErrServerOnlyRPC refuses a scheduling RPC from a caller that is not a
// server: only a server (by its certificate with TLS on, by the servers'
// shared identity whatever the TLS setting) may hold evaluations, submit
// plans, copy root keys or carry raft.
var ErrServerOnlyRPC = fmt.Errorf("%w: only servers may call this RPC", structs.ErrPermissionDenied)

// tlsOnlySecrets are the server-only RPCs whose answers are secrets that
// must not cross the network in the clear: under tls.auto a server on a
// plaintext connection (one proven by the bootstrap key, in the bootstrap
// window) is refused them, and gets them once it has its certificate.
var tlsOnlySecrets = []string{"Keyring.Get"}

// requireServer lets through the server's own calls and callers that are
// servers (rpcPeer.isServer); everyone else is refused, TLS or not.
func (s *Server) requireServer(peer rpcPeer, method string) error {
	if s.autoTLSOn() && !peer.local && !peer.tls && slices.Contains(tlsOnlySecrets, method) {
		return fmt.Errorf("%w: under tls.auto, %s answers only inside TLS (a server without its certificate yet gets one first)", ErrServerOnlyRPC, method)
	}
	if peer.isServer() {
		return nil
	}
	if s.tls != nil {
		return fmt.Errorf("%w: %s needs a server certificate (server.%s.nomad) or the servers' identity", ErrServerOnlyRPC, method, s.config.Region)
	}
	return fmt.Errorf("%w: %s needs the servers' identity, which this caller did not prove", ErrServerOnlyRPC, method)
}
