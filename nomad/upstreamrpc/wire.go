package upstreamrpc

import (
	"bufio"
	"net"
	"reflect"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

// Upstream's protocol bytes, as its agents send them (observed from a
// v1.6.5 client; see testdata/README.md).
const (
	// ConnMultiplexV2 is the first byte of an upstream client's
	// connection: a yamux session follows, the client opening the
	// streams. Our own node session (pool.RPCNodeSession) uses the same
	// byte and is told apart by what follows it (IsUpstream).
	ConnMultiplexV2 byte = 0x06
	// ConnTLS is the first byte of an upstream agent's TLS connection; a
	// TLS handshake follows, then ConnMultiplexV2 inside it. Our own
	// plaintext multiplex byte (pool.RPCMultiplex) is the same value
	// (StartsTLS tells them apart).
	ConnTLS byte = 0x04

	// streamRPC begins a stream of msgpack net/rpc calls.
	streamRPC byte = 0x01
	// streamStreaming begins a streaming RPC (alloc logs, exec, fs):
	// the servers open them to the client (ClientAPI).
	streamStreaming byte = 0x05
)

// tlsHandshake is the first byte of a TLS record carrying a handshake.
const tlsHandshake byte = 0x16

// yamuxVersion is the first byte of every yamux frame header; a msgpack
// map, which is what our own node session's hello is, never starts with it.
const yamuxVersion byte = 0x00

// Handle is upstream's msgpack configuration: strings for raw bytes,
// free-form maps as map[string]any, and time.Time as its binary form
// (TimeNotBuiltin) rather than msgpack's timestamp extension, which is
// what ours differs in.
var Handle = func() *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.RawToString = true
	h.TimeNotBuiltin = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	return h
}()

// peekedConn is a connection whose next bytes were read into r already.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// IsUpstream tells an upstream client's connection from our node session,
// both of which begin with ConnMultiplexV2, by the byte after it (already
// read by the caller): a yamux frame header for upstream, a msgpack map
// for ours. The returned connection yields that byte again, so whichever
// handler takes it reads the stream whole. A read error is returned as is.
func IsUpstream(conn net.Conn) (net.Conn, bool, error) {
	r := bufio.NewReader(conn)
	b, err := r.Peek(1)
	if err != nil {
		return conn, false, err
	}
	return &peekedConn{Conn: conn, r: r}, b[0] == yamuxVersion, nil
}

// StartsTLS reports whether a connection whose first byte was ConnTLS
// goes on with a TLS handshake (an upstream agent with TLS), rather than
// a yamux session (our plaintext multiplex). The returned connection
// yields the peeked byte again.
func StartsTLS(conn net.Conn) (net.Conn, bool, error) {
	r := bufio.NewReader(conn)
	b, err := r.Peek(1)
	if err != nil {
		return conn, false, err
	}
	return &peekedConn{Conn: conn, r: r}, b[0] == tlsHandshake, nil
}
