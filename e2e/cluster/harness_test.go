// Package cluster runs production clusters of the real binary: three
// `nomad agent` servers with their state on disk and client agents, each a
// separate process with its own ports, data dir and HCL config file in
// upstream's keys, the way an operator would run them. The tests kill,
// stop and restart those processes and check what survives. Most run on
// loopback and need no root. The partition tests and the chaos run put
// every agent in a network namespace of its own on the harness's fabric
// and make links fail for real; they need root, iproute2 and iptables,
// and skip saying so elsewhere.
package cluster

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/e2e/internal/harness"
	"github.com/nomad-edge/nomad/testutil/wait"
)

func TestMain(m *testing.M) { harness.Main(m) }

// cluster is N servers and M clients of one region.
type cluster struct {
	t       testing.TB
	agents  *harness.Agents
	servers []*harness.Agent
	clients []*harness.Agent
}

// clusterOpts shapes a cluster; zero values are the defaults.
type clusterOpts struct {
	servers, clients int
	// expect returns server i's bootstrap_expect; nil is `servers` for all.
	expect func(i int) int
	// serverExtra is appended to every server's config file.
	serverExtra string
	// upstream runs the servers of the upstream 1.6.5 binary
	// (../shared/tools) instead of ours, for side-by-side benchmarks.
	upstream bool
}

// newCluster writes every agent's config on loopback, with free ports. It
// starts nothing; the harness's cleanup kills every agent and task.
func newCluster(t testing.TB, o clusterOpts) *cluster {
	t.Helper()
	c := &cluster{t: t, agents: harness.NewAgents(t)}
	sp := make([]harness.Ports, o.servers)
	for i := range sp {
		sp[i] = harness.FreePorts(t)
	}
	var rpcs []string
	for _, p := range sp {
		rpcs = append(rpcs, strconv.Quote(fmt.Sprintf("127.0.0.1:%d", p.RPC)))
	}
	for i, p := range sp {
		var join []string
		for j, q := range sp {
			if j != i {
				join = append(join, strconv.Quote(fmt.Sprintf("127.0.0.1:%d", q.Serf)))
			}
		}
		expect := o.servers
		if o.expect != nil {
			expect = o.expect(i)
		}
		name := fmt.Sprintf("server-%d", i+1)
		cfg := harness.AgentConfig{Name: name, Ports: p, Config: serverConfig(name, "127.0.0.1", p, expect, join) + o.serverExtra}
		if o.upstream {
			cfg.Bin = harness.Tool(t, upstreamTool)
			cfg.Config += harness.UpstreamOnLoopback
		}
		c.servers = append(c.servers, c.agents.Add(cfg))
	}
	for i := range o.clients {
		name := fmt.Sprintf("client-%d", i+1)
		p := harness.Ports{HTTP: harness.FreePort(t)}
		c.clients = append(c.clients, c.agents.Add(harness.AgentConfig{
			Name: name, Ports: p, Config: clientConfig(name, "127.0.0.1", p, rpcs),
		}))
	}
	return c
}

func serverConfig(name, bind string, p harness.Ports, expect int, join []string) string {
	return fmt.Sprintf(`name      = %q
data_dir  = "@DATA_DIR@"
bind_addr = %q
log_level = "INFO"

ports {
  http = %d
  rpc  = %d
  serf = %d
}

server {
  enabled          = true
  bootstrap_expect = %d

  # Short node TTLs, so a client's heartbeats to a dead server matter.
  min_heartbeat_ttl = "2s"
  heartbeat_grace   = "2s"

  server_join {
    retry_join     = [%s]
    retry_interval = "1s"
  }
}
`, name, bind, p.HTTP, p.RPC, p.Serf, expect, strings.Join(join, ", "))
}

func clientConfig(name, bind string, p harness.Ports, servers []string) string {
	return fmt.Sprintf(`name      = %q
data_dir  = "@DATA_DIR@"
bind_addr = %q
log_level = "INFO"

ports {
  http = %d
}

client {
  enabled = true
  servers = [%s]
}

plugin "raw_exec" {
  config {
    enabled = true
  }
}
`, name, bind, p.HTTP, strings.Join(servers, ", "))
}

// startServers starts every server and waits until all of them know the
// same leader; it returns how long that took.
func (c *cluster) startServers() time.Duration {
	c.t.Helper()
	start := time.Now()
	for _, s := range c.servers {
		s.Start()
	}
	c.waitLeader(30*time.Second, "")
	return time.Since(start)
}

// waitLeader waits until every running server names the same leader,
// other than notThis, and returns the server that leads.
func (c *cluster) waitLeader(timeout time.Duration, notThis string) *harness.Agent {
	c.t.Helper()
	var leader *harness.Agent
	wait.Poll(c.t, timeout, "every running server agrees on one leader", func() (bool, string) {
		views := map[string]string{}
		agreed := ""
		for _, s := range c.servers {
			s.MustNotHaveDied()
			if !s.Running() {
				continue
			}
			l := s.Leader()
			views[s.Name] = l
			if l == "" || l == notThis || (agreed != "" && l != agreed) {
				return false, fmt.Sprintf("leader views: %v", views)
			}
			agreed = l
		}
		leader = c.serverByRPC(agreed)
		return leader != nil && leader.Running(), fmt.Sprintf("leader views: %v", views)
	})
	return leader
}

// waitVoters waits until the leader's raft configuration holds exactly
// every server of the cluster, each a voter, and one of them
// leader: a restarted server is then back in the cluster, not merely up.
func (c *cluster) waitVoters(timeout time.Duration) {
	c.t.Helper()
	want := map[string]bool{}
	for _, s := range c.servers {
		want[s.RPCAddr()] = true
	}
	wait.Poll(c.t, timeout, "every server a voter in the raft configuration", func() (bool, string) {
		cfg, err := c.anyServer().API().Operator().RaftGetConfiguration(nil)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		voters, leaders := 0, 0
		for _, srv := range cfg.Servers {
			seen = append(seen, fmt.Sprintf("%s voter=%v leader=%v", srv.Address, srv.Voter, srv.Leader))
			if want[srv.Address] && srv.Voter {
				voters++
			}
			if srv.Leader {
				leaders++
			}
		}
		return voters == len(want) && len(cfg.Servers) == len(want) && leaders == 1, strings.Join(seen, "; ")
	})
}

func (c *cluster) serverByRPC(addr string) *harness.Agent {
	for _, s := range c.servers {
		if s.RPCAddr() == addr {
			return s
		}
	}
	return nil
}

// anyServer is a running server. Tests read through it without stale, as
// a user does: the read is forwarded to the leader. (A stale read of a
// follower just restarted lags until the new leader's first commit
// reaches it: raft re-applies a restarted server's log only then.)
func (c *cluster) anyServer() *harness.Agent {
	for _, s := range c.servers {
		if s.Running() {
			return s
		}
	}
	c.t.Fatal("no server is running")
	return nil
}

// startClients starts every client and waits until all their nodes are
// ready.
func (c *cluster) startClients() {
	c.t.Helper()
	for _, cl := range c.clients {
		cl.Start()
	}
	wait.Poll(c.t, 30*time.Second, "every client's node ready", func() (bool, string) {
		for _, cl := range c.clients {
			cl.MustNotHaveDied()
		}
		nodes, _, err := c.anyServer().API().Nodes().List(nil)
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		var seen []string
		for _, n := range nodes {
			seen = append(seen, n.Name+"="+n.Status)
			if n.Status == "ready" {
				ready++
			}
		}
		return ready == len(c.clients), strings.Join(seen, ", ")
	})
}

// netCluster is a cluster of agents, each in its own namespace on a
// fabric, with upstream-style config files and short heartbeats
// (min_heartbeat_ttl 2s, heartbeat_grace 1s).
type netCluster struct {
	*cluster
	fab *harness.Fabric
}

// newNetCluster writes the configs of `servers` servers and `clients`
// clients on a new fabric. Servers are 10.X.Y.10+, clients 10.X.Y.20+;
// every agent uses upstream's default ports. It starts nothing.
func newNetCluster(t testing.TB, servers, clients int) *netCluster {
	t.Helper()
	return newNetClusterWith(t, servers, clients, "")
}

// newNetClusterWith is newNetCluster with serverSettings added to each
// server's server block.
func newNetClusterWith(t testing.TB, servers, clients int, serverSettings string) *netCluster {
	t.Helper()
	// First: its teardown runs after the agents die.
	fab := harness.NewFabric(t, harness.LinkDown, harness.SilentDrop, harness.Degraded)
	c := &cluster{t: t, agents: harness.NewAgents(t)}
	p := harness.Ports{HTTP: 4646, RPC: 4647, Serf: 4648}
	var sms []*harness.Member
	var rpcs []string
	for i := range servers {
		m := fab.Add(fmt.Sprintf("server-%d", i+1), 10+i)
		sms = append(sms, m)
		rpcs = append(rpcs, strconv.Quote(fmt.Sprintf("%s:%d", m.IP, p.RPC)))
	}
	for i, m := range sms {
		var join []string
		for j, o := range sms {
			if j != i {
				join = append(join, strconv.Quote(fmt.Sprintf("%s:%d", o.IP, p.Serf)))
			}
		}
		cfg := strings.Replace(serverConfig(m.Name, m.IP, p, servers, join),
			`heartbeat_grace   = "2s"`, `heartbeat_grace   = "1s"`+serverSettings, 1)
		c.servers = append(c.servers, c.agents.Add(harness.AgentConfig{Name: m.Name, Ports: p, IP: m.IP, Netns: m.NS, Config: cfg}))
	}
	for i := range clients {
		m := fab.Add(fmt.Sprintf("client-%d", i+1), 20+i)
		cp := harness.Ports{HTTP: p.HTTP}
		c.clients = append(c.clients, c.agents.Add(harness.AgentConfig{
			Name: m.Name, Ports: cp, IP: m.IP, Netns: m.NS, Config: clientConfig(m.Name, m.IP, cp, rpcs),
		}))
	}
	return &netCluster{cluster: c, fab: fab}
}

// settle is how long the fabric tests give the servers to notice a cut:
// the TTL plus grace with room for a heartbeat interval in flight.
const settle = 30 * time.Second
