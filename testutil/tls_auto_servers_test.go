package testutil_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/fault"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// autoTLSGossipKey is the servers' server.encrypt in these tests.
var autoTLSGossipKey = bytes.Repeat([]byte{7}, 32)

// startAutoTLSServers starts n fresh servers of tls.auto sharing the
// gossip key, and waits until every one holds its certificate of the
// cluster CA and has closed its bootstrap window.
func startAutoTLSServers(t *testing.T, n int) *testutil.Servers {
	t.Helper()
	sc := testutil.StartServers(t, testutil.ServersConfig{N: n, Server: func(_ int, c *nomad.Config) {
		c.TLS = &tlsutil.Config{Auto: true, Region: c.Region}
		c.SerfEncryptKey = autoTLSGossipKey
	}})
	waitAutoTLSCerts(t, sc, "")
	return sc
}

// waitAutoTLSCerts waits until every running server holds a certificate
// of the active CA (whose ID differs from notCA) and knows that CA.
func waitAutoTLSCerts(t *testing.T, sc *testutil.Servers, notCA string) {
	t.Helper()
	wait.Poll(t, 30*time.Second, "every server's certificate of the cluster CA", func() (bool, string) {
		var seen []string
		ok := true
		for i, s := range sc.Servers {
			if s == nil {
				continue
			}
			ca, _ := s.State().ActiveTLSCA(nil)
			cert := s.AutoTLSCert()
			switch {
			case ca == nil || ca.ID == notCA:
				ok = false
				seen = append(seen, fmt.Sprintf("%d: no new CA", i))
			case cert == nil:
				ok = false
				seen = append(seen, fmt.Sprintf("%d: no certificate", i))
			case cert.Issuer.CommonName != caCommonName(t, ca):
				ok = false
				seen = append(seen, fmt.Sprintf("%d: certificate of %q", i, cert.Issuer.CommonName))
			}
		}
		return ok, fmt.Sprint(seen)
	})
}

func caCommonName(t *testing.T, ca *structs.TLSCA) string {
	cert, err := tlsutil.ParseCert(ca.CertPEM)
	must.NoError(t, err)
	return cert.Subject.CommonName
}

// writeThroughFollower writes a node pool through a follower (forwarded
// to the leader over server RPC) and waits until every running server's
// state has it (raft replication).
func writeThroughFollower(t *testing.T, sc *testutil.Servers, name string) {
	t.Helper()
	leader := sc.WaitForLeader()
	follower := (leader + 1) % len(sc.Servers)
	for sc.Servers[follower] == nil {
		follower = (follower + 1) % len(sc.Servers)
	}
	must.NoError(t, sc.Servers[follower].RPC("NodePool.UpsertNodePools", &structs.NodePoolUpsertRequest{
		NodePools: []*structs.NodePool{{Name: name}},
	}, &structs.GenericResponse{}))
	wait.Poll(t, 20*time.Second, "node pool "+name+" on every server", func() (bool, string) {
		for i, s := range sc.Servers {
			if s == nil {
				continue
			}
			if p, err := s.State().NodePoolByName(nil, name); err != nil || p == nil {
				return false, fmt.Sprintf("server %d lacks it", i)
			}
		}
		return true, ""
	})
}

// bootstrapProver proves a bootstrap key and no servers' identity: a
// server of tls.auto that has no certificate yet, or an outsider that
// stole the gossip key's derivative.
type bootstrapProver struct{ key []byte }

func (bootstrapProver) HasServerIdentity() bool          { return false }
func (bootstrapProver) ServerProof([]byte) []byte        { return nil }
func (bootstrapProver) HasBootstrapKey() bool            { return true }
func (p bootstrapProver) BootstrapProof(n []byte) []byte { return pool.BootstrapProof(p.key, n) }

// Three fresh servers of tls.auto with bootstrap_expect = 3 elect a
// leader over raft proven by the gossip key alone (no CA exists yet),
// the leader makes the CA, every server gets its certificate (kept,
// 0600, under <data_dir>/tls) and closes its plaintext bootstrap
// connections; from then on forwarded writes and their replication go
// over TLS between certified servers only, which is what the write after
// the window proves (every server refuses plaintext by then).
func TestServers_AutoTLS_ThreeFreshServersBootstrap(t *testing.T) {
	sc := startAutoTLSServers(t, 3)
	for i := range sc.Servers {
		for _, f := range []string{"server.pem", "server-key.pem", "ca.pem"} {
			fi, err := os.Stat(filepath.Join(sc.Servers[i].AutoTLSDir(), f))
			must.NoError(t, err)
			must.Eq(t, os.FileMode(0o600), fi.Mode().Perm(), must.Sprint(f))
		}
	}
	writeThroughFollower(t, sc, "after-bootstrap")
}

// Once the CA exists, a server refuses plaintext from anyone: raft and
// RPC of an outsider, and even of a dialer that proves the gossip key
// but presents no certificate; TLS without a certificate gets no
// server-only call.
func TestServers_AutoTLS_PlaintextRefusedOnceCAExists(t *testing.T) {
	sc := startAutoTLSServers(t, 3)
	addr := sc.Addr(sc.WaitForLeader())
	key, err := nomad.DeriveBootstrapKey(autoTLSGossipKey)
	must.NoError(t, err)

	for _, prover := range []pool.ServerProver{nil, bootstrapProver{key}} {
		conn, err := pool.Dial(t.Context(), pool.DialInput{Addr: addr, Kind: pool.RPCRaft, Prover: prover})
		if err == nil {
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = io.ReadAll(conn)
			conn.Close()
			must.NoError(t, err, must.Sprint("the server must close a plaintext raft connection, not leave it open"))
		}

		p := pool.NewPool(pool.Config{Prover: prover, DialTimeout: 5 * time.Second, CallTimeout: 10 * time.Second})
		var peers []string
		err = p.RPC(addr, "Status.Peers", &structs.GenericRequest{}, &peers, 0)
		p.Shutdown()
		must.Error(t, err, must.Sprintf("plaintext Status.Peers with prover %T", prover))
	}

	// Over TLS without a certificate, even the servers' identity (which
	// crossed the network in the bootstrap window) makes no server.
	id, err := sc.Leader().State().ServerIdentity(nil)
	must.NoError(t, err)
	must.NotNil(t, id)
	anon := pool.NewPool(pool.Config{TLS: &tls.Config{InsecureSkipVerify: true}, DialTimeout: 5 * time.Second, Prover: identityProver{id.Secret}})
	defer anon.Shutdown()
	err = anon.RPC(addr, "Eval.Dequeue", &structs.EvalDequeueRequest{Schedulers: []string{"service"}}, &structs.EvalDequeueResponse{}, 0)
	must.ErrorIs(t, err, structs.ErrNodeCertRefused)
}

// identityProver proves the servers' identity, and no bootstrap key.
type identityProver struct{ secret []byte }

func (identityProver) HasServerIdentity() bool       { return true }
func (p identityProver) ServerProof(n []byte) []byte { return pool.ServerProof(p.secret, n) }

// A server's certificate goes only to a caller that proves the gossip
// key: a request under another key is refused, the same request under
// the cluster's key is signed (and verifies against the CAs returned).
func TestServers_AutoTLS_CertNeedsGossipKey(t *testing.T) {
	sc := startAutoTLSServers(t, 3)
	addr := sc.Addr(sc.WaitForLeader())
	anon := pool.NewPool(pool.Config{TLS: &tls.Config{InsecureSkipVerify: true}, DialTimeout: 5 * time.Second})
	defer anon.Shutdown()
	csr, _, err := tlsutil.NewCSR(tlsutil.ServerName("global"))
	must.NoError(t, err)

	wrong, err := nomad.NewServerCertRequest(bytes.Repeat([]byte{8}, 32), "global", csr, time.Now())
	must.NoError(t, err)
	var resp nomad.ServerCertResponse
	err = anon.RPC(addr, "ServerTLS.IssueCert", wrong, &resp, 0)
	must.ErrorIs(t, err, structs.ErrPermissionDenied)
	must.SliceEmpty(t, resp.Chain)

	right, err := nomad.NewServerCertRequest(autoTLSGossipKey, "global", csr, time.Now())
	must.NoError(t, err)
	must.NoError(t, anon.RPC(addr, "ServerTLS.IssueCert", right, &resp, 0))
	cert, err := tlsutil.ParseCert(resp.Chain)
	must.NoError(t, err)
	must.SliceContains(t, cert.DNSNames, tlsutil.ServerName("global"))
}

// A restarted server comes back on the certificate it kept (before its
// log is replayed its state holds no CA) and rejoins: it replicates a
// write made after its return.
func TestServers_AutoTLS_RestartedServerRejoins(t *testing.T) {
	sc := startAutoTLSServers(t, 3)
	i := (sc.WaitForLeader() + 1) % 3
	before := sc.Servers[i].AutoTLSCert()
	sc.Stop(i)
	sc.Restart(i)
	got := sc.Servers[i].AutoTLSCert()
	must.NotNil(t, got, must.Sprint("the restarted server did not load its certificate"))
	must.Eq(t, before.SerialNumber.String(), got.SerialNumber.String())
	writeThroughFollower(t, sc, "after-restart")
	sc.WaitCaughtUp(i)
}

// A CA rotation keeps the servers talking: each reissues its certificate
// from the new CA, and a server cut off during the rotation (it trusts
// only the old CA until its log catches up) still takes the others' new
// certificates, through the cross-signature in their chains, and
// catches up; writes still replicate.
func TestServers_AutoTLS_CARotationKeepsCluster(t *testing.T) {
	sc := startAutoTLSServers(t, 3)
	leaderIdx := sc.WaitForLeader()
	leader := sc.Servers[leaderIdx]
	cut := (leaderIdx + 1) % 3
	old, err := leader.State().ActiveTLSCA(nil)
	must.NoError(t, err)

	sc.Net.Isolate(sc.Addr(cut), fault.Reset)
	var rot structs.TLSCARotateResponse
	must.NoError(t, leader.RPC("Operator.TLSCARotate", &structs.TLSCARotateRequest{}, &rot))
	wait.Poll(t, 20*time.Second, "the leader's certificate of the new CA", func() (bool, string) {
		c := leader.AutoTLSCert()
		return c != nil && c.Issuer.CommonName != caCommonName(t, old), "still " + c.Issuer.CommonName
	})
	ca, err := sc.Servers[cut].State().ActiveTLSCA(nil)
	must.NoError(t, err)
	must.Eq(t, old.ID, ca.ID, must.Sprint("the cut-off server applied the rotation"))
	sc.Net.Heal(sc.Addr(cut))

	waitAutoTLSCerts(t, sc, old.ID)
	writeThroughFollower(t, sc, "after-rotation")
}

// offsetClock is the real clock moved forward by a shared offset: the
// servers' view of time (certificates' lives), not their timers.
type offsetClock struct {
	clock.Clock
	off *atomic.Int64
}

func (c offsetClock) Now() time.Time { return c.Clock.Now().Add(time.Duration(c.off.Load())) }

// Every server down longer than its certificate's life, with no snapshot
// holding the CA, comes back: the certificates they kept have expired and
// their states hold no CA until a leader replays their logs, so they
// reopen the bootstrap window (plaintext proven by the gossip key), elect,
// replay, reissue their certificates and close it again.
func TestServers_AutoTLS_ClusterBackAfterCertsExpired(t *testing.T) {
	var off atomic.Int64
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 3, Server: func(_ int, c *nomad.Config) {
		c.TLS = &tlsutil.Config{Auto: true, Region: c.Region}
		c.SerfEncryptKey = autoTLSGossipKey
		c.Clock = offsetClock{Clock: clock.Real(), off: &off}
	}})
	waitAutoTLSCerts(t, sc, "")
	writeThroughFollower(t, sc, "before-outage")
	for i := range sc.Servers {
		sc.Stop(i)
	}
	off.Store(int64(48 * time.Hour))
	for i := range sc.Servers {
		sc.Restart(i)
	}
	sc.WaitForLeader()
	waitAutoTLSCerts(t, sc, "")
	// Each reissues once it has replayed the CA (at its next handshake or
	// check of autoTLSLoop), not necessarily by the time all hold one.
	wait.Poll(t, 20*time.Second, "every server reissued its expired certificate", func() (bool, string) {
		for i, s := range sc.Servers {
			if c := s.AutoTLSCert(); c == nil || !c.NotAfter.After(time.Now().Add(47*time.Hour)) {
				return false, fmt.Sprintf("server %d still holds its expired certificate", i)
			}
		}
		return true, ""
	})
	writeThroughFollower(t, sc, "after-outage")
}

// A brand-new server added to a running cluster of tls.auto gets in with
// the gossip key alone: no certificate, no CA, no servers' identity. It
// gets its certificate from a peer (ServerTLS.IssueCert over TLS), becomes
// a voter over raft in TLS, holds a certificate of the cluster CA, and
// replicates a write made after it joined; every server still refuses
// plaintext.
func TestServers_AutoTLS_NewServerJoinsRunningCluster(t *testing.T) {
	sc := startAutoTLSServers(t, 3)
	writeThroughFollower(t, sc, "before-join")
	i := sc.Add()
	leader := sc.Servers[sc.WaitForLeader()]
	wait.Poll(t, 30*time.Second, "the new server a voter", func() (bool, string) {
		cfg, _, err := leader.RaftConfiguration()
		if err != nil {
			return false, err.Error()
		}
		for _, srv := range cfg.Servers {
			if string(srv.Address) == sc.Addr(i) && srv.Suffrage == raft.Voter {
				return true, ""
			}
		}
		return false, fmt.Sprint(cfg.Servers)
	})
	waitAutoTLSCerts(t, sc, "")
	sc.WaitCaughtUp(i)
	writeThroughFollower(t, sc, "after-join")
}
