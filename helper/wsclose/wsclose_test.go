package wsclose

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"github.com/shoenig/test/must"
)

// TestTruncateFitsACloseFrame checks that a reason of any length, ASCII
// or multi-byte, fits a close frame's 123 bytes and stays valid UTF-8,
// and that a short one is kept whole: a longer one makes gorilla refuse
// the close frame, so the caller would lose the reason entirely.
func TestTruncateFitsACloseFrame(t *testing.T) {
	for _, reason := range []string{
		"",
		"short",
		strings.Repeat("a", MaxReason),
		strings.Repeat("a", MaxReason+1),
		strings.Repeat("é", 200),
		strings.Repeat("a", 119) + "日本語",
	} {
		got := Truncate(reason)
		must.LessEq(t, MaxReason, len(got), must.Sprintf("reason of %d bytes", len(reason)))
		must.True(t, utf8.ValidString(got), must.Sprintf("%q", got))
		if len(reason) <= MaxReason {
			must.Eq(t, reason, got)
		} else {
			must.StrHasSuffix(t, "...", got)
		}
		must.Eq(t, 2+len(got), len(Message(websocket.CloseInternalServerErr, reason)))
	}
}
