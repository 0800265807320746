package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// edgeCluster is a server-only dev agent and a client-only agent that
// dialled it, the client's own HTTP API closed: everything the test
// reaches on the node goes through the session the node opened.
type edgeCluster struct {
	server *agenttest.Agent
	edge   *agent.Agent
	api    *nomadapi.Client
}

func newEdgeCluster(t *testing.T, configure func(*agent.Config)) *edgeCluster {
	t.Helper()
	srv := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Client.Enabled = false
		if configure != nil {
			configure(c)
		}
	})
	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	cfg.NodeName = "edge-nat"
	cfg.Client.Enabled = true
	cfg.Client.Servers = []string{srv.Server().RPCAddr().String()}
	cfg.Plugins = []*agent.PluginConfig{{Name: "raw_exec", Config: map[string]any{"enabled": true}}}
	if configure != nil {
		configure(cfg)
	}
	edge, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = edge.Client().Destroy(); _ = edge.Shutdown() })
	select {
	case <-edge.Client().Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the edge client did not register within 30s")
	}
	edge.CloseHTTPForTest()
	c, err := nomadapi.NewClient(&nomadapi.Config{Address: srv.HTTPAddr})
	must.NoError(t, err)
	agenttest.WaitFor(t, 30*time.Second, "the edge node's session on the server", func() (bool, string) {
		return srv.Server().HasNodeConn(edge.Client().NodeID()), "no session yet"
	})
	return &edgeCluster{server: srv, edge: edge, api: c}
}

// runRaw runs a one-task raw_exec job on the edge node and returns its
// allocation once the task runs.
func (ec *edgeCluster) runRaw(t *testing.T, id, script string) *nomadapi.Allocation {
	t.Helper()
	job := mockJob(id, "raw_exec", map[string]any{"command": "/bin/sh", "args": []string{"-c", script}})
	_, _, err := ec.api.Jobs().Register(job, nil)
	must.NoError(t, err)
	var allocID string
	agenttest.WaitFor(t, 30*time.Second, "the task running on the edge node", func() (bool, string) {
		allocs, _, err := ec.api.Jobs().Allocations(id, false, nil)
		if err != nil {
			return false, err.Error()
		}
		if len(allocs) != 1 || allocs[0].ClientStatus != "running" {
			return false, describeStubs(allocs)
		}
		allocID = allocs[0].ID
		return true, ""
	})
	alloc, _, err := ec.api.Allocations().Info(allocID, nil)
	must.NoError(t, err)
	return alloc
}

// `alloc logs -f` must work for a node behind NAT: the servers cannot
// dial it (its HTTP API is closed here), so the log streams through the
// session the node opened to the server.
func TestClientAPI_FollowLogsThroughNodeSession(t *testing.T) {
	ec := newEdgeCluster(t, nil)
	alloc := ec.runRaw(t, "nat-logs", `i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.1; done`)

	cancel := make(chan struct{})
	defer close(cancel)
	frames, errs := ec.api.AllocFS().Logs(alloc, true, "web", "stdout", "start", 0, cancel, nil)
	var got bytes.Buffer
	deadline := time.After(30 * time.Second)
	for !strings.Contains(got.String(), "tick 5\n") {
		select {
		case f := <-frames:
			if f != nil {
				got.Write(f.Data)
			}
		case err := <-errs:
			t.Fatalf("log stream failed after %q: %v", got.String(), err)
		case <-deadline:
			t.Fatalf("log stream did not reach tick 5 in 30s; got %q", got.String())
		}
	}
	must.StrHasPrefix(t, "tick 0\ntick 1\n", got.String())
}

var _ = fmt.Sprint
var _ = context.Background
