// Package wsclose ends websockets as the protocol asks. A close frame is
// a control frame of at most 125 bytes, two of which carry the code (RFC
// 6455, 5.5), so a reason (an error message from a command or a node) is
// cut to 123 bytes, at a UTF-8 boundary so the peer still reads valid
// text. And the end that sends the first close frame keeps the connection
// until the peer's close frame answers it (7.1.1): a connection closed
// right after the frame can lose it on the way, as a reverse proxy does
// when one direction ends before the other has passed on what it read,
// and the caller sees an abnormal closure ("unexpected EOF") instead of
// the reason.
package wsclose

import (
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Deadline bounds each step of a close: the write of the close frame to
// a peer that stopped reading, and the wait for its answer.
const Deadline = 5 * time.Second

// Close ends ws, which no other goroutine reads: the close frame with
// code and reason, then what the peer sends read and dropped until its
// close frame or the connection's end, or Deadline, then the connection
// closed.
func Close(ws *websocket.Conn, code int, reason string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, _, err := ws.NextReader(); err != nil {
				return
			}
		}
	}()
	CloseRead(ws, code, reason, done)
}

// CloseRead ends ws whose reader is another goroutine, which closes done
// once a read fails (the peer's close frame makes gorilla's reads fail):
// the close frame with code and reason, then that reader's end awaited,
// for Deadline at most, then the connection closed. The reader must keep
// reading until a read fails.
func CloseRead(ws *websocket.Conn, code int, reason string, done <-chan struct{}) {
	defer ws.Close()
	// WriteControl may run beside the other writers (gorilla's rule).
	if err := ws.WriteControl(websocket.CloseMessage, Message(code, reason), time.Now().Add(Deadline)); err != nil {
		return
	}
	_ = ws.SetReadDeadline(time.Now().Add(Deadline))
	t := time.NewTimer(Deadline)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C: // the reader is stuck elsewhere: closing ends it
	}
}

// MaxReason is the longest reason a close frame carries, in bytes.
const MaxReason = 123

// Message is the payload of a close frame with code and reason, the
// reason cut to MaxReason bytes (gorilla refuses a longer control frame,
// and the peer would see the connection drop with no reason at all).
func Message(code int, reason string) []byte {
	return websocket.FormatCloseMessage(code, Truncate(reason))
}

// Truncate cuts reason to at most MaxReason bytes without splitting a
// UTF-8 sequence; a longer reason ends in "..." to say it was cut.
func Truncate(reason string) string {
	if len(reason) <= MaxReason {
		return reason
	}
	const more = "..."
	cut := MaxReason - len(more)
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut] + more
}
