package testutil_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil"
)

// startIntroClient starts a client against sc whose state dir holds
// token as intro_token.jwt (none when empty) and returns it.
func startIntroClient(t *testing.T, sc *testutil.Servers, name, token string) *client.Client {
	t.Helper()
	remote, err := client.NewServerRPCWithPool([]string{sc.Addr(0)}, pool.Config{})
	must.NoError(t, err)
	t.Cleanup(remote.Shutdown)
	dir := t.TempDir()
	if token != "" {
		must.NoError(t, os.WriteFile(filepath.Join(dir, client.IntroTokenFile), []byte(token+"\n"), 0o600))
	}
	cl, err := client.NewClient(&client.Config{RPCHandler: remote, StateDir: dir, AllocDir: dir + "/alloc", NodeName: name})
	must.NoError(t, err)
	t.Cleanup(func() { _ = cl.Destroy() })
	return cl
}

// Under enforcement "strict", a real client without an introduction
// token is not registered, and one with a token in
// <state_dir>/intro_token.jwt (from ACL.CreateClientIntroductionToken, as
// `nomad node intro create` asks for it) is: the whole path from the
// token file to the node in the servers' state.
func TestServers_NodeIntro_StrictClientJoinsWithTokenFile(t *testing.T) {
	sc := testutil.StartServers(t, testutil.ServersConfig{N: 1, Server: func(_ int, c *nomad.Config) {
		c.ClientIntroduction.Enforcement = structs.IntroEnforcementStrict
	}})
	leader := sc.Leader()

	stranger := startIntroClient(t, sc, "stranger", "")
	select {
	case <-stranger.Ready():
		t.Fatal("a client without an introduction token was registered under strict enforcement")
	case <-time.After(2 * time.Second):
	}
	n, err := leader.State().NodeByID(nil, stranger.NodeID())
	must.NoError(t, err)
	must.Nil(t, n)

	var resp structs.ClientIntroductionTokenResponse
	must.NoError(t, leader.RPC("ACL.CreateClientIntroductionToken", &structs.ClientIntroductionTokenRequest{NodeName: "edge-1"}, &resp))
	cl := startIntroClient(t, sc, "edge-1", resp.JWT)
	select {
	case <-cl.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("a client with a valid introduction token was not registered")
	}
	n, err = leader.State().NodeByID(nil, cl.NodeID())
	must.NoError(t, err)
	must.NotNil(t, n)
}
