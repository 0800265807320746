package security

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// With tls.auto (and the gossip key it requires) a real server agent
// makes its CA and from then on speaks only TLS: plaintext RPC and raft
// are closed; over TLS without a certificate the servers' RPCs and raft
// are refused, and a server certificate goes only to a caller proving
// the gossip key (security.md's tls.auto row).
func TestOutsider_TLSAuto(t *testing.T) {
	t.Parallel()
	gossip := bytes.Repeat([]byte{7}, 32)
	ags := harness.NewAgents(t)
	srv := startServer(t, ags, fmt.Sprintf("  encrypt = %q\n", base64.StdEncoding.EncodeToString(gossip)), "\ntls {\n  auto = true\n}\n")
	plain := outsider{addr: srv.RPCAddr()}
	anon := outsider{addr: srv.RPCAddr(), tls: &tls.Config{InsecureSkipVerify: true}}
	// The server presents a certificate once it has made its CA.
	wait.Poll(t, 30*time.Second, "the server's certificate of its CA", func() (bool, string) {
		var reply struct{}
		err := anon.call("Status.Ping", &structs.GenericRequest{}, &reply)
		return err == nil, fmt.Sprint(err)
	})

	t.Run("PlaintextRefused", func(t *testing.T) {
		var reply struct{}
		err := plain.call("Status.Ping", &structs.GenericRequest{}, &reply)
		must.True(t, errors.Is(err, pool.ErrTransport), must.Sprintf("Status.Ping: %v", err))
		must.True(t, plain.raftClosed(t), must.Sprint("plaintext raft kept open"))
	})
	t.Run("NoCertificateServerOnlyRefused", func(t *testing.T) {
		for _, c := range serverOnlyCalls() {
			err := anon.call(c.method, c.args(""), c.reply())
			must.ErrorIs(t, err, structs.ErrNodeCertRefused, must.Sprint(c.method))
		}
		must.True(t, anon.raftClosed(t), must.Sprint("raft without a certificate kept open"))
	})
	t.Run("ServerCertNeedsGossipKey", func(t *testing.T) {
		csr, _, err := tlsutil.NewCSR(tlsutil.ServerName("global"))
		must.NoError(t, err)
		wrong, err := nomad.NewServerCertRequest(bytes.Repeat([]byte{8}, 32), "global", csr, time.Now())
		must.NoError(t, err)
		var resp nomad.ServerCertResponse
		must.ErrorIs(t, anon.call("ServerTLS.IssueCert", wrong, &resp), structs.ErrPermissionDenied)
		right, err := nomad.NewServerCertRequest(gossip, "global", csr, time.Now())
		must.NoError(t, err)
		must.NoError(t, anon.call("ServerTLS.IssueCert", right, &resp))
		must.SliceNotEmpty(t, resp.Chain)
	})
}
