package pool

import (
	"bufio"
	"io"
	"net/rpc"
	"sync"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Codec is msgpack RPC (net-rpc-msgpackrpc's wire format) over one
// stream, for both ends of a call: the pool's caller and the server's
// serveStream. Its read and write buffers and its msgpack encoder and
// decoder come from a pool and go back to it at Close: every call opens a
// stream of its own, and a codec's 8 KiB of buffers per call, on the
// follower and again on the leader for every forwarded write, were most of
// what a forwarded call allocated.
//
// A Codec serves one caller at a time, as net/rpc uses it for one call;
// after Close every method returns io.EOF.
type Codec struct {
	conn   io.ReadWriteCloser
	mu     sync.Mutex
	bufs   *codecBufs
	closed bool
}

// codecBufs are what a Codec borrows: the encoder writes through w, the
// decoder reads through r.
type codecBufs struct {
	r   *bufio.Reader
	w   *bufio.Writer
	enc *codec.Encoder
	dec *codec.Decoder
}

var codecPool = sync.Pool{New: func() any {
	b := &codecBufs{r: bufio.NewReader(nil), w: bufio.NewWriter(io.Discard)}
	b.enc = codec.NewEncoder(b.w, structs.MsgpackHandle)
	b.dec = codec.NewDecoder(b.r, structs.MsgpackHandle)
	return b
}}

// NewCodec returns a codec over conn.
func NewCodec(conn io.ReadWriteCloser) *Codec {
	b := codecPool.Get().(*codecBufs)
	b.r.Reset(conn)
	b.w.Reset(conn)
	b.enc.Reset(b.w)
	b.dec.Reset(b.r)
	return &Codec{conn: conn, bufs: b}
}

// ReadRequestHeader implements rpc.ServerCodec.
func (c *Codec) ReadRequestHeader(r *rpc.Request) error { return c.read(r) }

// ReadRequestBody implements rpc.ServerCodec.
func (c *Codec) ReadRequestBody(body any) error { return c.read(body) }

// WriteResponse implements rpc.ServerCodec.
func (c *Codec) WriteResponse(r *rpc.Response, body any) error { return c.write(r, body) }

// WriteRequest implements rpc.ClientCodec.
func (c *Codec) WriteRequest(r *rpc.Request, body any) error { return c.write(r, body) }

// ReadResponseHeader implements rpc.ClientCodec.
func (c *Codec) ReadResponseHeader(r *rpc.Response) error { return c.read(r) }

// ReadResponseBody implements rpc.ClientCodec.
func (c *Codec) ReadResponseBody(body any) error { return c.read(body) }

// Close closes the stream and gives the buffers back. Closing the stream
// first ends a read or write in flight, which holds the buffers until it
// returns.
func (c *Codec) Close() error {
	err := c.conn.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	b := c.bufs
	c.bufs = nil
	// Nothing of this stream may stay reachable from the pool.
	b.r.Reset(nil)
	b.w.Reset(io.Discard)
	b.enc.Reset(b.w)
	b.dec.Reset(b.r)
	codecPool.Put(b)
	return err
}

func (c *Codec) write(header, body any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return io.EOF
	}
	if err := c.bufs.enc.Encode(header); err != nil {
		return err
	}
	if err := c.bufs.enc.Encode(body); err != nil {
		return err
	}
	return c.bufs.w.Flush()
}

func (c *Codec) read(out any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return io.EOF
	}
	if out == nil {
		// The body of a call answered with an error: read past it.
		var discard any
		return c.bufs.dec.Decode(&discard)
	}
	return c.bufs.dec.Decode(out)
}
