package nomad

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/rpc"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	msgpackrpc "github.com/hashicorp/net-rpc-msgpackrpc/v2"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

var (
	fuzzServerOnce sync.Once
	fuzzServer     *Server
)

// frameConn is a net.Conn whose reads come from a fuzz input and whose
// writes are discarded.
type frameConn struct {
	io.Reader
	net.Conn // nil: only Read, Write and Close are called
}

func (c *frameConn) Read(p []byte) (int, error)  { return c.Reader.Read(p) }
func (c *frameConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *frameConn) Close() error                { return nil }

// FuzzRPCFrame feeds arbitrary bytes to the server's RPC stream decoder and
// endpoints, as a stranger on the RPC port can: any frame must be refused
// or served, never crash the server or allocate without bound.
//
//	go test -run '^$' -fuzz FuzzRPCFrame -fuzztime 10m ./nomad/
func FuzzRPCFrame(f *testing.F) {
	for _, seed := range rpcSeedFrames(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		fuzzServerOnce.Do(func() {
			cfg := DefaultConfig()
			cfg.DevMode = true
			cfg.NumSchedulers = 0
			cfg.RPCAddr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
			cfg.Logger = hclog.NewNullLogger()
			s, err := NewServer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			fuzzServer = s
		})
		conn := &frameConn{Reader: bytes.NewReader(frame)}
		// A frame may ask for a long blocking query: its caller "hangs
		// up" soon, as a real one would, which must end it.
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		c := &ctxCodec{ServerCodec: msgpackrpc.NewCodecFromHandle(true, true, conn, structs.MsgpackHandle), ctx: ctx}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for fuzzServer.rpcServer.ServeRequest(c) == nil {
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("a frame kept the server busy for 10s: %q", frame[:min(len(frame), 120)])
		}
	})
}

// rpcSeedFrames encodes well-formed calls the way a client does.
func rpcSeedFrames(f *testing.F) [][]byte {
	node := mock.Node()
	calls := []struct {
		method string
		args   any
	}{
		{"Status.Ping", &structs.GenericRequest{}},
		{"Node.Register", &structs.NodeRegisterRequest{Node: node}},
		{"Node.UpdateStatus", &structs.NodeUpdateStatusRequest{NodeID: node.ID, Status: structs.NodeStatusReady}},
		{"Job.Register", &structs.JobRegisterRequest{Job: mock.Job()}},
		{"Job.List", &structs.JobListRequest{QueryOptions: structs.QueryOptions{MinQueryIndex: 1, MaxQueryTime: time.Millisecond}}},
	}
	var out [][]byte
	for _, c := range calls {
		var buf bytes.Buffer
		cc := msgpackrpc.NewCodecFromHandle(true, true, &rwBuffer{w: &buf}, structs.MsgpackHandle)
		if err := cc.WriteRequest(&rpc.Request{ServiceMethod: c.method, Seq: 1}, c.args); err != nil {
			f.Fatal(err)
		}
		out = append(out, buf.Bytes())
	}
	return out
}

type rwBuffer struct{ w *bytes.Buffer }

func (b *rwBuffer) Read([]byte) (int, error)    { return 0, io.EOF }
func (b *rwBuffer) Write(p []byte) (int, error) { return b.w.Write(p) }
func (b *rwBuffer) Close() error                { return nil }
