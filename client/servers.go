package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/pool"
)

// Timeouts of the client's link to its servers. They are short because an
// edge link that has just come back must be used at once: a dial or a call
// that went into a dead link is abandoned after about a second (dial) or a
// few (call), the session is dropped, and the next attempt starts afresh
// instead of waiting on TCP's retransmission backoff of the old one.
const (
	ClientDialTimeout = 1 * time.Second
	ClientCallTimeout = 3 * time.Second
)

// allocUpdateBudget is how long, beyond ClientCallTimeout, a server may
// take to answer Node.UpdateAlloc. The leader writes the allocation
// updates of many nodes in one raft entry, one entry at a time: when a
// site of a thousand nodes returns at once, a push queues behind the
// entries before it for seconds. Abandoned after ClientCallTimeout, it
// would be sent again to the next server while the first still writes
// it, and the backlog would grow with every round (a push is idempotent,
// so nothing breaks, but nothing drains either). A dead link is still
// noticed in a few seconds by the heartbeat, whose calls keep the short
// timeout, and its return kicks the pushes at once.
const allocUpdateBudget = 12 * time.Second

// blocking is implemented by requests that carry QueryOptions: it says how
// long the server may hold them.
type blocking interface {
	BlockingTime() time.Duration
}

// ServerManager is implemented by an RPCHandler that can take the servers
// the cluster reports: the client hands it the server list of every
// heartbeat and registration, and asks it to rebalance now and then.
type ServerManager interface {
	SetServers(addrs []string)
	Rebalance()
}

var _ ServerManager = (*ServerRPC)(nil)

// ServerRPC is the RPCHandler of a client that reaches its servers over
// the network: msgpack RPC over one yamux session per server. A call whose
// link fails, or that a server without a leader refused (it may be on the
// minority side of a partition), is retried on the next server, each at
// most once per call; any other error a server answered with is returned
// as is.
//
// The servers it starts with (client.servers) are a seed: once a server
// reports the region's servers, those are used first, and the seed only
// after them, so that a client keeps working when the seed servers are
// replaced.
type ServerRPC struct {
	pool *pool.ConnPool
	// sharedPool is set when the pool belongs to the caller, who closes
	// it: Shutdown then leaves it open for the handler's siblings.
	sharedPool bool

	mu      sync.Mutex
	seed    []string
	learned []string // sorted; what the servers last reported
	servers []string // learned first, then the seed; never empty
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
	seed := slices.Compact(slices.Clone(servers))
	return &ServerRPC{pool: NewClientPool(cfg), seed: seed, servers: slices.Clone(seed)}, nil
}

// NewServerRPCOnPool is NewServerRPC over a pool shared with other
// handlers (made with NewClientPool): the client simulator's thousands of
// nodes share a few sessions instead of holding one each, as one process
// would never open thousands of connections to the same server. The
// caller shuts the pool down.
func NewServerRPCOnPool(servers []string, p *pool.ConnPool) (*ServerRPC, error) {
	if len(servers) == 0 {
		return nil, errors.New("no servers to connect to: set client.servers")
	}
	seed := slices.Compact(slices.Clone(servers))
	return &ServerRPC{pool: p, sharedPool: true, seed: seed, servers: slices.Clone(seed)}, nil
}

// NewClientPool returns a connection pool with the client's timeouts
// where cfg sets none: a link that cannot answer must fail fast so the
// client tries the next server (and heals in about a second). TLS
// settings are the caller's.
func NewClientPool(cfg pool.Config) *pool.ConnPool {
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = ClientDialTimeout
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = ClientCallTimeout
	}
	return pool.NewPool(cfg)
}

// RPC implements RPCHandler.
func (s *ServerRPC) RPC(method string, args, reply any) error {
	var wait time.Duration
	if b, ok := args.(blocking); ok {
		wait = b.BlockingTime()
	}
	if method == methodUpdateAlloc {
		wait = allocUpdateBudget
	}
	var lastErr error
	tried := map[string]bool{}
	for range maxAttempts {
		addr := s.server()
		if tried[addr] {
			break
		}
		tried[addr] = true
		err := s.pool.RPC(addr, method, args, reply, wait)
		if err == nil || !unreachable(err) {
			return err
		}
		lastErr = err
		s.rotate(addr)
	}
	return fmt.Errorf("no server could serve %s: %w", method, lastErr)
}

// maxAttempts bounds the servers one call tries, so that a client whose own
// link is down fails a call in a few dial timeouts however many servers the
// region has.
const maxAttempts = 3

func (s *ServerRPC) server() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servers[0]
}

// rotate moves addr to the back of the list, unless another caller already
// moved past it.
func (s *ServerRPC) rotate(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.servers[0] == addr {
		s.servers = append(s.servers[1:], addr)
	}
}

// SetServers takes the servers a server reported. The server in use stays
// first when it is still listed, so that learning the list does not move
// every client's connection; the rest are shuffled so that clients spread
// over the servers when they fail over.
func (s *ServerRPC) SetServers(addrs []string) {
	learned := slices.Compact(slices.Sorted(slices.Values(addrs)))
	if len(learned) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Equal(learned, s.learned) {
		return
	}
	s.learned = learned
	s.orderLocked(s.servers[0])
}

// Rebalance shuffles the servers, so that over time the clients of a region
// spread evenly, also over servers that joined after they connected.
func (s *ServerRPC) Rebalance() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.orderLocked("")
}

// orderLocked sets the order servers are tried in: the learned ones
// shuffled, first (when given and learned) first, then the seed servers
// nobody reported.
func (s *ServerRPC) orderLocked(first string) {
	next := slices.Clone(s.learned)
	rand.Shuffle(len(next), func(i, j int) { next[i], next[j] = next[j], next[i] })
	if i := slices.Index(next, first); i > 0 {
		next[0], next[i] = next[i], next[0]
	}
	var rest []string
	for _, a := range s.seed {
		if !slices.Contains(next, a) {
			rest = append(rest, a)
		}
	}
	if len(next) == 0 {
		rand.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	}
	s.servers = append(next, rest...)
}

// Servers returns the servers in the order they are tried.
func (s *ServerRPC) Servers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.servers)
}

// Shutdown closes the connections, unless the pool is shared.
func (s *ServerRPC) Shutdown() {
	if !s.sharedPool {
		s.pool.Shutdown()
	}
}

var _ SessionOpener = (*ServerRPC)(nil)

// OpenSession implements SessionOpener: a liveness stream on the
// connection the handler's calls use, to the server they go to first.
func (s *ServerRPC) OpenSession(ctx context.Context) (net.Conn, error) {
	addr := s.server()
	conn, err := s.pool.OpenStream(ctx, addr, pool.RPCNodeKeepalive)
	if err != nil {
		s.rotate(addr)
		return nil, err
	}
	return &sessionConn{Conn: conn, onFail: func() { s.rotate(addr) }}, nil
}

// sessionConn is a liveness stream that, when it fails, moves the
// handler on from its server, as a failed call does.
type sessionConn struct {
	net.Conn
	onFail func()
}

// Fail implements failer.
func (c *sessionConn) Fail() { c.onFail() }
