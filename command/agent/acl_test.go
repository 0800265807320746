package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/hashicorp/go-hclog"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/helper/tlsutil/tlstest"
)

// A cluster with tls and acl enabled works end to end through the
// official Go client: bootstrap once, a read-only token reads but cannot
// write, an anonymous caller gets 403, a management token runs a job, and
// a client-only agent registers over mutual TLS and forwards the caller's
// token to the servers. This is how an operator secures upstream Nomad;
// their tooling must keep working unchanged.
func TestAgent_TLS_ACL_EndToEnd(t *testing.T) {
	ca := tlstest.NewCA(t)
	server := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	clientPair := ca.Issue(t, tlsutil.RoleClient, "global", tlstest.Options{})
	cli := ca.Issue(t, tlsutil.RoleCLI, "global", tlstest.Options{})
	dev := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.TLSConfig = tlsBlock(server)
		c.ACL = &agent.ACLConfig{Enabled: true}
	})
	apiTLS := &nomadapi.TLSConfig{CACert: ca.CAFile, ClientCert: cli.CertFile, ClientKey: cli.KeyFile}
	newClient := func(addr, secret string) *nomadapi.Client {
		c, err := nomadapi.NewClient(&nomadapi.Config{Address: addr, SecretID: secret, TLSConfig: apiTLS})
		must.NoError(t, err)
		return c
	}
	anon := newClient(dev.HTTPAddr, "")

	mgmtTok, _, err := anon.ACLTokens().Bootstrap(nil)
	must.NoError(t, err)
	must.Eq(t, "management", mgmtTok.Type)
	must.NotEq(t, "", mgmtTok.SecretID)
	_, _, err = anon.ACLTokens().Bootstrap(nil)
	must.ErrorContains(t, err, "ACL bootstrap already done")

	_, _, err = anon.Jobs().List(nil)
	must.ErrorContains(t, err, "403")
	must.ErrorContains(t, err, "no ACL token given")
	_, err = anon.Agent().Self()
	must.ErrorContains(t, err, "403")

	// Header only: a secret in the URL would end up in access logs.
	_, _, err = anon.Jobs().List(&nomadapi.QueryOptions{Params: map[string]string{"token": mgmtTok.SecretID}})
	must.ErrorContains(t, err, "403")

	mgmt := newClient(dev.HTTPAddr, mgmtTok.SecretID)
	_, err = mgmt.ACLPolicies().Upsert(&nomadapi.ACLPolicy{
		Name: "readonly", Description: "read jobs", Rules: `namespace "default" { policy = "read" }`,
	}, nil)
	must.NoError(t, err)
	_, err = mgmt.ACLPolicies().Upsert(&nomadapi.ACLPolicy{Name: "broken", Rules: `namespace "default" { polcy = "read" }`}, nil)
	must.ErrorContains(t, err, "broken:1:")
	readTok, _, err := mgmt.ACLTokens().Create(&nomadapi.ACLToken{Name: "ci", Type: "client", Policies: []string{"readonly"}}, nil)
	must.NoError(t, err)

	job := mockJob("acl-job", "mock_driver", map[string]any{"run_for": "5m"})
	reader := newClient(dev.HTTPAddr, readTok.SecretID)
	_, _, err = reader.Jobs().Register(job, nil)
	must.ErrorContains(t, err, "403")
	must.ErrorContains(t, err, "submit-job")
	_, _, err = mgmt.Jobs().Register(job, nil)
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the job running, seen with a read-only token", func() (bool, string) {
		allocs, _, err := reader.Jobs().Allocations("acl-job", false, nil)
		if err != nil {
			return false, err.Error()
		}
		for _, al := range allocs {
			if al.ClientStatus == "running" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d allocations, none running", len(allocs))
	})

	self, _, err := reader.ACLTokens().Self(nil)
	must.NoError(t, err)
	must.Eq(t, readTok.AccessorID, self.AccessorID)
	_, _, err = reader.ACLTokens().List(nil)
	must.ErrorContains(t, err, "403")
	tokens, _, err := mgmt.ACLTokens().List(nil)
	must.NoError(t, err)
	must.Len(t, 2, tokens)
	policies, _, err := mgmt.ACLPolicies().List(nil)
	must.NoError(t, err)
	must.Len(t, 1, policies)
	must.Eq(t, "readonly", policies[0].Name)

	// A client-only agent: its node RPCs use the node secret over mTLS,
	// and its HTTP API carries the caller's token to the servers.
	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	cfg.NodeName = "edge-acl"
	cfg.Client.Enabled = true
	cfg.Client.Servers = []string{dev.Server().RPCAddr().String()}
	cfg.TLSConfig = tlsBlock(clientPair)
	cfg.ACL = &agent.ACLConfig{Enabled: true}
	edge, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = edge.Shutdown() })
	select {
	case <-edge.Client().Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the client-only agent did not register over TLS with ACLs within 30s")
	}
	edgeAddr := "https://" + edge.HTTPAddr().String()
	jobs, _, err := newClient(edgeAddr, readTok.SecretID).Jobs().List(nil)
	must.NoError(t, err)
	must.Len(t, 1, jobs)
	_, _, err = newClient(edgeAddr, readTok.SecretID).Nodes().List(nil)
	must.ErrorContains(t, err, "node read")
	nodes, _, err := newClient(edgeAddr, mgmtTok.SecretID).Nodes().List(nil)
	must.NoError(t, err)
	must.Len(t, 2, nodes)

	_, err = mgmt.ACLTokens().Delete(readTok.AccessorID, nil)
	must.NoError(t, err)
	_, _, err = reader.Jobs().List(nil)
	must.ErrorContains(t, err, "ACL token not found")
}

// Upstream's token details through the official client: ExpirationTTL
// gives a token its ExpirationTime (a TTL under upstream's minimum is a
// 400 naming it), the bootstrap takes the operator's BootstrapSecret, and
// a one-time token made with a token is exchanged once, without
// credentials, for that token. Expiry itself: TestACL_TokenExpiration and
// TestACL_OneTimeTokens.
func TestHTTP_ACLTokenUpstreamFields(t *testing.T) {
	dev := agenttest.NewDevAgent(t, func(c *agent.Config) { c.ACL = &agent.ACLConfig{Enabled: true} })
	anon := officialClient(t, dev)

	secret := "8d3f2a4e-61c5-4c1b-9a7e-2f6b0c9d1e42"
	_, _, err := anon.ACLTokens().BootstrapOpts("not-a-uuid", nil)
	must.ErrorContains(t, err, "BootstrapSecret")
	boot, _, err := anon.ACLTokens().BootstrapOpts(secret, nil)
	must.NoError(t, err)
	must.Eq(t, secret, boot.SecretID)

	mgmt, err := nomadapi.NewClient(&nomadapi.Config{Address: dev.HTTPAddr, SecretID: secret})
	must.NoError(t, err)
	before := time.Now()
	tok, _, err := mgmt.ACLTokens().Create(&nomadapi.ACLToken{Name: "ci", Type: "management", ExpirationTTL: 10 * time.Minute}, nil)
	must.NoError(t, err)
	must.NotNil(t, tok.ExpirationTime)
	must.Eq(t, 10*time.Minute, tok.ExpirationTTL)
	must.False(t, tok.ExpirationTime.Before(before.Add(10*time.Minute-time.Second)))
	must.False(t, tok.ExpirationTime.After(time.Now().Add(10*time.Minute+time.Second)))
	read, _, err := mgmt.ACLTokens().Info(tok.AccessorID, nil)
	must.NoError(t, err)
	must.Eq(t, tok.ExpirationTime.UTC(), read.ExpirationTime.UTC())
	list, _, err := mgmt.ACLTokens().List(nil)
	must.NoError(t, err)
	var listed *nomadapi.ACLTokenListStub
	for _, l := range list {
		if l.AccessorID == tok.AccessorID {
			listed = l
		}
	}
	must.NotNil(t, listed)
	must.NotNil(t, listed.ExpirationTime)

	_, _, err = mgmt.ACLTokens().Create(&nomadapi.ACLToken{Name: "brief", Type: "management", ExpirationTTL: 30 * time.Second}, nil)
	code, body := statusOf(t, err)
	must.Eq(t, 400, code)
	must.StrContains(t, body, "expiration time cannot be less than 1m0s")

	ott, _, err := mgmt.ACLTokens().UpsertOneTimeToken(nil)
	must.NoError(t, err)
	must.Eq(t, boot.AccessorID, ott.AccessorID)
	must.NotNil(t, ott.ExpiresAt)
	got, _, err := anon.ACLTokens().ExchangeOneTimeToken(ott.OneTimeSecretID, nil)
	must.NoError(t, err)
	must.Eq(t, secret, got.SecretID)
	_, _, err = anon.ACLTokens().ExchangeOneTimeToken(ott.OneTimeSecretID, nil)
	code, body = statusOf(t, err)
	must.Eq(t, 403, code)
	must.StrContains(t, body, "one-time token not found or expired")
	_, _, err = anon.ACLTokens().UpsertOneTimeToken(nil)
	code, _ = statusOf(t, err)
	must.Eq(t, 403, code)
}
