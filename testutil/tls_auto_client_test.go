package testutil_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// startAutoTLSClient starts a client of tls.auto on dir against sc, with
// token as its introduction token (none when empty), as the agent would:
// its pool dials with the node's credentials.
func startAutoTLSClient(t *testing.T, sc *testutil.Servers, dir, token string) (*client.Client, *client.AutoTLS) {
	t.Helper()
	creds, err := client.LoadAutoTLS(client.AutoTLSConfig{StateDir: dir, IntroToken: token})
	must.NoError(t, err)
	remote, err := client.NewServerRPCWithPool([]string{sc.Addr(0)}, pool.Config{TLS: creds.ClientTLS(), Credentials: creds})
	must.NoError(t, err)
	cl, err := client.NewClient(&client.Config{RPCHandler: remote, StateDir: dir, AllocDir: dir + "/alloc", NodeName: "edge-1", IntroToken: token, AutoTLS: creds})
	must.NoError(t, err)
	t.Cleanup(func() { _ = cl.Destroy(); remote.Shutdown() })
	return cl, creds
}

// A new node joins servers of tls.auto with nothing but an introduction
// token: it checks the servers by the CA fingerprint the token carries,
// registers without a certificate, gets its first one (kept under
// <state_dir>/tls, its key never sent), renews it at half its life and
// keeps heartbeating on each; restarted without its token, it comes back
// on the certificate it kept. A node with no token and no CA refuses the
// servers' certificate, and a token of servers without tls.auto names no
// CA to trust.
func TestServers_AutoTLS_NewNodeJoinsAndRenews(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 1, Server: func(_ int, c *nomad.Config) {
		// Life = TTL plus a minute each side (nodeCertInput): half of it
		// is five seconds from the issue.
		c.TLS = &tlsutil.Config{Auto: true, Region: c.Region, AutoCertTTL: 70 * time.Second}
		c.SerfEncryptKey = autoTLSGossipKey
	}})
	leader := sc.Leader()
	wait.Poll(t, 10*time.Second, "the cluster CA", func() (bool, string) {
		ca, err := leader.State().ActiveTLSCA(nil)
		return err == nil && ca != nil, "none yet"
	})
	var tok structs.ClientIntroductionTokenResponse
	must.NoError(t, leader.RPC("ACL.CreateClientIntroductionToken", &structs.ClientIntroductionTokenRequest{NodeName: "edge-1", TTL: 10 * time.Minute}, &tok))

	dir := t.TempDir()
	cl, creds := startAutoTLSClient(t, sc, dir, tok.JWT)
	select {
	case <-cl.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("a new node with an introduction token did not join")
	}
	for _, f := range []string{"node.pem", "node-key.pem", "ca.pem"} {
		fi, err := os.Stat(filepath.Join(dir, "tls", f))
		must.NoError(t, err)
		must.Eq(t, os.FileMode(0o600), fi.Mode().Perm(), must.Sprint(f))
	}
	first := creds.Generation()
	must.Positive(t, first)

	// Renewed at half its life, heartbeats going on over it.
	wait.Poll(t, 30*time.Second, "a renewal", func() (bool, string) {
		n, err := leader.State().NodeByID(nil, cl.NodeID())
		if err != nil || n == nil {
			return false, "node not found"
		}
		return creds.Generation() > first && n.Status == structs.NodeStatusReady, fmt.Sprintf("generation %d, node %s", creds.Generation(), n.Status)
	})
	hb := cl.LastHeartbeat()
	wait.Poll(t, 20*time.Second, "a heartbeat after the renewal", func() (bool, string) {
		return cl.LastHeartbeat().After(hb), "last " + cl.LastHeartbeat().String()
	})

	// Restarted on its state dir, without the token: its certificate
	// is its proof.
	nodeID := cl.NodeID()
	must.NoError(t, cl.Shutdown())
	again, _ := startAutoTLSClient(t, sc, dir, "")
	select {
	case <-again.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the node did not come back on the certificate it kept")
	}
	must.Eq(t, nodeID, again.NodeID())

	// A stranger holds no CA and no token: it refuses the servers.
	stranger, err := client.LoadAutoTLS(client.AutoTLSConfig{StateDir: t.TempDir()})
	must.NoError(t, err)
	_, err = pool.Dial(t.Context(), pool.DialInput{Addr: sc.Addr(0), TLS: stranger.ClientTLS(), Kind: pool.RPCMultiplex})
	must.ErrorContains(t, err, "holds no CA and no introduction token")
}
