package client

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/pool"
)

// blocking is implemented by requests that carry QueryOptions: it says how
// long the server may hold them.
type blocking interface {
	BlockingTime() time.Duration
}

// ServerRPC is the RPCHandler of a client that reaches its servers over
// the network: msgpack RPC over one yamux session per server. A call whose
// link fails is retried once on the next server; an error the server
// answered with is returned as is.
type ServerRPC struct {
	pool *pool.ConnPool

	mu      sync.Mutex
	servers []string
	current int
}

// NewServerRPC returns a handler for the given server RPC addresses
// (host:port). dialer may be nil for the real network.
func NewServerRPC(servers []string, dialer pool.Dialer) (*ServerRPC, error) {
	return NewServerRPCWithPool(servers, pool.Config{Dialer: dialer})
}

// NewServerRPCWithPool is NewServerRPC with the connection pool's settings
// spelled out: TLS (tlsutil.Config.OutgoingRPC) for servers with tls.rpc.
func NewServerRPCWithPool(servers []string, cfg pool.Config) (*ServerRPC, error) {
	if len(servers) == 0 {
		return nil, errors.New("no servers to connect to: set client.servers")
	}
	return &ServerRPC{pool: pool.NewPool(cfg), servers: append([]string(nil), servers...)}, nil
}

// RPC implements RPCHandler.
func (s *ServerRPC) RPC(method string, args, reply any) error {
	var wait time.Duration
	if b, ok := args.(blocking); ok {
		wait = b.BlockingTime()
	}
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		addr := s.server()
		err := s.pool.RPC(addr, method, args, reply, wait)
		if err == nil || !errors.Is(err, pool.ErrTransport) {
			return err
		}
		lastErr = err
		s.rotate(addr)
	}
	return fmt.Errorf("no server reachable: %w", lastErr)
}

func (s *ServerRPC) server() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servers[s.current]
}

// rotate moves past addr, unless another caller already did.
func (s *ServerRPC) rotate(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.servers[s.current] == addr {
		s.current = (s.current + 1) % len(s.servers)
	}
}

// Shutdown closes the connections.
func (s *ServerRPC) Shutdown() { s.pool.Shutdown() }
