package pool

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// RPCTLS is the first byte of a connection that continues as TLS: the
// handshake follows at once, and the first byte inside the TLS stream
// says what the connection is (RPCMultiplex or RPCRaft). A server with
// tls.rpc enabled accepts nothing else.
const RPCTLS byte = 0x05

// DialInput says where and how to open an agent connection.
type DialInput struct {
	Dialer Dialer
	Addr   string
	// TLS, when set, wraps the connection (tlsutil.Config.OutgoingRPC).
	TLS *tls.Config
	// Kind is the connection's first byte: RPCMultiplex or RPCRaft.
	Kind byte
	// Prover, when it has the servers' identity, proves the dialer one
	// of them first (RPCServerAuth); when it is a BootstrapProver with a
	// key and TLS is nil, it proves the bootstrap key before that
	// (RPCBootstrapAuth).
	Prover ServerProver
}

// proveWithin answers one challenge on conn within ctx's deadline.
func proveWithin(ctx context.Context, conn net.Conn, kind byte, proof func([]byte) []byte) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if err := proveServer(conn, kind, proof); err != nil {
		return err
	}
	return conn.SetDeadline(time.Time{})
}

// Dial opens a connection to an agent's RPC port and announces its kind,
// inside TLS when in.TLS is set. ctx bounds the dial and the handshake.
func Dial(ctx context.Context, in DialInput) (net.Conn, error) {
	dialer := in.Dialer
	if dialer == nil {
		dialer = &net.Dialer{}
	}
	conn, err := dialer.DialContext(ctx, "tcp", in.Addr)
	if err != nil {
		return nil, err
	}
	if in.TLS != nil {
		if _, err := conn.Write([]byte{RPCTLS}); err != nil {
			conn.Close()
			return nil, err
		}
		tconn := tls.Client(conn, in.TLS)
		if err := tconn.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", in.Addr, err)
		}
		conn = tconn
	}
	if bp, ok := in.Prover.(BootstrapProver); ok && in.TLS == nil && bp.HasBootstrapKey() {
		if err := proveWithin(ctx, conn, RPCBootstrapAuth, bp.BootstrapProof); err != nil {
			conn.Close()
			return nil, fmt.Errorf("bootstrap proof to %s: %w", in.Addr, err)
		}
	}
	if in.Prover != nil && in.Prover.HasServerIdentity() {
		if err := proveWithin(ctx, conn, RPCServerAuth, in.Prover.ServerProof); err != nil {
			conn.Close()
			return nil, fmt.Errorf("server proof to %s: %w", in.Addr, err)
		}
	}
	if _, err := conn.Write([]byte{in.Kind}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
