package testutil

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad"
)

// ServersConfig shapes a cluster of production (non-dev) servers.
type ServersConfig struct {
	// N is the number of servers, each with bootstrap_expect = N.
	N int
	// Server adjusts each server's config.
	Server func(i int, c *nomad.Config)
	// LogLevel for every server; "warn" by default.
	LogLevel string
	// ClientTLS, when set, is what AddClient's clients dial the servers
	// with (servers whose Server hook enabled tls.rpc refuse plaintext).
	ClientTLS *tls.Config
}

// Servers are production servers in the test process: raft on disk in
// temp dirs, serf on loopback, every raft and forwarded-RPC link through
// Net so a test can isolate a server.
type Servers struct {
	t       testing.TB
	cfg     ServersConfig
	logger  hclog.Logger
	Net     *FaultNet
	Servers []*nomad.Server
	dirs    []string
	serf    []int

	// addrsMu guards addrs: a server's dialer reads them from its own
	// goroutines while a restart writes the restarted server's address.
	addrsMu sync.Mutex
	addrs   []string
}

// addr is server i's RPC address.
func (sc *Servers) addr(i int) string {
	sc.addrsMu.Lock()
	defer sc.addrsMu.Unlock()
	return sc.addrs[i]
}

// StartServers starts cfg.N servers, joins them and waits for a leader.
func StartServers(t testing.TB, cfg ServersConfig) *Servers {
	t.Helper()
	level := cfg.LogLevel
	if level == "" {
		level = os.Getenv("NOMAD_TEST_LOG_LEVEL")
	}
	if level == "" {
		level = "warn"
	}
	sc := &Servers{
		t: t, cfg: cfg, Net: NewFaultNet(),
		logger:  hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.LevelFromString(level)}),
		Servers: make([]*nomad.Server, cfg.N),
		dirs:    make([]string, cfg.N),
		addrs:   make([]string, cfg.N),
		serf:    make([]int, cfg.N),
	}
	for i := range cfg.N {
		sc.dirs[i] = filepath.Join(t.TempDir(), fmt.Sprintf("server-%d", i))
		sc.start(i, 0)
	}
	t.Cleanup(func() {
		for _, s := range sc.Servers {
			if s != nil {
				_ = s.Shutdown()
			}
		}
	})
	sc.joinAll()
	sc.WaitForLeader()
	return sc
}

// start starts server i on its data dir; port 0 picks a fresh RPC port.
func (sc *Servers) start(i, port int) {
	sc.t.Helper()
	c := nomad.DefaultConfig()
	c.Logger = sc.logger.Named(fmt.Sprintf("server-%d", i))
	c.NodeName = fmt.Sprintf("server-%d", i)
	c.DataDir = sc.dirs[i]
	c.BootstrapExpect = sc.cfg.N
	c.RPCAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: port}
	// A restarted server keeps its gossip port, as a real one does: serf
	// refuses a known name at a new address while the old one is suspect.
	c.SerfAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: sc.serf[i]}
	c.SerfTimeScale = 0.1
	// Short enough for quick elections, long enough that a loaded CI machine
	// (the race detector on two cores) does not lose its leader mid-test.
	c.RaftElectionTimeout = 500 * time.Millisecond
	c.NumSchedulers = 1
	c.Dialer = sc.Net.Dialer(func() string { return sc.addr(i) })
	if sc.cfg.Server != nil {
		sc.cfg.Server(i, c)
	}
	s, err := nomad.NewServer(c)
	if err != nil {
		sc.t.Fatalf("starting server %d: %v", i, err)
	}
	sc.Servers[i] = s
	sc.addrsMu.Lock()
	sc.addrs[i] = s.RPCAddr().String()
	sc.addrsMu.Unlock()
	_, serfPort, _ := net.SplitHostPort(s.SerfAddr())
	fmt.Sscan(serfPort, &sc.serf[i])
}

func (sc *Servers) joinAll() {
	sc.t.Helper()
	var first string
	for _, s := range sc.Servers {
		if s == nil {
			continue
		}
		if first == "" {
			first = s.SerfAddr()
			continue
		}
		if _, err := s.Join([]string{first}); err != nil {
			sc.t.Fatalf("joining %s: %v", first, err)
		}
	}
}

// Add starts one more server with a fresh data dir, as an operator adds
// a server to a running cluster, joins it to the others and returns its
// index. It does not wait for it to become a voter.
func (sc *Servers) Add() int {
	sc.t.Helper()
	i := len(sc.Servers)
	sc.Servers = append(sc.Servers, nil)
	sc.dirs = append(sc.dirs, filepath.Join(sc.t.TempDir(), fmt.Sprintf("server-%d", i)))
	sc.serf = append(sc.serf, 0)
	sc.addrsMu.Lock()
	sc.addrs = append(sc.addrs, "")
	sc.addrsMu.Unlock()
	sc.start(i, 0)
	for j, s := range sc.Servers {
		if j != i && s != nil {
			if _, err := sc.Servers[i].Join([]string{s.SerfAddr()}); err == nil {
				return i
			}
		}
	}
	sc.t.Fatalf("server %d joined none of the others", i)
	return i
}

// Stop shuts server i down (its data dir stays, for Restart).
func (sc *Servers) Stop(i int) {
	sc.t.Helper()
	if err := sc.Servers[i].Shutdown(); err != nil {
		sc.t.Fatalf("stopping server %d: %v", i, err)
	}
	sc.Servers[i] = nil
}

// Restart starts server i again on its data dir and RPC port and joins it
// to the others.
func (sc *Servers) Restart(i int) {
	sc.t.Helper()
	_, portStr, _ := net.SplitHostPort(sc.addr(i))
	var port int
	fmt.Sscan(portStr, &port)
	sc.start(i, port)
	for j, s := range sc.Servers {
		if j != i && s != nil {
			if _, err := sc.Servers[i].Join([]string{s.SerfAddr()}); err == nil {
				return
			}
		}
	}
}

// WaitCaughtUp waits until server i's state has reached what the leader had
// committed when the wait began. A server back from a stop can lag for
// seconds (the leader backs off replicating to a peer that was away), and
// its workers would hold evaluations meanwhile; tests that are not about
// that latency wait it out here.
func (sc *Servers) WaitCaughtUp(i int) {
	sc.t.Helper()
	leader := sc.Servers[sc.WaitForLeader()]
	want, err := leader.State().LatestIndex()
	if err != nil {
		sc.t.Fatalf("leader's index: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := sc.Servers[i].State().SnapshotMinIndex(ctx, want); err != nil {
		got, _ := sc.Servers[i].State().LatestIndex()
		sc.t.Fatalf("server %d did not catch up to index %d within 30s (at %d): %v", i, want, got, err)
	}
}

// Addr returns server i's RPC address.
func (sc *Servers) Addr(i int) string { return sc.addr(i) }

// Leader waits for the running servers to agree on a leader and returns
// its index.
func (sc *Servers) WaitForLeader() int {
	sc.t.Helper()
	return sc.WaitForLeaderExcept(-1)
}

// WaitForLeaderExcept waits until every running server other than skip
// names the same leader, which is one of them, and that leader has taken
// up its duties.
func (sc *Servers) WaitForLeaderExcept(skip int) int {
	sc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var last string
	for {
		leader, agreed := "", true
		for i, s := range sc.Servers {
			if s == nil || i == skip {
				continue
			}
			l := s.Leader()
			if leader == "" {
				leader = l
			}
			if l == "" || l != leader {
				agreed = false
			}
		}
		if agreed && leader != "" {
			for i, s := range sc.Servers {
				if s != nil && i != skip && sc.addr(i) == leader && s.IsLeader() {
					return i
				}
			}
		}
		last = fmt.Sprintf("leader=%q agreed=%v", leader, agreed)
		select {
		case <-ctx.Done():
			sc.t.Fatalf("no leader within 15s; last seen: %s", last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// AddClient starts a client that reaches every server over real RPC
// through a FaultableRPC link, and waits until its node is registered.
func (sc *Servers) AddClient(name string) (*client.Client, *FaultableRPC) {
	sc.t.Helper()
	var addrs []string
	for i, s := range sc.Servers {
		if s != nil {
			addrs = append(addrs, sc.addr(i))
		}
	}
	remote, err := client.NewServerRPCWithPool(addrs, pool.Config{TLS: sc.cfg.ClientTLS})
	if err != nil {
		sc.t.Fatalf("client %s: %v", name, err)
	}
	sc.t.Cleanup(remote.Shutdown)
	link := NewFaultableRPC(remote)
	dir := sc.t.TempDir()
	cl, err := client.NewClient(&client.Config{
		Logger:       sc.logger.Named(name),
		RPCHandler:   link,
		StateDir:     dir,
		AllocDir:     dir + "/alloc",
		NodeName:     name,
		PluginConfig: map[string]map[string]any{"raw_exec": {"enabled": true}},
	})
	if err != nil {
		sc.t.Fatalf("starting client %s: %v", name, err)
	}
	sc.t.Cleanup(func() { _ = cl.Destroy() })
	select {
	case <-cl.Ready():
	case <-time.After(10 * time.Second):
		sc.t.Fatalf("client %s not registered after 10s", name)
	}
	return cl, link
}

// Leader returns the server that leads now (waiting for one).
func (sc *Servers) Leader() *nomad.Server {
	sc.t.Helper()
	return sc.Servers[sc.WaitForLeader()]
}
