package agent_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/helper/pool"
)

// TestAgent_LimitsBlockApplies checks the limits block reaches both
// listeners of a running agent: over http_max_conns_per_client an IP gets
// a 429, over rpc_max_conns_per_client its connection is closed, so an
// operator's setting is the one in force.
func TestAgent_LimitsBlockApplies(t *testing.T) {
	five := 5
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.Limits = &agent.Limits{HTTPMaxConnsPerClient: &five, RPCMaxConnsPerClient: &five}
	})
	for name, tc := range map[string]struct {
		addr  string
		first []byte
		want  string
	}{
		"http": {a.Agent.HTTPAddr().String(), nil, "HTTP/1.1 429 Too Many Requests"},
		"rpc":  {a.Server().RPCAddr().String(), []byte{pool.RPCMultiplex}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.9")}, Timeout: 5 * time.Second}
			for range five {
				c, err := d.Dial("tcp", tc.addr)
				must.NoError(t, err)
				t.Cleanup(func() { c.Close() })
				if tc.first != nil {
					_, err = c.Write(tc.first)
					must.NoError(t, err)
				}
			}
			over, err := d.Dial("tcp", tc.addr)
			must.NoError(t, err)
			defer over.Close()
			start := time.Now()
			_ = over.SetReadDeadline(start.Add(3 * time.Second))
			got, err := io.ReadAll(over)
			must.NoError(t, err, must.Sprint("the connection over the limit was not closed"))
			// At once, not by the 5s handshake timeout.
			must.Less(t, 2*time.Second, time.Since(start))
			must.StrHasPrefix(t, tc.want, string(got))
		})
	}
}
