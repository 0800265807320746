package upstreamrpc

import (
	"context"
	"fmt"
	"io"
	"net/rpc"
	"sync"

	"github.com/hashicorp/go-hclog"
	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// refusedService prefixes a method an upstream client may not call, so
// net/rpc answers it "can't find service" without running anything.
const refusedService = "NotServedToUpstreamClients."

// serverCodec is a net/rpc server codec over one upstream stream: it
// decodes with upstream's msgpack settings into our request types and
// translates both ways.
type serverCodec struct {
	ctx     context.Context
	inner   *msgpackrpc.MsgpackCodec
	logger  hclog.Logger
	session *session

	mu    sync.Mutex
	calls map[uint64]*call // by Seq, until answered
	next  *call            // the call whose body is read next
}

// call is one request on its way through the endpoint.
type call struct {
	method string
	args   any
}

func newServerCodec(ctx context.Context, rwc io.ReadWriteCloser, sess *session, logger hclog.Logger) *serverCodec {
	return &serverCodec{
		ctx:     ctx,
		inner:   msgpackrpc.NewCodecFromHandle(true, true, rwc, Handle),
		logger:  logger,
		session: sess,
		calls:   map[uint64]*call{},
	}
}

func (c *serverCodec) ReadRequestHeader(r *rpc.Request) error {
	if err := c.inner.ReadRequestHeader(r); err != nil {
		return err
	}
	method := r.ServiceMethod
	if !clientMethods[method] {
		c.logger.Warn("refused an RPC an upstream client may not make", "method", method)
		r.ServiceMethod = refusedService + method
	}
	c.mu.Lock()
	c.next = &call{method: method}
	c.calls[r.Seq] = c.next
	c.mu.Unlock()
	return nil
}

func (c *serverCodec) ReadRequestBody(body any) error {
	if err := c.inner.ReadRequestBody(body); err != nil {
		return err
	}
	if body == nil {
		return nil
	}
	c.mu.Lock()
	cl := c.next
	c.mu.Unlock()
	cl.args = body
	if err := translateRequest(cl.method, body); err != nil {
		return fmt.Errorf("%s: %w", cl.method, err)
	}
	structs.WithRequestContext(body, c.ctx)
	return nil
}

func (c *serverCodec) WriteResponse(r *rpc.Response, body any) error {
	c.mu.Lock()
	cl := c.calls[r.Seq]
	delete(c.calls, r.Seq)
	c.mu.Unlock()
	if cl != nil {
		r.ServiceMethod = cl.method
		if r.Error == "" {
			c.session.translateReply(cl.method, cl.args, body)
		}
	}
	return c.inner.WriteResponse(r, body)
}

func (c *serverCodec) Close() error { return c.inner.Close() }
