package connlimit

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

type fakeConn struct {
	net.Conn
	remote net.Addr
	closed int
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c *fakeConn) Close() error         { c.closed++; return nil }

func from(ip string) *fakeConn {
	return &fakeConn{remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}}
}

// TestLimiter_PerIP checks the limit counts each IP apart and that a closed
// connection gives its slot back exactly once, however often it is closed:
// a double close must not let a client exceed its limit later.
func TestLimiter_PerIP(t *testing.T) {
	l := New(Config{MaxPerClient: 2})
	a1, err := l.Accept(from("10.0.0.1"))
	must.NoError(t, err)
	_, err = l.Accept(from("10.0.0.1"))
	must.NoError(t, err)
	_, err = l.Accept(from("10.0.0.1"))
	must.True(t, errors.Is(err, ErrPerClientLimit))
	_, err = l.Accept(from("10.0.0.2"))
	must.NoError(t, err, must.Sprint("another IP has its own budget"))

	must.NoError(t, a1.Close())
	must.NoError(t, a1.Close())
	must.Eq(t, 1, l.Open("10.0.0.1"))
	_, err = l.Accept(from("10.0.0.1"))
	must.NoError(t, err)
	_, err = l.Accept(from("10.0.0.1"))
	must.True(t, errors.Is(err, ErrPerClientLimit), must.Sprint("a double close freed two slots"))
}

// TestLimiter_Disabled checks 0 turns the limit off, as upstream.
func TestLimiter_Disabled(t *testing.T) {
	l := New(Config{MaxPerClient: 0})
	for range 1000 {
		_, err := l.Accept(from("10.0.0.1"))
		must.NoError(t, err)
	}
}

// TestLimiter_LogsOncePerInterval checks a flood of refused connections
// makes one log line per IP per interval, not one per connection: the
// flood must not become a flood of log lines.
func TestLimiter_LogsOncePerInterval(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1000, 0)
	l := New(Config{
		MaxPerClient: 1,
		Logger:       hclog.New(&hclog.LoggerOptions{Output: &buf}),
		LogInterval:  10 * time.Second,
		Now:          func() time.Time { return now },
	})
	_, err := l.Accept(from("10.0.0.1"))
	must.NoError(t, err)
	for range 1000 {
		_, err := l.Accept(from("10.0.0.1"))
		must.Error(t, err)
	}
	must.Eq(t, 1, strings.Count(buf.String(), "per-client limit"))
	now = now.Add(11 * time.Second)
	_, err = l.Accept(from("10.0.0.1"))
	must.Error(t, err)
	must.Eq(t, 2, strings.Count(buf.String(), "per-client limit"))
	must.StrContains(t, buf.String(), "refused=1000")
}

// The host's own addresses, 127.0.0.1 and ::1 among them, are never
// counted by default: during a flood from one address the operator's own
// health checks and tools, which come from the host, must still get in
// (issue 26). Other IPs, the rest of 127.0.0.0/8 included, are counted.
func TestLimiter_OwnAddressesExempt(t *testing.T) {
	l := New(Config{MaxPerClient: 1})
	for _, ip := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1"} {
		for range 5 {
			_, err := l.Accept(from(ip))
			must.NoError(t, err, must.Sprintf("%s was counted", ip))
		}
		must.Eq(t, 0, l.Open(ip))
	}
	_, err := l.Accept(from("127.0.0.9"))
	must.NoError(t, err)
	_, err = l.Accept(from("127.0.0.9"))
	must.True(t, errors.Is(err, ErrPerClientLimit))

	counted := New(Config{MaxPerClient: 1, Exempt: CountEveryone})
	_, err = counted.Accept(from("127.0.0.1"))
	must.NoError(t, err)
	_, err = counted.Accept(from("127.0.0.1"))
	must.True(t, errors.Is(err, ErrPerClientLimit), must.Sprint("CountEveryone exempted loopback"))
}
