package testutil

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/nomad"
)

// ClusterConfig shapes an in-process cluster.
type ClusterConfig struct {
	// Clients is the number of client nodes.
	Clients int
	// Server adjusts the server's config (heartbeat TTLs for tests...).
	Server func(*nomad.Config)
	// LogLevel for every agent; "warn" by default.
	LogLevel string
	// Client adjusts client i's config (node meta for affinities...).
	Client func(i int, cfg *client.Config)
}

// Cluster is one dev-mode server and clients in the test process. Each
// client reaches the server through its own Link.
type Cluster struct {
	Server  *nomad.Server
	Clients []*client.Client
	Links   []*FaultableRPC
}

// NewCluster starts a cluster and waits until every client's node is
// registered. Everything stops when the test ends.
func NewCluster(t testing.TB, cfg ClusterConfig) *Cluster {
	t.Helper()
	level := cfg.LogLevel
	if level == "" {
		level = "warn"
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.LevelFromString(level)})

	sc := nomad.DefaultConfig()
	sc.DevMode = true
	sc.Logger = logger.Named("server")
	sc.RPCAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	sc.NumSchedulers = 2
	if cfg.Server != nil {
		cfg.Server(sc)
	}
	srv, err := nomad.NewServer(sc)
	if err != nil {
		t.Fatalf("starting server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.WaitForLeader(ctx); err != nil {
		t.Fatalf("server has no leader: %v", err)
	}

	c := &Cluster{Server: srv}
	for i := 0; i < cfg.Clients; i++ {
		link := NewFaultableRPC(srv)
		dir := t.TempDir()
		ccfg := &client.Config{
			Logger:       logger.Named(fmt.Sprintf("client-%d", i)),
			RPCHandler:   link,
			StateDir:     dir,
			AllocDir:     dir + "/alloc",
			NodeName:     fmt.Sprintf("client-%d", i),
			PluginConfig: map[string]map[string]any{"raw_exec": {"enabled": true}},
		}
		if cfg.Client != nil {
			cfg.Client(i, ccfg)
		}
		cl, err := client.NewClient(ccfg)
		if err != nil {
			t.Fatalf("starting client %d: %v", i, err)
		}
		t.Cleanup(func() { _ = cl.Destroy() })
		c.Clients = append(c.Clients, cl)
		c.Links = append(c.Links, link)
	}
	for i, cl := range c.Clients {
		select {
		case <-cl.Ready():
		case <-time.After(10 * time.Second):
			t.Fatalf("client %d not registered after 10s", i)
		}
	}
	return c
}
