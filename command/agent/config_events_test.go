package agent

import (
	"testing"

	"github.com/shoenig/test/must"
)

// server.event_buffer_size, upstream's key, sizes each server's event
// stream buffer; a value out of range is refused with its position, and
// unset keeps the server's default.
func TestParseConfig_EventBufferSize(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte("server {\n  event_buffer_size = 50\n}\n"))
	must.NoError(t, err)
	must.Eq(t, 50, c.Server.EventBufferSize)
	merged := DefaultConfig().Merge(c)
	must.Eq(t, 50, merged.Server.EventBufferSize)

	_, err = ParseConfig("agent.hcl", []byte("server {\n  event_buffer_size = -1\n}\n"))
	must.ErrorContains(t, err, "agent.hcl:2:")
	must.ErrorContains(t, err, "server.event_buffer_size must be a whole number between 0 and 1000000")

	must.Eq(t, 0, DefaultConfig().Server.EventBufferSize, must.Sprint("0: the server's default"))
}
