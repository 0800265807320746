package nomad

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/nomad/upstreamrpc"
)

// TestClientSupportsDisconnectByItsOwnNumbering checks that an upstream
// client is judged by upstream's version of the reconnect path (1.3.0)
// and ours by ours: an upstream 1.2 client, whose version is far above
// ours, lacks the reconnect path and must go down, not disconnected.
func TestClientSupportsDisconnectByItsOwnNumbering(t *testing.T) {
	for _, tc := range []struct {
		version  string
		upstream bool
		want     bool
	}{
		{"1.6.5", true, true},
		{"1.3.0", true, true},
		{"1.2.16", true, false},
		{"", true, false},
		{MinDisconnectVersion.String(), false, true},
		{"0.0.1", false, false},
	} {
		n := &structs.Node{Attributes: map[string]string{"nomad.version": tc.version}}
		if tc.upstream {
			n.Attributes[upstreamrpc.AttrUpstream] = "true"
		}
		must.Eq(t, tc.want, clientSupportsDisconnect(n), must.Sprintf("version %q upstream %v", tc.version, tc.upstream))
	}
}
