package testutil

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/nomad"
)

// Ports every in-memory server uses; hosts differ by IP.
const (
	MemRPCPort  = 4647
	MemSerfPort = 4648
)

// MemClusterConfig shapes an in-memory cluster.
type MemClusterConfig struct {
	// Servers is the number of servers, each with bootstrap_expect =
	// Servers; Clients the number of client agents.
	Servers int
	Clients int
	// Server and Client adjust each agent's config. The defaults are
	// upstream's (heartbeat TTLs, raft timeouts, gossip intervals): fake
	// time makes them free.
	Server func(i int, c *nomad.Config)
	Client func(i int, c *client.Config)
	// LogLevel for every agent; NOMAD_TEST_LOG_LEVEL or "off" by default
	// (raft logs every failed send to a partitioned peer at ERROR).
	LogLevel string
}

// MemCluster is servers and clients in one test process on a MemNet:
// server↔server raft, forwarded RPCs and gossip, and client↔server RPC
// all cross it, so any host can be isolated. It must be made inside
// synctest.Test, and runs on the bubble's fake time: minutes of
// heartbeats, election timeouts and disconnect windows take milliseconds.
//
// Each client reaches the servers through its own ServerRPC over the
// network, wrapped in a FaultableRPC (Links[i]) for faults of that one
// link; Net.Isolate(ClientHost(i), mode) cuts the client's host instead.
type MemCluster struct {
	t       testing.TB
	cfg     MemClusterConfig
	logger  hclog.Logger
	Net     *MemNet
	Servers []*nomad.Server
	Clients []*client.Client
	Links   []*FaultableRPC
}

// ServerHost is server i's IP on the MemNet.
func ServerHost(i int) string { return fmt.Sprintf("10.0.0.%d", i+1) }

// ClientHost is client i's IP on the MemNet.
func ClientHost(i int) string { return fmt.Sprintf("10.0.1.%d", i+1) }

// NewMemCluster starts the servers, joins their gossip pool, waits for a
// leader, then starts the clients and waits until each is registered.
// Everything stops, and every goroutine it started ends, when the test
// (the synctest bubble's) cleanups run.
func NewMemCluster(t *testing.T, cfg MemClusterConfig) *MemCluster {
	t.Helper()
	level := cfg.LogLevel
	if level == "" {
		level = os.Getenv("NOMAD_TEST_LOG_LEVEL")
	}
	if level == "" {
		level = "off"
	}
	c := &MemCluster{
		t: t, cfg: cfg, Net: NewMemNet(),
		logger:  hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.LevelFromString(level)}),
		Servers: make([]*nomad.Server, cfg.Servers),
	}
	// Cleanups run last-registered first: clients go before the servers,
	// and the network, closing whatever connections remain, goes last.
	t.Cleanup(c.drain)
	t.Cleanup(func() {
		for _, s := range c.Servers {
			if s != nil {
				_ = s.Shutdown()
			}
		}
	})
	for i := range cfg.Servers {
		c.startServer(i)
	}
	for i := 1; i < cfg.Servers; i++ {
		if _, err := c.Servers[i].Join([]string{c.Servers[0].SerfAddr()}); err != nil {
			t.Fatalf("server %d joining server 0: %v", i, err)
		}
	}
	c.WaitForLeader()
	for i := range cfg.Clients {
		c.startClient(i)
	}
	for i, cl := range c.Clients {
		select {
		case <-cl.Ready():
		case <-time.After(time.Minute):
			t.Fatalf("client %d not registered after a minute of fake time", i)
		}
	}
	return c
}

// drainTime is how much fake time the harness lets pass after shutdown.
// A bubble's clock stops when its test function returns, and goroutines
// still waiting on a timer then are a deadlock: memberlist's probe
// goroutine, for one, outlives Shutdown until its ack timer (a probe
// interval) fires.
const drainTime = time.Minute

// drain closes the network and lets the stragglers' timers run out.
func (c *MemCluster) drain() {
	c.Net.Close()
	time.Sleep(drainTime)
	synctest.Wait()
}

func (c *MemCluster) startServer(i int) {
	c.t.Helper()
	host := ServerHost(i)
	l, err := c.Net.Listen(net.JoinHostPort(host, fmt.Sprint(MemRPCPort)))
	if err != nil {
		c.t.Fatalf("server %d: %v", i, err)
	}
	gossip, err := c.Net.GossipTransport(net.JoinHostPort(host, fmt.Sprint(MemSerfPort)))
	if err != nil {
		c.t.Fatalf("server %d: %v", i, err)
	}
	sc := nomad.DefaultConfig()
	sc.Logger = c.logger.Named(fmt.Sprintf("server-%d", i))
	sc.NodeName = fmt.Sprintf("server-%d", i)
	sc.BootstrapExpect = c.cfg.Servers
	sc.InMemory = true
	sc.RPCListener = l
	sc.SerfTransport = gossip
	sc.Dialer = c.Net.Dialer(host)
	sc.NumSchedulers = 1
	if c.cfg.Server != nil {
		c.cfg.Server(i, sc)
	}
	s, err := nomad.NewServer(sc)
	if err != nil {
		c.t.Fatalf("starting server %d: %v", i, err)
	}
	c.Servers[i] = s
}

func (c *MemCluster) startClient(i int) {
	c.t.Helper()
	var addrs []string
	for j := range c.Servers {
		addrs = append(addrs, c.ServerAddr(j))
	}
	remote, err := client.NewServerRPC(addrs, c.Net.Dialer(ClientHost(i)))
	if err != nil {
		c.t.Fatalf("client %d: %v", i, err)
	}
	c.t.Cleanup(remote.Shutdown)
	link := NewFaultableRPC(remote)
	dir := c.t.TempDir()
	cc := &client.Config{
		Logger:     c.logger.Named(fmt.Sprintf("client-%d", i)),
		RPCHandler: link,
		StateDB:    state.NewMemDB(),
		AllocDir:   dir + "/alloc",
		NodeName:   fmt.Sprintf("client-%d", i),
	}
	if c.cfg.Client != nil {
		c.cfg.Client(i, cc)
	}
	cl, err := client.NewClient(cc)
	if err != nil {
		c.t.Fatalf("starting client %d: %v", i, err)
	}
	c.t.Cleanup(func() { _ = cl.Destroy() })
	c.Clients = append(c.Clients, cl)
	c.Links = append(c.Links, link)
}

// ServerAddr is server i's RPC address.
func (c *MemCluster) ServerAddr(i int) string {
	return net.JoinHostPort(ServerHost(i), fmt.Sprint(MemRPCPort))
}

// WaitForLeader waits until the servers agree on a leader that has taken
// up its duties, and returns its index.
func (c *MemCluster) WaitForLeader() int {
	c.t.Helper()
	return c.WaitForLeaderExcept(-1)
}

// WaitForLeaderExcept is WaitForLeader among the servers other than skip
// (one that is isolated, say).
func (c *MemCluster) WaitForLeaderExcept(skip int) int {
	c.t.Helper()
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		leader, agreed := "", true
		for i, s := range c.Servers {
			if i == skip {
				continue
			}
			l := s.Leader()
			if leader == "" {
				leader = l
			}
			agreed = agreed && l != "" && l == leader
		}
		for i, s := range c.Servers {
			if agreed && i != skip && c.ServerAddr(i) == leader && s.IsLeader() {
				return i
			}
		}
		last = fmt.Sprintf("leader=%q agreed=%v", leader, agreed)
		Settle(100 * time.Millisecond)
	}
	c.t.Fatalf("no leader within a minute of fake time; last seen: %s", last)
	return -1
}

// Leader returns the server that leads now, waiting for one.
func (c *MemCluster) Leader() *nomad.Server { return c.Servers[c.WaitForLeader()] }

// Bubble runs f in a testing/synctest bubble (synctest.Test) and, before
// and after, empties yamux's pool of timers. yamux v0.1.2 keeps idle
// timers in a package-level sync.Pool: one made in a bubble and handed to
// a goroutine of another bubble, or of a real-time test, is fatal ("select
// on synctest channel from outside bubble"). A sync.Pool drops what it
// holds after two collections, so two runtime.GC calls with no bubble
// running clear it. Tests of this package run one at a time (no
// t.Parallel), which is what makes that enough.
func Bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	dropPooledTimers()
	defer dropPooledTimers()
	synctest.Test(t, f)
}

func dropPooledTimers() {
	runtime.GC()
	runtime.GC()
}

// Settle lets d of fake time pass and then waits until every goroutine
// of the bubble is blocked, so what a test reads next is the state the
// cluster reached, not a moment in the middle of a step.
func Settle(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}
