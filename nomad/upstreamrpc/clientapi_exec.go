package upstreamrpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/gorilla/websocket"
	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/nomad-edge/nomad/helper/wsclose"
)

// allocExecRequest is upstream's AllocExecRequest (Allocations.Exec).
type allocExecRequest struct {
	AllocID string
	Task    string
	Cmd     []string
	Tty     bool
	queryOptions
}

// Exec input, as the caller sends it over the websocket (our HTTP API's
// and upstream's JSON) and as upstream's servers pass it to the client
// after the request: ExecStreamingInput in msgpack, each message bare, not
// wrapped in a frame (captured: testdata/exec-request.msgpack).
type (
	wsExecInput struct {
		Stdin *struct {
			Data  []byte `json:"data,omitempty"`
			Close bool   `json:"close,omitempty"`
		} `json:"stdin,omitempty"`
		TTYSize *struct {
			Height int `json:"height,omitempty"`
			Width  int `json:"width,omitempty"`
		} `json:"tty_size,omitempty"`
	}
	execInput struct {
		Stdin   *execIO      `codec:"Stdin,omitempty"`
		TtySize *execTTYSize `codec:"TtySize,omitempty"`
	}
	execIO struct {
		Data  []byte `codec:"Data"`
		Close bool   `codec:"Close"`
	}
	execTTYSize struct {
		Height int `codec:"Height"`
		Width  int `codec:"Width"`
	}
)

// execUpgrader takes the websocket of an exec our server passed down the
// node's session: the server checked the caller's origin and token
// before it did.
var execUpgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func parseExecRequest(r *http.Request) (allocExecRequest, error) {
	q := r.URL.Query()
	req := allocExecRequest{AllocID: r.PathValue("alloc"), Task: q.Get("task"), queryOptions: newQueryOptions(r)}
	req.AllowStale = false // as upstream's servers send it
	if req.Task == "" {
		return req, errors.New("query parameter task: missing")
	}
	if v := q.Get("tty"); v != "" {
		tty, err := strconv.ParseBool(v)
		if err != nil {
			return req, fmt.Errorf("query parameter tty: %w", err)
		}
		req.Tty = tty
	}
	if err := json.Unmarshal([]byte(q.Get("command")), &req.Cmd); err != nil || len(req.Cmd) == 0 || req.Cmd[0] == "" {
		return req, fmt.Errorf("query parameter command %q: must be a non-empty JSON array of strings", q.Get("command"))
	}
	return req, nil
}

// exec runs a command beside the task on the upstream client: the
// caller's websocket is bridged to upstream's Allocations.Exec streaming
// RPC, input translated to msgpack, output frames (JSON already, in the
// shape our websocket carries) passed as text messages.
func (c *ClientAPI) exec(w http.ResponseWriter, r *http.Request) {
	req, err := parseExecRequest(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	st, dec, err := c.openStreaming("Allocations.Exec", &req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer st.Close()
	ws, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	b := &execBridge{ws: ws, tty: req.Tty}
	read := make(chan struct{})
	go func() {
		defer close(read)
		b.input(codec.NewEncoder(st, Handle))
		// The caller went away: the client ends the command when its
		// stream closes.
		st.Close()
	}()
	code, reason := b.output(dec)
	wsclose.CloseRead(ws, code, reason, read)
}

// execBridge is one exec: the caller's websocket and the stream to the
// upstream client.
type execBridge struct {
	ws  *websocket.Conn
	tty bool
}

// input passes the caller's frames to the client until the websocket
// closes: once the stream refuses them it only reads on, so that the
// caller's answer to the close frame ends it (wsclose.CloseRead).
func (b *execBridge) input(enc *codec.Encoder) {
	for {
		var in wsExecInput
		if err := b.ws.ReadJSON(&in); err != nil {
			return
		}
		if enc == nil {
			continue
		}
		var out execInput
		if in.Stdin != nil {
			out.Stdin = &execIO{Data: in.Stdin.Data, Close: in.Stdin.Close}
		}
		// Upstream's client stops reading a command's input when it is
		// sent a terminal size without a tty (observed from 1.6.5); ours
		// ignores the size, so it is not passed on.
		if in.TTYSize != nil && b.tty {
			out.TtySize = &execTTYSize{Height: in.TTYSize.Height, Width: in.TTYSize.Width}
		}
		if out.Stdin == nil && out.TtySize == nil {
			continue
		}
		if err := enc.Encode(&out); err != nil {
			enc = nil
		}
	}
}

// output passes the client's frames to the caller until the client ends
// the stream, and says how the websocket closes: normally, or with 1011
// and the client's error.
func (b *execBridge) output(dec *codec.Decoder) (code int, reason string) {
	for {
		var f streamFrame
		err := dec.Decode(&f)
		switch {
		case errors.Is(err, io.EOF):
			return websocket.CloseNormalClosure, ""
		case err != nil:
			return websocket.CloseInternalServerErr, "exec on the upstream client: " + err.Error()
		case f.Error != nil:
			return websocket.CloseInternalServerErr, f.Error.Message
		}
		if len(f.Payload) == 0 {
			continue
		}
		// The only writer of messages; close frames may be written
		// beside it (gorilla's rule).
		if err := b.ws.WriteMessage(websocket.TextMessage, f.Payload); err != nil {
			// The close frame will most likely not get through either.
			return websocket.CloseInternalServerErr, "writing to the caller: " + err.Error()
		}
	}
}
