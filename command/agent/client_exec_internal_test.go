package agent

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/wsclose"
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
