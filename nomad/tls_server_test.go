package nomad

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// keyProver proves a bootstrap key, and no servers' identity.
type keyProver struct{ key []byte }

func (keyProver) HasServerIdentity() bool          { return false }
func (keyProver) ServerProof([]byte) []byte        { return nil }
func (keyProver) HasBootstrapKey() bool            { return true }
func (p keyProver) BootstrapProof(n []byte) []byte { return pool.BootstrapProof(p.key, n) }

// In the bootstrap window (no CA exists: this server waits for a second
// one to bootstrap raft with), a server of tls.auto carries plaintext raft
// only for a dialer that proves the bootstrap key of its gossip key: an
// outsider without a proof, or with a proof of another gossip key, gets
// no raft answer. Without the gossip key the server does not start.
func TestAutoTLS_BootstrapWindowNeedsGossipKey(t *testing.T) {
	gossip := bytes.Repeat([]byte{3}, 32)
	cfg := DefaultConfig()
	cfg.Logger = hclog.NewNullLogger()
	cfg.NodeName = t.Name()
	cfg.DataDir = t.TempDir()
	cfg.BootstrapExpect = 2
	cfg.RPCAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	cfg.SerfAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	cfg.TLS = &tlsutil.Config{Auto: true, Region: cfg.Region}

	_, err := NewServer(cfg)
	must.ErrorIs(t, err, ErrTLSAutoNeedsEncrypt)

	cfg.SerfEncryptKey = gossip
	s, err := NewServer(cfg)
	must.NoError(t, err)
	t.Cleanup(func() { _ = s.Shutdown() })
	must.False(t, s.autoCAKnown())

	good, err := DeriveBootstrapKey(gossip)
	must.NoError(t, err)
	other, err := DeriveBootstrapKey(bytes.Repeat([]byte{4}, 32))
	must.NoError(t, err)
	target := raft.ServerAddress(s.RPCAddr().String())
	appendEntries := func(prover pool.ServerProver) error {
		trans := newRaftNetTransport(newRaftLayer(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, nil, nil, prover), hclog.NewNullLogger())
		defer trans.Close()
		var resp raft.AppendEntriesResponse
		return trans.AppendEntries("outsider", target, &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("outsider"), Addr: []byte("127.0.0.1:1")}, Term: 1}, &resp)
	}
	must.NoError(t, appendEntries(keyProver{good}), must.Sprint("a server proving the gossip key gets raft in the window"))
	must.Error(t, appendEntries(nil), must.Sprint("an outsider without a proof gets raft"))
	must.Error(t, appendEntries(keyProver{other}), must.Sprint("a server of another gossip key gets raft"))

	// Server RPC works in the window for a proven server, but root keys
	// do not cross a plaintext connection.
	p := pool.NewPool(pool.Config{Prover: keyProver{good}})
	defer p.Shutdown()
	var peers []string
	must.NoError(t, p.RPC(s.RPCAddr().String(), "Status.Peers", &structs.GenericRequest{}, &peers, 0))
	err = p.RPC(s.RPCAddr().String(), "Keyring.Get", &structs.KeyringGetRootKeyRequest{KeyID: "any"}, &structs.KeyringGetRootKeyResponse{}, 0)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.ErrorContains(t, err, "answers only inside TLS")

	// The CA arriving (as from the log) ends the window: the plaintext
	// raft connection accepted in it is closed, and a new one refused.
	conn, err := pool.Dial(t.Context(), pool.DialInput{Addr: s.RPCAddr().String(), Kind: pool.RPCRaft, Prover: keyProver{good}})
	must.NoError(t, err)
	defer conn.Close()
	must.NoError(t, appendEntries(keyProver{good}))
	certPEM, _, err := tlsutil.GenerateCA(tlsutil.CAInput{})
	must.NoError(t, err)
	must.NoError(t, s.State().UpsertTLSCAs(1000, &structs.TLSCAUpsertRequest{CAs: []*structs.TLSCA{{ID: "ca-1", CertPEM: certPEM, Active: true}}}))
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(conn)
	must.NoError(t, err, must.Sprint("the bootstrap connection was not closed when the CA arrived"))
	must.Error(t, appendEntries(keyProver{good}), must.Sprint("plaintext raft after the window"))
}
