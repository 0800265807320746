package nomad

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/upstreamrpc"
)

// sniffUpstream tells an upstream Nomad client's connection from our node
// session, which begin with the same byte (see upstreamrpc.IsUpstream). A
// connection that says nothing is dropped after nodeHelloTimeout, as a
// silent node session is.
func sniffUpstream(conn net.Conn) (net.Conn, bool, error) {
	_ = conn.SetReadDeadline(time.Now().Add(nodeHelloTimeout))
	c, up, err := upstreamrpc.IsUpstream(conn)
	_ = conn.SetReadDeadline(time.Time{})
	return c, up, err
}

// upstreamTLS reads a connection that began with upstream's TLS byte
// (which is our plaintext multiplex byte, refused with TLS on): when a
// TLS handshake follows, it is an upstream agent's TLS connection, and the
// handshake goes on as for ours, with the same certificates checked.
func upstreamTLS(conn net.Conn) (net.Conn, byte) {
	c, isTLS, err := upstreamrpc.StartsTLS(conn)
	if err != nil || !isTLS {
		return c, upstreamrpc.ConnTLS
	}
	return c, pool.RPCTLS
}

// handleUpstreamSession serves an upstream client agent: the same
// endpoints as our own clients get, bound to the connection's peer, so
// node secrets, ACL tokens and TLS identities are checked as for ours.
func (s *Server) handleUpstreamSession(conn net.Conn, peer rpcPeer) {
	srv, err := s.connRPCServer(peer)
	if err != nil {
		s.logger.Error("setting up RPC endpoints for an upstream client", "error", err)
		conn.Close()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.shutdownCh:
			cancel()
		case <-ctx.Done():
		}
	}()
	s.logger.Debug("upstream client connection", "remote", conn.RemoteAddr())
	// The nodes this connection speaks for are reached through it, as
	// through our own clients' node sessions (DialNode).
	var nodes []string
	var api *upstreamrpc.ClientAPI
	var mu sync.Mutex
	onNode := func(nodeID string, a *upstreamrpc.ClientAPI) {
		mu.Lock()
		nodes, api = append(nodes, nodeID), a
		mu.Unlock()
		s.nodeConns.add(nodeID, a)
	}
	_ = upstreamrpc.Serve(ctx, conn, srv, upstreamrpc.Config{Yamux: yamuxConfig(), Logger: s.logger.Named("upstreamrpc"), OnNode: onNode})
	mu.Lock()
	defer mu.Unlock()
	for _, id := range nodes {
		s.nodeConns.remove(id, api)
	}
}
