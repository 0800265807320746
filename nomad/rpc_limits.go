package nomad

import (
	"io"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/nomad-edge/nomad/helper/connlimit"
)

// Upstream's defaults for the agent's limits block, RPC side.
const (
	// DefaultRPCHandshakeTimeout is limits.rpc_handshake_timeout.
	DefaultRPCHandshakeTimeout = 5 * time.Second
	// DefaultRPCMaxConnsPerClient is limits.rpc_max_conns_per_client. A
	// client agent holds one connection per server; servers hold a few
	// for raft. A hundred leaves room for tools and NAT'd fleets.
	DefaultRPCMaxConnsPerClient = 100
)

// newConnLimiter counts the RPC connections per remote IP. Every kind of
// connection counts, raft's too, until it is closed.
func (s *Server) newConnLimiter() *connlimit.Limiter {
	return connlimit.New(connlimit.Config{
		MaxPerClient: s.config.RPCMaxConnsPerClient,
		Logger:       s.logger.Named("rpc"),
	})
}

// yamuxConfig is the session config for an accepted connection. Keepalives
// find a peer that vanished without closing (an LTE client out of
// coverage): a ping every 30s, and a write that has not gone through in
// 10s closes the session, so a dead connection is gone within a minute.
// An idle session that still answers pings stays: a client agent keeps
// one open to receive nothing for minutes between heartbeats.
func yamuxConfig() *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = true
	cfg.KeepAliveInterval = 30 * time.Second
	cfg.ConnectionWriteTimeout = 10 * time.Second
	cfg.LogOutput = io.Discard
	return cfg
}
