// Package wsclose builds websocket close frames whose reason fits the
// protocol: a close frame is a control frame of at most 125 bytes, two of
// which carry the code (RFC 6455, 5.5), so a reason (an error message
// from a command or a node) is cut to 123 bytes, at a UTF-8 boundary so
// the peer still reads valid text.
package wsclose

import (
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

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
