package pool_test

import (
	"fmt"
	"io"
	"net"
	"net/rpc"
	"testing"
	"time"

	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Calls one after another, each on a stream of its own as the pool makes
// them, with the pooled codec on both ends: every reply is its own call's,
// whatever the buffers held before. And the codec speaks
// net-rpc-msgpackrpc's wire format, which the test server's end uses.
func TestCodec_CallsReuseBuffersCleanly(t *testing.T) {
	srv := rpc.NewServer()
	must.NoError(t, srv.Register(&Test{}))
	for i := range 50 {
		client, server := net.Pipe()
		var serverCodec rpc.ServerCodec = pool.NewCodec(server)
		if i%2 == 1 {
			serverCodec = msgpackrpc.NewCodecFromHandle(true, true, server, structs.MsgpackHandle)
		}
		done := make(chan error, 1)
		go func() { done <- srv.ServeRequest(serverCodec) }()

		c := pool.NewCodec(client)
		// Names of differing length: a stale byte would show.
		node := &structs.Node{ID: fmt.Sprintf("node-%d", i), Name: fmt.Sprintf("%0*d", i+1, i), SecretID: "s"}
		var reply structs.SingleNodeResponse
		must.NoError(t, msgpackrpc.CallWithCodec(c, "Test.Node", &structs.NodeRegisterRequest{Node: node}, &reply))
		must.NoError(t, c.Close())
		must.NoError(t, <-done)
		serverCodec.Close()
		must.Eq(t, node.ID, reply.Node.ID)
		must.Eq(t, node.Name, reply.Node.Name)
		must.Eq(t, 42, reply.Index)
	}
}

// A read waiting on a silent stream ends when the codec is closed, rather
// than holding Close (and the buffers) until the peer speaks; after it,
// every call says the codec is closed.
func TestCodec_CloseEndsABlockedRead(t *testing.T) {
	client, server := net.Pipe()
	defer server.Close()
	c := pool.NewCodec(client)
	read := make(chan error, 1)
	go func() {
		var r rpc.Response
		read <- c.ReadResponseHeader(&r)
	}()
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	for _, ch := range []chan error{closed, read} {
		select {
		case <-ch:
		case <-time.After(eventTimeout):
			t.Fatal("Close or the read in flight did not return")
		}
	}
	must.ErrorIs(t, c.WriteRequest(&rpc.Request{ServiceMethod: "Test.Node"}, nil), io.EOF)
	must.ErrorIs(t, c.ReadResponseBody(nil), io.EOF)
	must.NoError(t, c.Close())
}
