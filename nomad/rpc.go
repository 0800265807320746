package nomad

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/net-rpc-msgpackrpc/v2"
	"github.com/hashicorp/yamux"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// listen accepts RPC connections until the listener closes. Accept errors
// (out of file descriptors, most often) back off up to a second, logging
// once per step, instead of spinning and flooding the log.
func (s *Server) listen() {
	var delay time.Duration
	for {
		conn, err := s.rpcListener.Accept()
		if err != nil {
			if s.isShutdown() {
				return
			}
			delay = min(max(delay*2, 5*time.Millisecond), time.Second)
			s.logger.Error("failed to accept RPC conn; backing off", "error", err, "delay", delay)
			select {
			case <-time.After(delay):
			case <-s.shutdownCh:
				return
			}
			continue
		}
		delay = 0
		go s.handleConn(conn)
	}
}

// firstByteTimeout bounds how long a new connection may stay silent before
// saying what it is, so idle strangers cannot hold connections.
const firstByteTimeout = 10 * time.Second

func (s *Server) handleConn(raw net.Conn) {
	conn, kind, peer, err := s.openConn(raw)
	if errors.Is(err, errSilentConn) {
		raw.Close()
		return
	}
	if err != nil {
		s.logger.Warn("refused RPC connection", "remote", raw.RemoteAddr(), "error", err)
		raw.Close()
		return
	}
	switch {
	case kind == pool.RPCRaft && s.raftLayer != nil:
		// Raft entries rewrite the cluster's state: with TLS, only a
		// server certificate may carry them.
		if peer.tls && !peer.server {
			s.logger.Warn("refused raft connection from a non-server certificate", "remote", conn.RemoteAddr())
			conn.Close()
			return
		}
		s.raftLayer.handoff(conn)
		return
	case kind != pool.RPCMultiplex:
		s.logger.Warn("unrecognized RPC byte", "byte", kind, "remote", conn.RemoteAddr())
		conn.Close()
		return
	}
	srv, err := s.connRPCServer(peer)
	if err != nil {
		s.logger.Error("setting up RPC endpoints for a connection", "error", err)
		conn.Close()
		return
	}
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	sess, err := yamux.Server(conn, cfg)
	if err != nil {
		conn.Close()
		return
	}
	defer sess.Close()
	for {
		stream, err := sess.Accept()
		if err != nil {
			return
		}
		go serveStream(srv, stream)
	}
}

func serveStream(srv *rpc.Server, stream net.Conn) {
	c := msgpackrpc.NewCodecFromHandle(true, true, stream, structs.MsgpackHandle)
	defer c.Close()
	for {
		if err := srv.ServeRequest(c); err != nil {
			return
		}
	}
}

// RPC serves a call in process, as the dev agent's client and HTTP API do.
// Arguments and replies go through msgpack exactly as over the network, so
// the caller never shares memory with the state store.
func (s *Server) RPC(method string, args, reply any) error {
	c := &inmemCodec{method: method}
	if err := codec.NewEncoderBytes(&c.args, structs.MsgpackHandle).Encode(args); err != nil {
		return fmt.Errorf("encoding %s args: %w", method, err)
	}
	if err := s.rpcServer.ServeRequest(c); err != nil {
		return err
	}
	if c.err != "" {
		return structs.RPCError(c.err)
	}
	return codec.NewDecoderBytes(c.reply, structs.MsgpackHandle).Decode(reply)
}

// inmemCodec is an rpc.ServerCodec over byte slices for one call.
type inmemCodec struct {
	method string
	args   []byte
	reply  []byte
	err    string
}

func (c *inmemCodec) ReadRequestHeader(r *rpc.Request) error {
	r.ServiceMethod = c.method
	return nil
}

func (c *inmemCodec) ReadRequestBody(body any) error {
	if body == nil {
		return nil
	}
	return codec.NewDecoder(bytes.NewReader(c.args), structs.MsgpackHandle).Decode(body)
}

func (c *inmemCodec) WriteResponse(r *rpc.Response, body any) error {
	c.err = r.Error
	if r.Error != "" {
		return nil
	}
	return codec.NewEncoderBytes(&c.reply, structs.MsgpackHandle).Encode(body)
}

func (c *inmemCodec) Close() error { return nil }

// forward sends a write (or consistent read) to the leader when this server
// is not it. handled is true when the call was forwarded.
func (s *Server) forward(method string, args, reply any) (handled bool, err error) {
	if s.IsLeader() {
		return false, nil
	}
	leader := string(s.raft.Leader())
	if leader == "" {
		return true, structs.ErrNoLeader
	}
	return true, s.connPool.RPC(leader, method, args, reply, 0)
}

// forwardQuery sends a read to the leader unless this server leads or the
// caller accepts a stale answer (AllowStale): then it is served from the
// local state, which may lag the leader by LastContact.
func (s *Server) forwardQuery(method string, opts *structs.QueryOptions, args, reply any) (handled bool, err error) {
	if opts.AllowStale || s.IsLeader() {
		return false, nil
	}
	leader := string(s.raft.Leader())
	if leader == "" {
		return true, structs.ErrNoLeader
	}
	return true, s.connPool.RPC(leader, method, args, reply, opts.BlockingTime())
}

// raftApply encodes and applies a raft entry and returns the FSM's response
// and the log index.
func (s *Server) raftApply(t structs.MessageType, msg any) (any, uint64, error) {
	buf, err := structs.Encode(t, msg)
	if err != nil {
		return nil, 0, err
	}
	f := s.raft.Apply(buf, 30*time.Second)
	if err := f.Error(); err != nil {
		return nil, 0, fmt.Errorf("raft apply %s: %w", t, err)
	}
	resp := f.Response()
	if err, ok := resp.(error); ok && err != nil {
		return nil, f.Index(), err
	}
	return resp, f.Index(), nil
}

// queryFn reads the state for a blocking query, adding what it reads to ws
// and filling the reply; it returns the index the reply reflects.
type queryFn func(ws memdb.WatchSet, st *state.StateStore) (uint64, error)

// blockingRPC runs fn and, when opts ask for it, re-runs it each time what
// it read changes, until the index passes MinQueryIndex or MaxQueryTime
// passes. A timeout is not an error: the reply holds the latest result.
func (s *Server) blockingRPC(opts *structs.QueryOptions, meta *structs.QueryMeta, fn queryFn) error {
	ctx := context.Background()
	if opts.MinQueryIndex > 0 {
		wait := opts.MaxQueryTime
		if wait <= 0 {
			wait = structs.DefaultBlockingQueryTime
		}
		if wait > structs.MaxBlockingQueryTime {
			wait = structs.MaxBlockingQueryTime
		}
		// Stagger wake-ups so many clients' queries do not expire together.
		wait += time.Duration(s.rand.Int63n(int64(wait)/16 + 1))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	for {
		// Read from a snapshot so the reply and its index come from the
		// same moment; watches on it still fire on later writes.
		st := s.fsm.State()
		snap, err := st.Snapshot()
		if err != nil {
			return err
		}
		ws := memdb.NewWatchSet()
		ws.Add(st.AbandonCh())
		index, err := fn(ws, &snap.StateStore)
		if err != nil {
			return err
		}
		// Never report index 0: clients use it to mean "no blocking".
		meta.Index = max(index, 1)
		meta.KnownLeader = s.raft.Leader() != ""
		if !s.IsLeader() {
			meta.LastContact = s.clock.Now().Sub(s.raft.LastContact())
		}
		if opts.MinQueryIndex == 0 || index > opts.MinQueryIndex {
			return nil
		}
		if err := ws.WatchCtx(ctx); err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		if s.isShutdown() {
			return errors.New("server shutting down")
		}
	}
}

// tableIndex returns the highest of the given tables' indexes.
func tableIndex(st *state.StateStore, tables ...string) (uint64, error) {
	var idx uint64
	for _, t := range tables {
		i, err := st.Index(t)
		if err != nil {
			return 0, err
		}
		idx = max(idx, i)
	}
	return idx, nil
}
