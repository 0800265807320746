package connlimit

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ErrPerClientLimit is why Accept refuses a connection: its remote IP
// already holds the most connections allowed.
var ErrPerClientLimit = errors.New("too many connections from this client IP")

// DefaultLogInterval is how often, at most, a Limiter logs refusals for one
// IP: a client hammering the port makes one line per interval, never one
// per connection.
const DefaultLogInterval = 10 * time.Second

// Config configures a Limiter.
type Config struct {
	// MaxPerClient is the most connections one remote IP may hold open;
	// 0 or less means no limit.
	MaxPerClient int
	// Logger gets a warning per refusing IP at most once per LogInterval;
	// nil logs nothing.
	Logger hclog.Logger
	// LogInterval defaults to DefaultLogInterval.
	LogInterval time.Duration
	// Now is the clock for the log interval; time.Now when nil.
	Now func() time.Time
	// Exempt reports the IPs whose connections are never counted; nil
	// means DefaultExempt (this host's own addresses).
	Exempt func(netip.Addr) bool
}

// DefaultExempt returns the test of the IPs a limiter does not count by
// default: the addresses of this host's interfaces as they are when it is
// called, 127.0.0.1 and ::1 among them (not the rest of 127.0.0.0/8, which
// no interface holds). A flood must not cut the operator's own health
// checks and tools, which come from the host itself; a remote IP cannot
// pose as one of them over TCP. What a local reverse proxy forwards
// arrives from the host too, and is not counted: limit at the proxy.
func DefaultExempt() func(netip.Addr) bool {
	own := map[netip.Addr]bool{}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				own[p.Addr().Unmap()] = true
			}
		}
	}
	own[netip.IPv6Loopback()] = true
	own[netip.AddrFrom4([4]byte{127, 0, 0, 1})] = true
	return func(ip netip.Addr) bool { return own[ip.Unmap()] }
}

// CountEveryone is an Exempt that exempts no IP.
func CountEveryone(netip.Addr) bool { return false }

// Limiter counts the open connections per remote IP, but for the IPs
// Config.Exempt names (the host's own, by default).
type Limiter struct {
	cfg Config

	mu sync.Mutex
	// clients holds only IPs with connections open, so its size is
	// bounded by the file descriptors the process has.
	clients map[string]*client
}

type client struct {
	open int
	// refused counts refusals since the last log line; lastLog is when
	// that line was written.
	refused int
	lastLog time.Time
}

// New returns a Limiter; with cfg.MaxPerClient <= 0 it accepts everything.
func New(cfg Config) *Limiter {
	if cfg.LogInterval <= 0 {
		cfg.LogInterval = DefaultLogInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Exempt == nil && cfg.MaxPerClient > 0 {
		cfg.Exempt = DefaultExempt()
	}
	return &Limiter{cfg: cfg, clients: map[string]*client{}}
}

// Accept counts c against its remote IP. It returns a connection whose
// Close (once, however often it is called) gives the slot back, or
// ErrPerClientLimit; c is not closed on refusal, so the caller may answer
// first.
func (l *Limiter) Accept(c net.Conn) (net.Conn, error) {
	if l == nil || l.cfg.MaxPerClient <= 0 {
		return c, nil
	}
	ip := remoteIP(c.RemoteAddr())
	if a, err := netip.ParseAddr(ip); err == nil && l.cfg.Exempt(a) {
		return c, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	cl := l.clients[ip]
	if cl == nil {
		cl = &client{}
		l.clients[ip] = cl
	}
	if cl.open >= l.cfg.MaxPerClient {
		l.refuseLocked(ip, cl)
		return nil, fmt.Errorf("%w (%s holds %d, the limit)", ErrPerClientLimit, ip, cl.open)
	}
	cl.open++
	return &conn{Conn: c, free: func() { l.free(ip) }}, nil
}

func (l *Limiter) refuseLocked(ip string, cl *client) {
	cl.refused++
	now := l.cfg.Now()
	if !cl.lastLog.IsZero() && now.Sub(cl.lastLog) < l.cfg.LogInterval {
		return
	}
	l.cfg.Logger.Warn("refusing connections over the per-client limit",
		"client", ip, "limit", l.cfg.MaxPerClient, "refused", cl.refused, "since", l.cfg.LogInterval)
	cl.refused = 0
	cl.lastLog = now
}

func (l *Limiter) free(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cl := l.clients[ip]
	if cl == nil {
		return
	}
	cl.open--
	if cl.open <= 0 {
		delete(l.clients, ip)
	}
}

// Open reports the connections counted for ip now, for tests.
func (l *Limiter) Open(ip string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cl := l.clients[ip]; cl != nil {
		return cl.open
	}
	return 0
}

// remoteIP is the address's IP without the port; the whole string for
// addresses that have none (pipes, unix sockets), which then share one
// budget.
func remoteIP(a net.Addr) string {
	if a == nil {
		return ""
	}
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// conn frees its slot when closed.
type conn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}
