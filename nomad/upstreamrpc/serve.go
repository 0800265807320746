package upstreamrpc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/rpc"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"
)

// Config is what Serve needs besides the connection.
type Config struct {
	// Yamux is the session configuration (keepalives, write timeout);
	// the server's own, so an upstream client is held to the same limits.
	Yamux *yamux.Config
	// Logger logs refused streams and methods; nil logs nothing.
	Logger hclog.Logger
	// OnNode, when set, is called once for each node the connection
	// speaks for, after an endpoint accepted one of its calls (the node's
	// secret checked, or the node registered), with the client API served
	// over this connection. The API ends with the connection.
	OnNode func(nodeID string, api *ClientAPI)
}

// Serve serves an upstream client's connection (after its ConnMultiplexV2
// byte) until the client closes it or ctx ends. srv holds the endpoints,
// bound to this connection's peer; each call is decoded into the request
// type of the endpoint it names, translated (translateRequest), served,
// and its reply translated back (translateReply). The calls a stream
// carries are served one after another, as the client sends them; a
// blocking query holds its stream and the client opens others meanwhile.
func Serve(ctx context.Context, conn net.Conn, srv *rpc.Server, cfg Config) error {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	ycfg := cfg.Yamux
	if ycfg == nil {
		ycfg = yamux.DefaultConfig()
		ycfg.LogOutput = io.Discard
	}
	sess, err := yamux.Server(conn, ycfg)
	if err != nil {
		conn.Close()
		return err
	}
	defer sess.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ctx.Done():
			sess.Close()
		case <-sess.CloseChan():
			cancel()
		}
	}()
	state := newSession()
	if cfg.OnNode != nil {
		api := newClientAPI(sess)
		defer api.Close()
		state.onNode = func(nodeID string) { cfg.OnNode(nodeID, api) }
	}
	for {
		stream, err := sess.Accept()
		if err != nil {
			if errors.Is(err, io.EOF) || sess.IsClosed() {
				return nil
			}
			return err
		}
		go serveStream(ctx, stream, srv, state, logger)
	}
}

// serveStream serves one stream by its protocol byte.
func serveStream(ctx context.Context, stream net.Conn, srv *rpc.Server, state *session, logger hclog.Logger) {
	var b [1]byte
	if _, err := io.ReadFull(stream, b[:]); err != nil {
		stream.Close()
		return
	}
	switch b[0] {
	case streamRPC:
		// ServeCodec closes the stream when the client does.
		srv.ServeCodec(newServerCodec(ctx, stream, state, logger))
	case streamStreaming:
		logger.Warn("refused a streaming RPC from an upstream client: streaming RPCs go from the servers to a client, not the other way", "remote", stream.RemoteAddr())
		stream.Close()
	default:
		logger.Warn("refused an upstream stream of unknown kind", "byte", b[0], "remote", stream.RemoteAddr())
		stream.Close()
	}
}
