package nomad

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/yamux"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// ErrNoNodeConn is a node that holds no session with this server (or, from
// FindNodeConn, with any server of the region): it is down, cut off, or
// has not connected since its agent started.
var ErrNoNodeConn = errors.New("no connection to the node: it has no session with the servers")

// nodeHelloTimeout bounds the hello of a node session, so that a stranger
// cannot hold a connection by saying nothing.
const nodeHelloTimeout = 10 * time.Second

// nodeConns are the sessions nodes opened to this server, by node ID. A
// node keeps one; a new session from the same node replaces the old one,
// which the node has given up on (a link that broke one way).
type nodeConns struct {
	mu       sync.Mutex
	sessions map[string]nodeSession
	handler  http.Handler // serves pool.RPCClientHTTP; nil refuses it
}

// nodeSession is a node's session as DialNode uses it: a yamux session
// of ours, or an upstream client's (upstreamrpc.ClientAPI).
type nodeSession interface {
	Open() (net.Conn, error)
	IsClosed() bool
	Close() error
}

func newNodeConns() *nodeConns { return &nodeConns{sessions: map[string]nodeSession{}} }

func (n *nodeConns) add(nodeID string, s nodeSession) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if old, ok := n.sessions[nodeID]; ok && old != s {
		old.Close()
	}
	n.sessions[nodeID] = s
}

func (n *nodeConns) remove(nodeID string, s nodeSession) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sessions[nodeID] == s {
		delete(n.sessions, nodeID)
	}
}

func (n *nodeConns) get(nodeID string) nodeSession {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.sessions[nodeID]
	if s != nil && s.IsClosed() {
		return nil
	}
	return s
}

// handleNodeSession serves a session a node opened (pool.RPCNodeSession)
// until it closes: the node proves itself with its secret, then waits for
// the streams this server opens to it.
func (s *Server) handleNodeSession(conn net.Conn, peer rpcPeer) {
	nodeID, ok := s.acceptNodeHello(conn, peer, "node session")
	if !ok {
		conn.Close()
		return
	}
	sess, err := yamux.Client(conn, yamuxConfig())
	if err != nil {
		conn.Close()
		return
	}
	s.nodeConns.add(nodeID, sess)
	s.logger.Debug("node session opened", "node_id", nodeID, "remote", conn.RemoteAddr())
	select {
	case <-sess.CloseChan():
	case <-s.shutdownCh:
		sess.Close()
	}
	s.nodeConns.remove(nodeID, sess)
	s.logger.Debug("node session closed", "node_id", nodeID)
}

// acceptNodeHello reads the hello that opens a node session
// (pool.NodeHello), checks the node's secret (and under tls.auto that
// peer's certificate is that node's: autoNodeStream) and answers; ok
// when the session is accepted.
func (s *Server) acceptNodeHello(conn net.Conn, peer rpcPeer, what string) (nodeID string, ok bool) {
	_ = conn.SetDeadline(time.Now().Add(nodeHelloTimeout))
	defer conn.SetDeadline(time.Time{})
	var hello structs.NodeSessionHello
	if err := codec.NewDecoder(conn, structs.MsgpackHandle).Decode(&hello); err != nil {
		return "", false
	}
	verr := autoNodeStream(peer, what, hello.NodeID)
	if verr == nil {
		verr = s.verifyNode(hello)
	}
	ack := structs.NodeSessionAck{}
	if verr != nil {
		ack.Error = verr.Error()
		s.logger.Warn("refused node session", "node_id", hello.NodeID, "remote", conn.RemoteAddr(), "error", verr)
	}
	if err := codec.NewEncoder(conn, structs.MsgpackHandle).Encode(&ack); err != nil || verr != nil {
		return "", false
	}
	return hello.NodeID, true
}

// verifyNode checks a node's secret against the registered node.
func (s *Server) verifyNode(h structs.NodeSessionHello) error {
	node, err := s.State().NodeByID(nil, h.NodeID)
	if err != nil {
		return err
	}
	if node == nil {
		return fmt.Errorf("%w: %s", structs.ErrUnknownNode, h.NodeID)
	}
	if subtle.ConstantTimeCompare([]byte(node.SecretID), []byte(h.SecretID)) != 1 {
		return fmt.Errorf("%w: wrong node secret", structs.ErrPermissionDenied)
	}
	return nil
}

// DialNode opens a stream to the node over the session it opened to this
// server, for one HTTP exchange with its /v1/client API. ErrNoNodeConn
// when this server holds no session of the node.
func (s *Server) DialNode(nodeID string) (net.Conn, error) {
	sess := s.nodeConns.get(nodeID)
	if sess == nil {
		return nil, fmt.Errorf("%w %s on this server", ErrNoNodeConn, nodeID)
	}
	st, err := sess.Open()
	if err != nil {
		return nil, fmt.Errorf("opening a stream to node %s: %w", nodeID, err)
	}
	return st, nil
}

// HasNodeConn reports whether this server holds a session of the node.
func (s *Server) HasNodeConn(nodeID string) bool { return s.nodeConns.get(nodeID) != nil }

// HasNodeConn is Status.HasNodeConn: whether this server holds the node's
// session, asked by the other servers of the region (FindNodeConn). Only
// servers may ask: to anyone else it would say which nodes are connected
// where, a map of the fleet for whoever probes the RPC port.
func (st *Status) HasNodeConn(args *structs.NodeConnRequest, reply *structs.NodeConnResponse) error {
	if err := st.srv.requireServer(st.peer, "Status.HasNodeConn"); err != nil {
		return err
	}
	reply.Connected = st.srv.HasNodeConn(args.NodeID)
	return nil
}

// FindNodeConn returns the RPC address of another server of the region
// that holds the node's session, asking each in turn; ErrNoNodeConn when
// none does.
func (s *Server) FindNodeConn(ctx context.Context, nodeID string) (string, error) {
	self := ""
	if s.rpcAdvertise != nil {
		self = s.rpcAdvertise.String()
	}
	for _, p := range s.regionServers() {
		addr := p.RPCAddr.String()
		if addr == self {
			continue
		}
		args := &structs.NodeConnRequest{NodeID: nodeID}
		structs.WithRequestContext(args, ctx)
		var reply structs.NodeConnResponse
		if err := s.connPool.RPC(addr, "Status.HasNodeConn", args, &reply, 0); err != nil {
			s.logger.Debug("asking a server for a node session", "server", addr, "error", err)
			continue
		}
		if reply.Connected {
			return addr, nil
		}
	}
	return "", fmt.Errorf("%w %s", ErrNoNodeConn, nodeID)
}

// DialClientHTTP opens a connection to the server at addr that carries
// one HTTP exchange with its /v1/client API (pool.RPCClientHTTP).
func (s *Server) DialClientHTTP(ctx context.Context, addr string) (net.Conn, error) {
	return pool.Dial(ctx, pool.DialInput{Dialer: s.config.Dialer, Addr: addr, TLS: s.serverDialTLS(), Kind: pool.RPCClientHTTP, Prover: serverProver{s}})
}

// SetClientHTTPHandler sets what serves pool.RPCClientHTTP connections:
// the agent's /v1/client routes, which check the request's token.
func (s *Server) SetClientHTTPHandler(h http.Handler) {
	s.nodeConns.mu.Lock()
	defer s.nodeConns.mu.Unlock()
	s.nodeConns.handler = h
}

// serveClientHTTP serves the one HTTP exchange of a pool.RPCClientHTTP
// connection.
func (s *Server) serveClientHTTP(conn net.Conn, peer rpcPeer) {
	if err := autoNodeStream(peer, "client HTTP exchange", ""); err != nil {
		s.logger.Warn("refused client HTTP connection", "remote", conn.RemoteAddr(), "error", err)
		conn.Close()
		return
	}
	s.nodeConns.mu.Lock()
	h := s.nodeConns.handler
	s.nodeConns.mu.Unlock()
	if h == nil {
		conn.Close()
		return
	}
	l := &oneConnListener{conn: conn, done: make(chan struct{})}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: nodeHelloTimeout, ConnState: l.onState}
	_ = srv.Serve(l)
	<-l.done
}

// oneConnListener hands one connection to an http.Server, then reports
// closed; done closes when the connection does.
type oneConnListener struct {
	mu   sync.Mutex
	conn net.Conn
	done chan struct{}
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		<-l.done
		return nil, net.ErrClosed
	}
	c := l.conn
	l.conn = nil
	return c, nil
}

func (l *oneConnListener) onState(_ net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		l.once.Do(func() { close(l.done) })
	}
}

func (l *oneConnListener) Close() error { return nil }

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }
