package agent

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/wsclose"
	"github.com/nomad-edge/nomad/testutil"
)

// TestExecFailSendsALongReasonCut checks that an exec that fails with a
// message longer than a close frame holds (a long path in an exec error)
// still closes the websocket with 1011 and the start of the message:
// uncut, the close frame is refused and the caller sees only a dropped
// connection.
func TestExecFailSendsALongReasonCut(t *testing.T) {
	msg := "failed to exec into task: " + strings.Repeat("/very/long/path", 20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := execUpgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		(&execSession{conn: conn}).fail(msg)
	}))
	defer srv.Close()
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	must.NoError(t, err)
	defer conn.Close()
	_, _, err = conn.ReadMessage()
	var ce *websocket.CloseError
	must.True(t, errors.As(err, &ce), must.Sprintf("error %v", err))
	must.Eq(t, websocket.CloseInternalServerErr, ce.Code)
	must.Eq(t, wsclose.Truncate(msg), ce.Text)
	must.StrHasPrefix(t, "failed to exec into task: /very/long/path", ce.Text)
}

// TestExecFailReachesTheCallerThroughTheProxy checks that an exec that
// fails at once (a command that does not exist) brings its reason through
// the proxy a server puts between the caller and the node, every time: the
// node keeps the websocket until the caller answers its close frame. It
// closed right after the frame, and the proxy, which ends when either
// direction does, could drop the frame: the caller saw "unexpected EOF".
func TestExecFailReachesTheCallerThroughTheProxy(t *testing.T) {
	const msg = "failed to exec into task: fork/exec /no/such: no such file or directory"
	node := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := execUpgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close() // as allocExec: whatever the session did, it ends here
		(&execSession{conn: conn}).fail(msg)
	})}
	// The node's session streams are in-memory and synchronous, as
	// MemNet's connections.
	mem := testutil.NewMemNet()
	t.Cleanup(mem.Close)
	l, err := mem.Listen("10.0.0.2:4646")
	must.NoError(t, err)
	go func() { _ = node.Serve(l) }()
	t.Cleanup(func() { node.Close() })
	s := &HTTPServer{logger: hclog.NewNullLogger()}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.proxy(w, r, func(ctx context.Context) (net.Conn, error) {
			return mem.Dialer("10.0.0.1").DialContext(ctx, "tcp", "10.0.0.2:4646")
		}, true)
	}))
	defer srv.Close()
	for i := range 300 {
		conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
		must.NoError(t, err)
		// What `nomad alloc exec` sends without a terminal: the end of
		// its input, at once.
		must.NoError(t, conn.WriteJSON(execInput{Stdin: &execIO{Close: true}}))
		_, _, err = conn.ReadMessage()
		var ce *websocket.CloseError
		must.True(t, errors.As(err, &ce), must.Sprintf("exec %d: %v", i, err))
		must.Eq(t, msg, ce.Text, must.Sprintf("exec %d: %v", i, err))
		conn.Close()
	}
}
