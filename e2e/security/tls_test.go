package security

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// With tls.rpc (certificates from `nomad tls ca create` and `nomad tls
// cert create`) an outsider reaches RPC only with a certificate of the
// CA: plaintext, no certificate and another CA's are refused before any
// call; what a client agent sends is unreadable on the link; a client
// certificate still registers a new node (strict is off) but takes no
// server's work, speaks no raft and poses as no node (security.md's third
// row).
func TestOutsider_TLS(t *testing.T) {
	t.Parallel()
	ags := harness.NewAgents(t)
	ca := newPKI(t, filepath.Join(ags.Dir, "pki"))
	other := newPKI(t, filepath.Join(ags.Dir, "other-pki"))
	srv := startServer(t, ags, "", ca.agentTLS("server"))
	link := startRelay(t, srv.RPCAddr())
	nodeID := startClient(t, ags, srv, link.addr(), ca.agentTLS("client"))
	withCert := outsider{addr: srv.RPCAddr(), tls: ca.dialer(t, "client")}

	t.Run("CannotReadRPCTraffic", func(t *testing.T) {
		seen := link.captured()
		must.Eq(t, pool.RPCTLS, seen[0], must.Sprint("the connection starts as TLS"))
		must.Eq(t, 0x16, seen[1], must.Sprint("a TLS handshake record follows"))
		for _, clear := range []string{"Node.Register", "SecretID", nodeID} {
			must.False(t, bytes.Contains(seen, []byte(clear)), must.Sprintf("%q readable on the link", clear))
		}
	})

	// Refused at the connection: a transport error, never an answer.
	for name, o := range map[string]outsider{
		"PlaintextRefused":     {addr: srv.RPCAddr()},
		"NoCertificateRefused": {addr: srv.RPCAddr(), tls: ca.dialer(t, "")},
		"OtherCARefused":       {addr: srv.RPCAddr(), tls: other.dialer(t, "client")},
	} {
		t.Run(name, func(t *testing.T) {
			var reply struct{}
			err := o.call("Status.Ping", &structs.GenericRequest{}, &reply)
			must.True(t, errors.Is(err, pool.ErrTransport), must.Sprintf("Status.Ping: %v", err))
			err = o.register(newNode("edge-x"), "")
			must.True(t, errors.Is(err, pool.ErrTransport), must.Sprintf("Node.Register: %v", err))
			must.True(t, o.raftClosed(t), must.Sprint("raft kept open"))
		})
	}

	// What a plaintext caller sends first: raft's byte, or our
	// multiplexed RPC's and a yamux frame (0x04 is also upstream's TLS
	// byte, so the server reads on for a TLS handshake and fails it).
	for name, first := range map[string][]byte{
		"PlaintextRaftClosedAtOnce":  {pool.RPCRaft},
		"PlaintextYamuxClosedAtOnce": {pool.RPCMultiplex, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := dialFrom("127.0.0.1", srv.RPCAddr())
			must.NoError(t, err)
			defer c.Close()
			_, err = c.Write(first)
			must.NoError(t, err)
			closed, answer := closedAtOnce(c)
			must.True(t, closed, must.Sprint("a plaintext connection kept open"))
			must.Eq(t, "", answer)
		})
	}

	t.Run("ClientCertRegistersNewNode", func(t *testing.T) {
		must.NoError(t, withCert.register(newNode("edge-1"), ""))
	})
	t.Run("PoseAsExistingNodeRefused", func(t *testing.T) { probePoseAsNode(t, withCert, nodeID) })
	t.Run("ServerOnlyRPCsRefused", func(t *testing.T) {
		probeServerOnly(t, withCert, "", "needs a server certificate (server.global.nomad) or the servers' identity")
	})
	t.Run("RaftClosed", func(t *testing.T) {
		must.True(t, withCert.raftClosed(t), must.Sprint("raft from a client certificate kept open"))
	})
}
