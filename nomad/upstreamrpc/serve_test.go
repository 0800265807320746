package upstreamrpc

import (
	"context"
	"io"
	"net"
	"net/rpc"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"
	"github.com/hashicorp/yamux"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// fakeNode stands in for the server's Node endpoint: it records what
// reached it and answers as ours does.
type fakeNode struct {
	alloc chan *structs.AllocUpdateRequest
}

func (f *fakeNode) UpdateAlloc(args *structs.AllocUpdateRequest, reply *structs.GenericResponse) error {
	f.alloc <- args
	reply.Index = 42
	return nil
}

func (f *fakeNode) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	reply.HeartbeatTTL = 10 * time.Second
	reply.NodeModifyIndex, reply.Index = 9, 9
	return nil
}

// fakeJob is an endpoint an upstream client must not reach.
type fakeJob struct{ called chan struct{} }

func (f *fakeJob) Register(args *structs.JobRegisterRequest, reply *structs.JobRegisterResponse) error {
	close(f.called)
	return nil
}

type fakeStatus struct{}

func (fakeStatus) Ping(args *structs.GenericRequest, reply *struct{}) error { return nil }

// upstreamStream serves a fake endpoint set over Serve and returns one
// stream of it as an upstream client opens it: the captured opening
// bytes (connection type, stream SYN, the msgpack RPC byte) are written
// as they are, then the stream carries net/rpc calls in upstream's
// encoding.
func upstreamStream(t *testing.T, srv *rpc.Server) *rpc.Client {
	t.Helper()
	return upstreamStreamWith(t, srv, Config{})
}

// upstreamStreamWith is upstreamStream with Serve's configuration.
func upstreamStreamWith(t *testing.T, srv *rpc.Server, serveCfg Config) *rpc.Client {
	t.Helper()
	clientEnd, serverEnd := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [1]byte
		_, _ = io.ReadFull(serverEnd, b[:])
		_ = Serve(ctx, serverEnd, srv, serveCfg)
	}()
	t.Cleanup(func() { cancel(); clientEnd.Close(); <-done })

	open := fixture(t, "conn-open.bin")
	// The capture's own bytes open the connection and stream 1, all of
	// them read by the server before the test's yamux client writes
	// anything: written from a goroutine, they could come after the
	// call's first frame on a loaded machine, and the server then saw a
	// frame of a stream not yet opened (CI's race run: "unexpected EOF"
	// after 40 s).
	_, err := clientEnd.Write(open)
	must.NoError(t, err)
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	// The session goes on from there, on stream 1.
	sess, err := yamux.Client(&skipWrites{Conn: clientEnd, skip: yamuxHeaderLen}, cfg)
	must.NoError(t, err)
	t.Cleanup(func() { sess.Close() })
	// Open writes its own SYN for stream 1, which skipWrites drops: the
	// capture's went first, with the RPC byte.
	st, err := sess.Open()
	must.NoError(t, err)
	return rpc.NewClientWithCodec(msgpackrpc.NewCodecFromHandle(true, true, st, Handle))
}

// yamuxHeaderLen is the size of a yamux frame header.
const yamuxHeaderLen = 12

// skipWrites drops the first skip bytes written to it: the test's yamux
// client writes the same opening the capture did, which was sent already.
type skipWrites struct {
	net.Conn
	skip int
}

func (s *skipWrites) Write(p []byte) (int, error) {
	n := len(p)
	if s.skip > 0 {
		k := min(s.skip, len(p))
		s.skip -= k
		p = p[k:]
	}
	if len(p) > 0 {
		if _, err := s.Conn.Write(p); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// genericFixture decodes a captured body as upstream's client sent it,
// field for field, to send again unchanged.
func genericFixture(t *testing.T, name string) map[string]any {
	t.Helper()
	var m map[string]any
	must.NoError(t, codec.NewDecoderBytes(fixture(t, name), Handle).Decode(&m))
	return m
}

// TestServeAnswersAnUpstreamClientsCalls checks that, over a session
// opened with the captured bytes of an upstream client, the calls of one
// stream are served in turn: Status.Ping, a Node.UpdateAlloc whose node
// the translation fills in, two heartbeats of which the unchanged second
// carries no index, and a Job.Register refused by name without reaching
// its endpoint.
func TestServeAnswersAnUpstreamClientsCalls(t *testing.T) {
	node := &fakeNode{alloc: make(chan *structs.AllocUpdateRequest, 1)}
	job := &fakeJob{called: make(chan struct{})}
	srv := rpc.NewServer()
	must.NoError(t, srv.RegisterName("Node", node))
	must.NoError(t, srv.RegisterName("Job", job))
	must.NoError(t, srv.RegisterName("Status", fakeStatus{}))
	c := upstreamStream(t, srv)

	var ping struct{}
	must.NoError(t, c.Call("Status.Ping", genericFixture(t, "get-allocs-request.msgpack"), &ping))

	var ack structs.GenericResponse
	must.NoError(t, c.Call("Node.UpdateAlloc", genericFixture(t, "update-alloc-request.msgpack"), &ack))
	got := <-node.alloc
	must.Eq(t, "fa4e21c8-a1a1-b188-2135-ca6b2837787a", got.NodeID)
	must.Eq(t, "running", got.Alloc[0].ClientStatus)
	must.Eq(t, 42, ack.Index)

	hb := genericFixture(t, "update-status-request.msgpack")
	var first, second structs.NodeUpdateResponse
	must.NoError(t, c.Call("Node.UpdateStatus", hb, &first))
	must.NoError(t, c.Call("Node.UpdateStatus", hb, &second))
	must.Eq(t, 9, first.Index)
	must.Eq(t, 0, second.Index)
	must.Eq(t, 10*time.Second, second.HeartbeatTTL)

	err := c.Call("Job.Register", map[string]any{}, &struct{}{})
	must.ErrorContains(t, err, "NotServedToUpstreamClients.Job")
	select {
	case <-job.called:
		t.Fatal("Job.Register reached its endpoint")
	default:
	}
}

// refusingNode is the Node endpoint refusing a node whose secret is wrong.
type refusingNode struct{}

func (refusingNode) UpdateStatus(args *structs.NodeUpdateStatusRequest, reply *structs.NodeUpdateResponse) error {
	return structs.ErrPermissionDenied
}

// TestServeReachesANodeOnlyAfterItsSecretHeld checks that the connection
// is handed to the servers as the way to a node (OnNode) only once an
// endpoint accepted a call of that node, and never after a refused one:
// an upstream client cannot take over another node's exec, logs and
// signals by naming its ID with the wrong secret.
func TestServeReachesANodeOnlyAfterItsSecretHeld(t *testing.T) {
	hb := genericFixture(t, "update-status-request.msgpack")
	for _, tc := range []struct {
		name  string
		node  any
		wants bool
	}{{"refused", refusingNode{}, false}, {"accepted", &fakeNode{}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := rpc.NewServer()
			must.NoError(t, srv.RegisterName("Node", tc.node))
			seen := make(chan string, 1)
			c := upstreamStreamWith(t, srv, Config{OnNode: func(id string, _ *ClientAPI) { seen <- id }})
			var reply structs.NodeUpdateResponse
			err := c.Call("Node.UpdateStatus", hb, &reply)
			if !tc.wants {
				must.ErrorContains(t, err, structs.ErrPermissionDenied.Error())
				select {
				case id := <-seen:
					t.Fatalf("node %s reachable through a connection whose call was refused", id)
				default:
				}
				return
			}
			must.NoError(t, err)
			must.Eq(t, hb["NodeID"].(string), <-seen)
		})
	}
}
