package agent_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/testutil/wait"

	"github.com/hashicorp/go-hclog"
	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

// clientOnlyConfig is the configuration of a client-only agent named
// name that joins dev's server, on loopback with ports of its own.
func clientOnlyConfig(t *testing.T, name string, dev *agenttest.Agent) *agent.Config {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	cfg.NodeName = name
	cfg.Client.Enabled = true
	cfg.Client.Servers = []string{dev.Server().RPCAddr().String()}
	return cfg
}

// clientOnlyAgent starts a client-only agent from clientOnlyConfig, as
// configure changes it (nil: as it is), and waits for its node to
// register; it is shut down at the end of the test.
func clientOnlyAgent(t *testing.T, name string, dev *agenttest.Agent, configure func(*agent.Config)) *agent.Agent {
	t.Helper()
	cfg := clientOnlyConfig(t, name, dev)
	if configure != nil {
		configure(cfg)
	}
	a, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })
	select {
	case <-a.Client().Ready():
	case <-time.After(30 * time.Second):
		t.Fatalf("the client-only agent %s did not register within 30s", name)
	}
	return a
}

// A client-only agent joins remote servers over the network (msgpack RPC
// over yamux on the servers' RPC port): its node registers, work is placed
// on it, and its HTTP API answers by asking the servers.
func TestAgent_ClientOnlyJoinsRemoteServers(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	a := clientOnlyAgent(t, "edge-1", dev, nil)
	must.Nil(t, a.Server())

	c, err := nomadapi.NewClient(&nomadapi.Config{Address: "http://" + a.HTTPAddr().String()})
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "both nodes ready, seen through the client-only agent's API", func() (bool, string) {
		nodes, _, err := c.Nodes().List(nil)
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, n := range nodes {
			if n.Status == "ready" {
				ready++
			}
		}
		return ready == 2, fmt.Sprintf("%d nodes, %d ready", len(nodes), ready)
	})

	job := mockJob("edge-job", "mock_driver", map[string]any{"run_for": "5m"})
	job.Constrain(nomadapi.NewConstraint("${node.unique.name}", "=", "edge-1"))
	_, _, err = c.Jobs().Register(job, nil)
	must.NoError(t, err)
	wait.Poll(t, 30*time.Second, "the job running on the networked client", func() (bool, string) {
		allocs, _, err := c.Jobs().Allocations("edge-job", false, nil)
		if err != nil {
			return false, err.Error()
		}
		return len(allocs) == 1 && allocs[0].ClientStatus == "running" && allocs[0].NodeID == a.Client().NodeID(),
			describeStubs(allocs)
	})
}

// A client-only agent without servers to reach is refused at start with a
// message saying what to set.
func TestAgent_ClientOnlyNeedsServers(t *testing.T) {
	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	cfg.Client.Enabled = true
	_, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.ErrorContains(t, err, "client { servers")
}

// A client-only agent serves the event stream too, by polling the
// servers: operators point NOMAD_ADDR at their local agent, and the
// official client's EventStream().Stream must work there as on a server.
func TestAgent_ClientOnlyEventStream(t *testing.T) {
	dev := agenttest.NewDevAgent(t, nil)
	cfg := agent.DefaultConfig()
	cfg.BindAddr = "127.0.0.1"
	cfg.Ports.HTTP, cfg.Ports.RPC = 0, 0
	cfg.DataDir = t.TempDir()
	cfg.Client.Enabled = true
	cfg.Client.Servers = []string{dev.Server().RPCAddr().String()}
	a, err := agent.NewAgent(cfg, hclog.NewNullLogger())
	must.NoError(t, err)
	t.Cleanup(func() { _ = a.Shutdown() })

	c, err := nomadapi.NewClient(&nomadapi.Config{Address: "http://" + a.HTTPAddr().String()})
	must.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := c.EventStream().Stream(ctx, map[nomadapi.Topic][]string{nomadapi.TopicJob: {"polled"}}, 0, nil)
	must.NoError(t, err)
	resp, _, err := c.Jobs().Register(mockJob("polled", "mock_driver", map[string]any{"run_for": "5m"}), nil)
	must.NoError(t, err)
	ev := nextEvents(t, ch)
	must.Eq(t, "JobRegistered", ev.Events[0].Type)
	must.Eq(t, resp.JobModifyIndex, ev.Index)

	// A resumed stream replays from the index it names, as on a server.
	again, err := c.EventStream().Stream(ctx, map[nomadapi.Topic][]string{nomadapi.TopicJob: {"polled"}}, ev.Index, nil)
	must.NoError(t, err)
	must.Eq(t, ev.Index, nextEvents(t, again).Index)

	_, err = c.EventStream().Stream(ctx, map[nomadapi.Topic][]string{"Jobs": nil}, 0, nil)
	must.ErrorContains(t, err, "400")
}
