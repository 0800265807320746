package agent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestParseConfig_Limits checks every key of the limits block parses in
// HCL and JSON, as upstream spells them.
func TestParseConfig_Limits(t *testing.T) {
	for name, src := range map[string]string{
		"agent.hcl": `limits {
  https_handshake_timeout   = "7s"
  http_max_conns_per_client = 50
  rpc_handshake_timeout     = "3s"
  rpc_max_conns_per_client  = 0
}`,
		"agent.json": `{"limits": {"https_handshake_timeout": "7s", "http_max_conns_per_client": 50,
  "rpc_handshake_timeout": "3s", "rpc_max_conns_per_client": 0}}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig(name, []byte(src))
			must.NoError(t, err)
			must.Eq(t, &Limits{
				HTTPSHandshakeTimeout: ptr(7 * time.Second),
				HTTPMaxConnsPerClient: ptr(50),
				RPCHandshakeTimeout:   ptr(3 * time.Second),
				RPCMaxConnsPerClient:  ptr(0),
			}, c.Limits)
		})
	}
}

// TestConfig_LimitsZeroDisables checks a 0 in a file wins over the
// default when merged: 0 is how an operator turns a limit off, and a
// merge that took it for "unset" would silently keep the limit.
func TestConfig_LimitsZeroDisables(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte(`limits {
  http_max_conns_per_client = 0
  rpc_handshake_timeout = "0s"
}`))
	must.NoError(t, err)
	got := DefaultConfig().Merge(c).connLimits()
	must.Eq(t, connLimits{
		HTTPSHandshakeTimeout: DefaultHTTPSHandshakeTimeout,
		HTTPMaxConnsPerClient: 0,
		RPCHandshakeTimeout:   0,
		RPCMaxConnsPerClient:  100,
	}, got)
}

// TestConfig_LimitsDefaults checks upstream's defaults apply with no
// block, and with no Limits at all (a Config built by hand).
func TestConfig_LimitsDefaults(t *testing.T) {
	want := connLimits{
		HTTPSHandshakeTimeout: 5 * time.Second, HTTPMaxConnsPerClient: 100,
		RPCHandshakeTimeout: 5 * time.Second, RPCMaxConnsPerClient: 100,
	}
	must.Eq(t, want, DefaultConfig().connLimits())
	must.Eq(t, want, (&Config{}).connLimits())
}

// TestParseConfig_LimitsBadValues checks bad values and unknown keys in
// the block are refused with the key and position named.
func TestParseConfig_LimitsBadValues(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"limits {\n  http_max_conns_per_client = -1\n}", "agent.hcl:2:31: limits.http_max_conns_per_client must be a whole number between 0 and"},
		{"limits {\n  rpc_handshake_timeout = \"-5s\"\n}", "agent.hcl:2:27: limits.rpc_handshake_timeout: invalid duration"},
		{"limits {\n  rpc_handshake_timeout = 5\n}", "limits.rpc_handshake_timeout"},
		{"limits {\n  http_max_conn_per_client = 5\n}", "agent.hcl:2:3"},
	} {
		_, err := ParseConfig("agent.hcl", []byte(tc.src))
		must.Error(t, err)
		must.StrContains(t, err.Error(), tc.want)
	}
}
