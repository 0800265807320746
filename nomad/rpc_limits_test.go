package nomad

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/testutil/wait"
)

// dialFrom opens a TCP connection to addr from the loopback IP src, so one
// test can play several clients.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	must.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// pingFrom makes a Status.Ping from src through a fresh pool.
func pingFrom(src, addr string) error {
	p := pool.NewPool(pool.Config{Dialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}})
	defer p.Shutdown()
	var reply struct{}
	return p.RPC(addr, "Status.Ping", &structs.GenericRequest{}, &reply, 0)
}

// waitClosed reads c until the server closes it, and fails if it is still
// open after limit: a connection the server gave up on must not linger.
func waitClosed(t *testing.T, c net.Conn, limit time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection from %s still open after %s", c.LocalAddr(), limit)
	}
}

// TestRPC_MaxConnsPerClient checks rpc_max_conns_per_client: an IP at its
// limit has further connections closed at once, other IPs are unaffected,
// and a closed connection gives its slot back, so one noisy client cannot
// take the port from a fleet behind other addresses.
func TestRPC_MaxConnsPerClient(t *testing.T) {
	s := testServer(t, func(c *Config) {
		c.RPCMaxConnsPerClient = 3
		c.RPCHandshakeTimeout = 0
	})
	addr := s.RPCAddr().String()
	var held []net.Conn
	for range 3 {
		c := dialFrom(t, "127.0.0.9", addr)
		_, err := c.Write([]byte{pool.RPCMultiplex})
		must.NoError(t, err)
		held = append(held, c)
	}
	waitClosed(t, dialFrom(t, "127.0.0.9", addr), 5*time.Second)
	must.NoError(t, pingFrom("127.0.0.2", addr), must.Sprint("another IP has its own budget"))

	held[0].Close()
	// The server sees the close asynchronously.
	wait.Poll(t, 5*time.Second, "a closed connection's slot given back", func() (bool, string) {
		err := pingFrom("127.0.0.9", addr)
		return err == nil, fmt.Sprint(err)
	})
}

// TestRPC_HandshakeTimeout checks rpc_handshake_timeout: a connection that
// never says what it is gets closed, and its slot under the per-client
// limit is free again, so half-open connections cannot lock a client out.
func TestRPC_HandshakeTimeout(t *testing.T) {
	s := testServer(t, func(c *Config) {
		c.RPCMaxConnsPerClient = 2
		c.RPCHandshakeTimeout = 200 * time.Millisecond
	})
	addr := s.RPCAddr().String()
	silent := []net.Conn{dialFrom(t, "127.0.0.9", addr), dialFrom(t, "127.0.0.9", addr)}
	for _, c := range silent {
		waitClosed(t, c, 5*time.Second)
	}
	// The server frees the slot just after closing.
	wait.Poll(t, 5*time.Second, "the silent connections' slots given back", func() (bool, string) {
		err := pingFrom("127.0.0.9", addr)
		return err == nil, fmt.Sprint(err)
	})
}

// The agent's own address (here 127.0.0.1) is not held to
// rpc_max_conns_per_client: with more connections open from it than the
// limit, a call from it still gets through, so an operator's health check
// on the host is never turned away during a flood (issue 26).
func TestRPC_MaxConnsPerClient_OwnAddressExempt(t *testing.T) {
	s := testServer(t, func(c *Config) {
		c.RPCMaxConnsPerClient = 2
		c.RPCHandshakeTimeout = 0
	})
	addr := s.RPCAddr().String()
	for range 5 {
		c := dialFrom(t, "127.0.0.1", addr)
		_, err := c.Write([]byte{pool.RPCMultiplex})
		must.NoError(t, err)
	}
	must.NoError(t, pingFrom("127.0.0.1", addr))
}
