package testutil

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
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
	addrs   []string
}

// StartServers starts cfg.N servers, joins them and waits for a leader.
func StartServers(t testing.TB, cfg ServersConfig) *Servers {
	t.Helper()
	level := cfg.LogLevel
	if level == "" {
		level = "warn"
	}
	sc := &Servers{
		t: t, cfg: cfg, Net: NewFaultNet(),
		logger:  hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.LevelFromString(level)}),
		Servers: make([]*nomad.Server, cfg.N),
		dirs:    make([]string, cfg.N),
		addrs:   make([]string, cfg.N),
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
	c.SerfAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	c.SerfTimeScale = 0.1
	c.RaftElectionTimeout = 200 * time.Millisecond
	c.NumSchedulers = 1
	c.Dialer = sc.Net.Dialer(func() string { return sc.addrs[i] })
	if sc.cfg.Server != nil {
		sc.cfg.Server(i, c)
	}
	s, err := nomad.NewServer(c)
	if err != nil {
		sc.t.Fatalf("starting server %d: %v", i, err)
	}
	sc.Servers[i] = s
	sc.addrs[i] = s.RPCAddr().String()
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
	_, portStr, _ := net.SplitHostPort(sc.addrs[i])
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

// Addr returns server i's RPC address.
func (sc *Servers) Addr(i int) string { return sc.addrs[i] }

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
				if s != nil && i != skip && sc.addrs[i] == leader && s.IsLeader() {
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
