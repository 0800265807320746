package upstreamrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"
)

// The allocation and node of the captured alloc stats, signal, restart,
// readat, node stats and exec RPCs.
const (
	capturedAllocID2 = "dcc7f5ae-0171-dcad-44b6-7ac7ff7c0de0"
	capturedNodeID   = "d3167499-dadc-b397-5b59-5f18401d0cd0"
)

// do sends one HTTP request through the API, as DialNode's caller does.
func do(t *testing.T, api *ClientAPI, method, path, body string) (*http.Response, string) {
	t.Helper()
	conn, err := api.Open()
	must.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: node\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", method, path, len(body), body)
	must.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	must.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	must.NoError(t, err)
	return resp, string(b)
}

// unaryAnswer answers a net/rpc call with the body of a captured reply
// (its second object), under the call's own sequence number, or with
// rpcErr.
func unaryAnswer(t *testing.T, c fakeCall, fixtureName, rpcErr string) {
	enc := codec.NewEncoder(c.st, Handle)
	_ = enc.Encode(map[string]any{"ServiceMethod": c.hdr["ServiceMethod"], "Seq": c.hdr["Seq"], "Error": rpcErr})
	if rpcErr != "" {
		_ = enc.Encode(nil)
		return
	}
	_ = enc.Encode(decodeAll(t, fixtureName)[1])
}

// TestClientAPIUnaryCallsAsUpstreamsServerMakesThem checks that alloc
// stats, signal, restart and node stats of our HTTP API reach an upstream
// client as the net/rpc calls its own servers make (captured: the method
// and the request's fields), and that the client's captured reply comes
// back as our API's JSON: `alloc status -stats`, `alloc signal`, `alloc
// restart` and `node status -stats` through our servers.
func TestClientAPIUnaryCallsAsUpstreamsServerMakesThem(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
		fields                   []string
		want                     func(t *testing.T, body string)
	}{
		{
			name: "stats", method: "GET", path: "/v1/client/allocation/" + capturedAllocID2 + "/stats?namespace=default&region=global",
			fields: []string{"AllocID", "Task", "Namespace", "Region", "AllowStale"},
			want: func(t *testing.T, body string) {
				var got struct {
					ResourceUsage struct{ MemoryStats struct{ RSS uint64 } }
					Tasks         map[string]struct{ Pids map[string]any }
				}
				must.NoError(t, json.Unmarshal([]byte(body), &got))
				must.Eq(t, 0x3a64000, got.ResourceUsage.MemoryStats.RSS)
				must.MapLen(t, 2, got.Tasks["t"].Pids)
			},
		},
		{
			name: "node-stats", method: "GET", path: "/v1/client/stats?node_id=" + capturedNodeID + "&namespace=default&region=global",
			fields: []string{"NodeID", "Namespace", "Region", "AllowStale"},
			want: func(t *testing.T, body string) {
				var got struct{ CPU []struct{ CPU string } }
				must.NoError(t, json.Unmarshal([]byte(body), &got))
				must.Len(t, 2, got.CPU)
				must.Eq(t, "cpu0", got.CPU[0].CPU)
			},
		},
		{
			name: "signal", method: "POST", path: "/v1/client/allocation/" + capturedAllocID2 + "/signal?namespace=default&region=global",
			body:   `{"Signal":"SIGUSR1","Task":"t"}`,
			fields: []string{"AllocID", "Task", "Signal", "Namespace", "Region", "AllowStale"},
			want:   func(t *testing.T, body string) { must.Eq(t, "{}\n", body) },
		},
		{
			name: "restart", method: "PUT", path: "/v1/client/allocation/" + capturedAllocID2 + "/restart?namespace=default&region=global",
			body:   `{"TaskName":"t"}`,
			fields: []string{"AllocID", "TaskName", "AllTasks", "Namespace", "Region", "AllowStale"},
			want:   func(t *testing.T, body string) { must.Eq(t, "{}\n", body) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := make(chan fakeCall, 1)
			api := fakeUpstream(t, func(c fakeCall) {
				sent <- c
				unaryAnswer(t, c, tc.name+"-reply.msgpack", "")
			})
			resp, body := do(t, api, tc.method, tc.path, tc.body)
			must.Eq(t, http.StatusOK, resp.StatusCode, must.Sprint(body))
			tc.want(t, body)

			want := decodeAll(t, tc.name+"-request.msgpack")
			c := <-sent
			must.Eq(t, streamRPC, c.kind)
			must.Eq(t, want[0]["ServiceMethod"], c.hdr["ServiceMethod"])
			for _, k := range tc.fields {
				must.Eq(t, want[1][k], c.req[k], must.Sprintf("request field %s", k))
			}
		})
	}
}

// TestClientAPIUnknownAllocationIs404 checks that an upstream client's
// "Unknown allocation" error (a string on its wire) is our API's 404, so
// `nomad alloc status -stats` on a gone allocation says so.
func TestClientAPIUnknownAllocationIs404(t *testing.T) {
	api := fakeUpstream(t, func(c fakeCall) {
		unaryAnswer(t, c, "", `Unknown allocation "`+capturedAllocID2+`"`)
	})
	resp, body := do(t, api, "GET", "/v1/client/allocation/"+capturedAllocID2+"/stats", "")
	must.Eq(t, http.StatusNotFound, resp.StatusCode)
	must.StrContains(t, body, "Unknown allocation")
}

// TestClientAPIRefusesBadInputByName checks that a request the client
// could not serve is refused here, naming what is wrong: node stats
// without a node, readat without a limit, a signal body that is not JSON,
// exec without a command.
func TestClientAPIRefusesBadInputByName(t *testing.T) {
	api := fakeUpstream(t, func(fakeCall) { t.Error("a bad request reached the client") })
	for path, want := range map[string]string{
		"GET /v1/client/stats": "node_id",
		"GET /v1/client/fs/readat/" + capturedAllocID2 + "?path=x&offset=0":       "limit",
		"POST /v1/client/allocation/" + capturedAllocID2 + "/signal":              "request body",
		"GET /v1/client/allocation/" + capturedAllocID2 + "/exec?task=t":          "command",
		"GET /v1/client/allocation/" + capturedAllocID2 + "/exec?command=[\"a\"]": "task",
	} {
		method, p, _ := strings.Cut(path, " ")
		body := ""
		if method == "POST" {
			body = "{not json"
		}
		resp, got := do(t, api, method, p, body)
		must.Eq(t, http.StatusBadRequest, resp.StatusCode, must.Sprint(path))
		must.StrContains(t, got, want, must.Sprint(path))
	}
}

// TestClientAPIReadsAtAsUpstreamsServerAsks checks that fs readat asks
// the upstream client for plain bytes from the offset, at most limit of
// them, not following (captured FileSystem.Stream), and returns them.
func TestClientAPIReadsAtAsUpstreamsServerAsks(t *testing.T) {
	api, got := fakeUpstreamClient(t, fixture(t, "readat-reply.msgpack"))
	resp, body := do(t, api, "GET", "/v1/client/fs/readat/"+capturedAllocID2+"?path=alloc/logs/t.stdout.0&offset=1&limit=4&namespace=default&region=global", "")
	must.Eq(t, http.StatusOK, resp.StatusCode, must.Sprint(body))
	must.Eq(t, "ello", body)
	want := decodeAll(t, "readat-request.msgpack")
	sent := <-got
	must.Eq(t, want[0], sent[1].(map[string]any))
	req := sent[2].(map[string]any)
	for _, k := range []string{"AllocID", "Path", "Origin", "Offset", "Limit", "Follow", "PlainText", "Namespace"} {
		must.Eq(t, want[1][k], req[k], must.Sprintf("request field %s", k))
	}
}

// dialExec opens an exec websocket through the API, as our server's proxy
// does over the node's session.
func dialExec(t *testing.T, api *ClientAPI, query string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{NetDialContext: func(context.Context, string, string) (net.Conn, error) { return api.Open() }}
	ws, resp, err := d.Dial("ws://node/v1/client/allocation/"+capturedAllocID2+"/exec?"+query, nil)
	must.NoError(t, err, must.Sprintf("response %v", resp))
	t.Cleanup(func() { ws.Close() })
	return ws
}

// readUntilClose reads the websocket's messages until its close frame.
func readUntilClose(t *testing.T, ws *websocket.Conn) ([]string, *websocket.CloseError) {
	t.Helper()
	var msgs []string
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			must.True(t, errors.As(err, &ce), must.Sprintf("error %v", err))
			return msgs, ce
		}
		msgs = append(msgs, string(b))
	}
}

// TestClientAPIExecBridgesTheWebsocket checks that an exec websocket
// reaches an upstream client as its servers' Allocations.Exec (captured:
// the request, then each input as bare msgpack), a terminal size without
// a tty held back (upstream's client stops reading input after one), and
// that the client's output frames come back as our websocket's messages,
// closed normally after the exit: `nomad alloc exec` through our servers.
func TestClientAPIExecBridgesTheWebsocket(t *testing.T) {
	want := decodeAll(t, "exec-request.msgpack")
	sent := make(chan []map[string]any, 1)
	reply := decodeAll(t, "exec-reply.msgpack")
	api := fakeUpstream(t, func(c fakeCall) {
		// The acknowledgement first, as upstream's client sends it, then
		// the output once the input is in.
		enc := codec.NewEncoder(c.st, Handle)
		_ = enc.Encode(reply[0])
		got := []map[string]any{c.hdr, c.req}
		for len(got) < len(want) {
			var in map[string]any
			if err := c.dec.Decode(&in); err != nil {
				break
			}
			got = append(got, in)
		}
		sent <- got
		for _, f := range reply[1:] {
			_ = enc.Encode(f)
		}
	})
	ws := dialExec(t, api, "task=t&tty=false&namespace=default&region=global&command="+
		url.QueryEscape(`["/bin/sh","-c","echo o; read x; echo got-$x; exit 3"]`))
	must.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte(`{"tty_size":{"height":40,"width":100}}`)))
	must.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte(`{"stdin":{"data":"ZWNobyBmcm9tLXN0ZGluCg=="}}`)))
	must.NoError(t, ws.WriteMessage(websocket.TextMessage, []byte(`{"stdin":{"close":true}}`)))

	got := <-sent
	must.Eq(t, want[0], got[0])
	for _, k := range []string{"AllocID", "Task", "Cmd", "Tty", "Namespace", "Region", "AllowStale"} {
		must.Eq(t, want[1][k], got[1][k], must.Sprintf("request field %s", k))
	}
	for i := 2; i < len(want); i++ {
		wantIn, gotIn := want[i]["Stdin"].(map[string]any), got[i]["Stdin"].(map[string]any)
		must.Eq(t, wantIn["Data"], gotIn["Data"], must.Sprintf("input %d", i))
		must.Eq(t, wantIn["Close"], gotIn["Close"], must.Sprintf("input %d", i))
		must.Nil(t, got[i]["TtySize"], must.Sprintf("input %d", i))
	}

	msgs, ce := readUntilClose(t, ws)
	must.Eq(t, websocket.CloseNormalClosure, ce.Code)
	must.Len(t, 5, msgs)
	must.Eq(t, `{"stdout":{"data":"Z290LWVjaG8gZnJvbS1zdGRpbgo="}}`, msgs[1])
	must.Eq(t, `{"exited":true,"result":{"exit_code":3}}`, msgs[4])
}

// TestClientAPIExecErrorClosesWithItsReason checks that an exec the
// upstream client fails (an error frame, a long message) closes the
// websocket with 1011 and the start of the message, as our own client's
// exec does: the caller learns why, not just that the connection dropped.
func TestClientAPIExecErrorClosesWithItsReason(t *testing.T) {
	msg := "rpc error: code = Unknown desc = failed to start command: fork/exec " + strings.Repeat("/no/such", 30) + ": no such file or directory"
	api := fakeUpstream(t, func(c fakeCall) {
		enc := codec.NewEncoder(c.st, Handle)
		_ = enc.Encode(map[string]any{"Error": ""})
		_ = enc.Encode(map[string]any{"Error": map[string]any{"Code": 500, "Message": msg}})
	})
	ws := dialExec(t, api, "task=t&command="+url.QueryEscape(`["/no/such"]`))
	_, ce := readUntilClose(t, ws)
	must.Eq(t, websocket.CloseInternalServerErr, ce.Code)
	must.StrHasPrefix(t, "rpc error: code = Unknown desc = failed to start command", ce.Text)
}

// TestClientAPIExecErrorSurvivesTheProxy checks that an exec the upstream
// client fails at once brings its reason to the caller through a reverse
// proxy that ends when either direction does (httputil's, as our servers
// pass the websocket on), every time: the bridge keeps the connection
// until the caller answers its close frame. It closed right after the
// frame, and about one exec in fifty lost it on the way: `nomad alloc exec
// ... /no/such/command` printed "unexpected EOF" instead of why.
func TestClientAPIExecErrorSurvivesTheProxy(t *testing.T) {
	msg := "rpc error: code = Unknown desc = failed to start command: fork/exec /no/such: no such file or directory"
	for i := range 300 {
		api := fakeUpstream(t, func(c fakeCall) {
			enc := codec.NewEncoder(c.st, Handle)
			_ = enc.Encode(map[string]any{"Error": ""})
			_ = enc.Encode(map[string]any{"Error": map[string]any{"Code": 500, "Message": msg}})
		})
		proxy := httptest.NewServer(&httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "node" },
			Transport: &http.Transport{
				DialContext:       func(context.Context, string, string) (net.Conn, error) { return api.Open() },
				DisableKeepAlives: true,
			},
		})
		u := "ws" + strings.TrimPrefix(proxy.URL, "http") + "/v1/client/allocation/" + capturedAllocID2 + "/exec?task=t&command=" + url.QueryEscape(`["/no/such"]`)
		ws, resp, err := websocket.DefaultDialer.Dial(u, nil)
		must.NoError(t, err, must.Sprintf("exec %d: response %v", i, resp))
		// What `nomad alloc exec` sends without a terminal: the end of
		// its input, at once.
		must.NoError(t, ws.WriteJSON(map[string]any{"stdin": map[string]any{"close": true}}))
		_, _, err = ws.ReadMessage()
		var ce *websocket.CloseError
		must.True(t, errors.As(err, &ce), must.Sprintf("exec %d: %v", i, err))
		must.Eq(t, websocket.CloseInternalServerErr, ce.Code, must.Sprintf("exec %d: %v", i, err))
		must.Eq(t, msg, ce.Text)
		ws.Close()
		proxy.Close()
		api.Close()
	}
}
