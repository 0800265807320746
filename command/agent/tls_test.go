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

func tlsBlock(p tlstest.Pair) *agent.TLSConfig {
	return &agent.TLSConfig{
		EnableHTTP: true, EnableRPC: true, VerifyServerHostname: true, VerifyHTTPSClient: true,
		CAFile: p.CAFile, CertFile: p.CertFile, KeyFile: p.KeyFile,
	}
}

// The official Go client drives an agent with tls.http and
// verify_https_client when given its TLSConfig: integrators who secured
// upstream agents this way keep working. Without a client certificate,
// over plain HTTP or trusting another CA, it cannot talk to the agent.
func TestAgent_TLS_OfficialClient(t *testing.T) {
	ca := tlstest.NewCA(t)
	server := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	cli := ca.Issue(t, tlsutil.RoleCLI, "global", tlstest.Options{})
	a := agenttest.NewDevAgent(t, func(c *agent.Config) { c.TLSConfig = tlsBlock(server) })
	must.StrHasPrefix(t, "https://", a.HTTPAddr)

	c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr, TLSConfig: &nomadapi.TLSConfig{
		CACert: ca.CAFile, ClientCert: cli.CertFile, ClientKey: cli.KeyFile,
	}})
	must.NoError(t, err)
	job := mockJob("tls-job", "mock_driver", map[string]any{"run_for": "5m"})
	_, _, err = c.Jobs().Register(job, nil)
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the job running, seen over HTTPS", func() (bool, string) {
		allocs, _, err := c.Jobs().Allocations("tls-job", false, nil)
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

	for name, tc := range map[string]*nomadapi.TLSConfig{
		"no client certificate": {CACert: ca.CAFile},
		"another CA":            {CACert: tlstest.NewCA(t).CAFile, ClientCert: cli.CertFile, ClientKey: cli.KeyFile},
	} {
		c, err := nomadapi.NewClient(&nomadapi.Config{Address: a.HTTPAddr, TLSConfig: tc})
		must.NoError(t, err)
		_, err = c.Status().Leader()
		must.Error(t, err, must.Sprint(name))
	}
	plain, err := nomadapi.NewClient(&nomadapi.Config{Address: "http://" + a.Agent.HTTPAddr().String()})
	must.NoError(t, err)
	_, err = plain.Status().Leader()
	must.Error(t, err)
}

// A client-only agent with a client certificate reaches TLS servers over
// RPC with verify_server_hostname and registers its node.
func TestAgent_TLS_ClientOnlyAgent(t *testing.T) {
	ca := tlstest.NewCA(t)
	server := ca.Issue(t, tlsutil.RoleServer, "global", tlstest.Options{})
	client := ca.Issue(t, tlsutil.RoleClient, "global", tlstest.Options{})
	dev := agenttest.NewDevAgent(t, func(c *agent.Config) { c.TLSConfig = tlsBlock(server) })

	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	cfg.NodeName = "edge-tls"
	cfg.Client.Enabled = true
	cfg.Client.Servers = []string{dev.Server().RPCAddr().String()}
	cfg.TLSConfig = tlsBlock(client)
	a, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })
	select {
	case <-a.Client().Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the client-only agent did not register over TLS within 30s")
	}
	node, err := dev.Server().State().NodeByID(nil, a.Client().NodeID())
	must.NoError(t, err)
	must.NotNil(t, node)
}
