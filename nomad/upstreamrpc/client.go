package upstreamrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"
	"github.com/hashicorp/yamux"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Client calls upstream 1.6.5 servers the way an upstream client agent
// does: a yamux session on upstream's multiplex byte, each call on a
// stream of its own that starts with upstream's RPC byte, msgpack with
// upstream's settings, and requests in upstream's shape where ours differ
// (clientRequest). It is what the client simulator drives upstream
// servers with, so that fleet figures can be measured side by side on
// the same machine; our client's own code (registration, heartbeats, the
// allocation watch, the update batches) runs unchanged above it.
//
// A call that fails on the transport is tried on the next server, as the
// client's ServerRPC does; upstream's followers forward to their leader
// themselves.
type Client struct {
	servers []string
	dial    func(ctx context.Context, addr string) (net.Conn, error)

	mu   sync.Mutex
	next int
	sess map[string]*yamux.Session
}

// ErrTransport marks a call that did not reach a server (or lost it): the
// caller may try another.
var ErrTransport = errors.New("upstream RPC transport")

// NewClient returns a Client of the servers (host:port of their RPC
// ports); dial nil is the real network.
func NewClient(servers []string, dial func(ctx context.Context, addr string) (net.Conn, error)) (*Client, error) {
	if len(servers) == 0 {
		return nil, errors.New("upstream client: no servers")
	}
	if dial == nil {
		var d net.Dialer
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	return &Client{servers: append([]string(nil), servers...), dial: dial, sess: map[string]*yamux.Session{}}, nil
}

// clientDialTimeout bounds opening a session to one server.
const clientDialTimeout = 5 * time.Second

// RPC makes one call, ending it early when args' request context ends
// (structs.RequestContext): the stream is closed under it.
func (c *Client) RPC(method string, args, reply any) error {
	ctx := structs.RequestContext(args)
	var lastErr error
	for range len(c.servers) {
		addr := c.pick()
		err := c.call(ctx, addr, method, clientRequest(method, args), reply)
		if err == nil || !errors.Is(err, ErrTransport) {
			return err
		}
		lastErr = err
		c.advance(addr)
		if ctx.Err() != nil {
			break
		}
	}
	return lastErr
}

func (c *Client) pick() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[c.next%len(c.servers)]
}

// advance moves to the server after addr, when addr is still the one
// picked (another call may have moved already).
func (c *Client) advance(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.servers[c.next%len(c.servers)] == addr {
		c.next++
	}
}

func (c *Client) call(ctx context.Context, addr, method string, args, reply any) error {
	sess, err := c.session(ctx, addr)
	if err != nil {
		return err
	}
	stream, err := sess.Open()
	if err != nil {
		c.drop(addr, sess)
		return fmt.Errorf("%w: opening a stream to %s: %w", ErrTransport, addr, err)
	}
	defer stream.Close()
	defer context.AfterFunc(ctx, func() { stream.Close() })()
	if _, err := stream.Write([]byte{streamRPC}); err != nil {
		c.drop(addr, sess)
		return fmt.Errorf("%w: %s: %w", ErrTransport, addr, err)
	}
	// One call, synchronous on the stream: no net/rpc.Client, whose
	// reading goroutine races the codec's Close (net-rpc-msgpackrpc).
	// Closing the stream (the context's end) ends a read in progress.
	cc := msgpackrpc.NewCodecFromHandle(true, true, stream, Handle)
	transport := func(err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %s to %s: %w", ErrTransport, method, addr, ctx.Err())
		}
		c.drop(addr, sess)
		return fmt.Errorf("%w: %s to %s: %w", ErrTransport, method, addr, err)
	}
	if err := cc.WriteRequest(&rpc.Request{ServiceMethod: method, Seq: 1}, args); err != nil {
		return transport(err)
	}
	var resp rpc.Response
	if err := cc.ReadResponseHeader(&resp); err != nil {
		return transport(err)
	}
	if resp.Error != "" {
		if err := cc.ReadResponseBody(nil); err != nil {
			return transport(err)
		}
		return structs.RPCError(resp.Error)
	}
	if err := cc.ReadResponseBody(reply); err != nil {
		return transport(err)
	}
	return nil
}

// session returns the open session to addr, opening one (upstream's
// multiplex byte, then yamux) when there is none.
func (c *Client) session(ctx context.Context, addr string) (*yamux.Session, error) {
	c.mu.Lock()
	if s := c.sess[addr]; s != nil && !s.IsClosed() {
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, clientDialTimeout)
	defer cancel()
	conn, err := c.dial(dctx, addr)
	if err != nil {
		return nil, fmt.Errorf("%w: dialing %s: %w", ErrTransport, addr, err)
	}
	if _, err := conn.Write([]byte{ConnMultiplexV2}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrTransport, addr, err)
	}
	s, err := yamux.Client(conn, nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrTransport, addr, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.sess[addr]; old != nil && !old.IsClosed() {
		s.Close()
		return old, nil
	}
	c.sess[addr] = s
	return s, nil
}

func (c *Client) drop(addr string, s *yamux.Session) {
	c.mu.Lock()
	if c.sess[addr] == s {
		delete(c.sess, addr)
	}
	c.mu.Unlock()
	s.Close()
}

// Close closes every session.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, s := range c.sess {
		s.Close()
		delete(c.sess, addr)
	}
}

// upstreamNodeSpecificRequest is upstream's NodeSpecificRequest: it names
// the node's secret in a field of its own, which its Node.GetClientAllocs
// checks, where ours reads AuthToken.
type upstreamNodeSpecificRequest struct {
	NodeID   string
	SecretID string
	structs.QueryOptions
}

// clientRequest is args in upstream's shape for method, where it differs
// from ours beyond field names.
func clientRequest(method string, args any) any {
	switch r := args.(type) {
	case *structs.NodeSpecificRequest:
		return &upstreamNodeSpecificRequest{NodeID: r.NodeID, SecretID: r.AuthToken, QueryOptions: r.QueryOptions}
	case *structs.NodeRegisterRequest:
		if m, err := registerWithNetworks(r); err == nil {
			return m
		}
	}
	return args
}

// registerWithNetworks is a registration in upstream's shape: its node
// also lists its host networks under NodeResources.Networks (Mode, Device,
// IP, CIDR, MBits), which upstream's scheduler requires of a node for a
// group in host network mode ("missing network" otherwise); ours keeps
// them in NodeNetworks only. The request is re-encoded as a map with that
// key added.
func registerWithNetworks(r *structs.NodeRegisterRequest) (map[string]any, error) {
	if r.Node == nil || r.Node.NodeResources == nil {
		return nil, errors.New("no node resources")
	}
	var buf []byte
	if err := codec.NewEncoderBytes(&buf, Handle).Encode(r); err != nil {
		return nil, err
	}
	var m map[string]any
	if err := codec.NewDecoderBytes(buf, Handle).Decode(&m); err != nil {
		return nil, err
	}
	node, _ := m["Node"].(map[string]any)
	res, _ := node["NodeResources"].(map[string]any)
	if res == nil {
		return nil, errors.New("no node resources")
	}
	var nets []any
	for _, nn := range r.Node.NodeResources.NodeNetworks {
		if nn.Mode != structs.NetworkModeHost {
			continue
		}
		for _, a := range nn.Addresses {
			if a.Family != "ipv4" {
				continue
			}
			nets = append(nets, map[string]any{"Mode": "host", "Device": nn.Device, "IP": a.Address, "CIDR": a.Address + "/32", "MBits": 1000})
		}
	}
	res["Networks"] = nets
	return m, nil
}
