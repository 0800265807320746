package upstreamrpc

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/yamux"
	"github.com/shoenig/test/must"
)

// capturedAllocID is the allocation of the captured streaming RPCs.
const capturedAllocID = "0a148939-64c6-8c94-a931-6ae270c57e2a"

// fakeCall is one stream the server opened to a fake upstream client, as
// far as the client read it: the protocol byte, then the header (the
// streaming header or net/rpc's) and the request.
type fakeCall struct {
	kind     byte
	hdr, req map[string]any
	dec      *codec.Decoder
	st       net.Conn
}

// fakeUpstream is the client end of an upstream session: for the one
// stream the server opens, it decodes what the server wrote and lets
// serve answer.
func fakeUpstream(t *testing.T, serve func(fakeCall)) *ClientAPI {
	t.Helper()
	a, b := net.Pipe()
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	serverSess, err := yamux.Server(a, cfg)
	must.NoError(t, err)
	clientSess, err := yamux.Client(b, cfg)
	must.NoError(t, err)
	api := newClientAPI(serverSess)
	t.Cleanup(func() { api.Close(); clientSess.Close() })
	go func() {
		st, err := clientSess.Accept()
		if err != nil {
			return
		}
		defer st.Close()
		r := bufio.NewReader(st)
		kind, _ := r.ReadByte()
		dec := codec.NewDecoder(r, Handle)
		var hdr, req map[string]any
		_ = dec.Decode(&hdr)
		_ = dec.Decode(&req)
		serve(fakeCall{kind: kind, hdr: hdr, req: req, dec: dec, st: st})
	}()
	return api
}

// fakeUpstreamClient answers the one stream with a captured reply and
// hands what the server wrote on it to the test.
func fakeUpstreamClient(t *testing.T, reply []byte) (*ClientAPI, <-chan [3]any) {
	t.Helper()
	got := make(chan [3]any, 1)
	api := fakeUpstream(t, func(c fakeCall) {
		got <- [3]any{c.kind, c.hdr, c.req}
		_, _ = c.st.Write(reply)
	})
	return api, got
}

// decodeAll decodes the msgpack objects of a fixture in turn.
func decodeAll(t *testing.T, name string) []map[string]any {
	t.Helper()
	dec := codec.NewDecoderBytes(fixture(t, name), Handle)
	var out []map[string]any
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return out
		}
		out = append(out, m)
	}
}

// get sends one HTTP GET through the API, as DialNode's caller does.
func get(t *testing.T, api *ClientAPI, path string) (*http.Response, string) {
	t.Helper()
	conn, err := api.Open()
	must.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: node\r\nConnection: close\r\n\r\n", path)
	must.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	must.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return resp, string(body)
}

// TestClientAPIStreamsLogsAsUpstreamsServerAsks checks that a logs request
// of our HTTP API reaches an upstream client as the streaming RPC its own
// servers send (captured: protocol byte, FileSystem.Logs header, the same
// request fields), and that the client's captured frame comes back as
// the JSON frame our API streams: `nomad alloc logs` through our servers.
func TestClientAPIStreamsLogsAsUpstreamsServerAsks(t *testing.T) {
	api, got := fakeUpstreamClient(t, fixture(t, "logs-reply.msgpack"))
	resp, body := get(t, api, "/v1/client/fs/logs/"+capturedAllocID+"?task=t&type=stdout&origin=start&namespace=default&region=global")
	must.Eq(t, http.StatusOK, resp.StatusCode, must.Sprint(body))

	want := decodeAll(t, "logs-request.msgpack")
	sent := <-got
	must.Eq(t, any(streamStreaming), sent[0])
	must.Eq(t, want[0], sent[1].(map[string]any))
	req := sent[2].(map[string]any)
	for _, k := range []string{"AllocID", "Task", "LogType", "Origin", "Offset", "Follow", "PlainText", "Namespace", "Region"} {
		must.Eq(t, want[1][k], req[k], must.Sprintf("request field %s", k))
	}
	frames := decodeAll(t, "logs-reply.msgpack")
	must.Eq(t, string(frames[1]["Payload"].(string)), body)
}

// TestClientAPICatsAFileAsPlainBytes checks that fs cat asks the upstream
// client for the file's plain bytes from the start, as upstream's servers
// do (captured FileSystem.Stream), and returns them as they are.
func TestClientAPICatsAFileAsPlainBytes(t *testing.T) {
	api, got := fakeUpstreamClient(t, fixture(t, "cat-reply.msgpack"))
	resp, body := get(t, api, "/v1/client/fs/cat/"+capturedAllocID+"?path=alloc/logs/t.stdout.0&namespace=default&region=global")
	must.Eq(t, http.StatusOK, resp.StatusCode, must.Sprint(body))
	must.Eq(t, "hello-from-task\nhello-from-task\n", body)

	want := decodeAll(t, "cat-request.msgpack")
	sent := <-got
	must.Eq(t, want[0], sent[1].(map[string]any))
	req := sent[2].(map[string]any)
	for _, k := range []string{"AllocID", "Path", "Origin", "Offset", "Follow", "PlainText", "Namespace"} {
		must.Eq(t, want[1][k], req[k], must.Sprintf("request field %s", k))
	}
}

// TestClientAPIRefusesWhatItDoesNotServe checks that a client route with
// no upstream translation (checks) is answered 501 naming the path, not
// forwarded as something else.
func TestClientAPIRefusesWhatItDoesNotServe(t *testing.T) {
	api, _ := fakeUpstreamClient(t, nil)
	resp, body := get(t, api, "/v1/client/allocation/"+capturedAllocID+"/checks")
	must.Eq(t, http.StatusNotImplemented, resp.StatusCode)
	must.StrContains(t, body, "/v1/client/allocation/"+capturedAllocID+"/checks is not served for upstream Nomad clients")
}
