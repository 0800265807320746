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
	// of them first (RPCServerAuth).
	Prover ServerProver
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
	if in.Prover != nil && in.Prover.HasServerIdentity() {
		if dl, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(dl)
		}
		if err := proveServer(conn, in.Prover); err != nil {
			conn.Close()
			return nil, fmt.Errorf("server proof to %s: %w", in.Addr, err)
		}
		_ = conn.SetDeadline(time.Time{})
	}
	if _, err := conn.Write([]byte{in.Kind}); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
