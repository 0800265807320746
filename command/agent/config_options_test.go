package agent

import (
	"testing"

	"github.com/shoenig/test/must"
)

// client.options keys are checked when the file is read: an unknown key,
// an upstream option this version cannot honour and a driver list naming
// no driver are each refused by name at the options map, so that none is
// accepted without effect; the keys it honours load.
func TestParseConfig_ClientOptionsChecked(t *testing.T) {
	_, err := ParseConfig("agent.hcl", []byte(`client {
  options = {
    "driver.denylist"       = "raw_exec,dockr"
    "fingerprint.allowlist" = "cpu"
  }
}
`))
	must.ErrorContains(t, err, `agent.hcl:2:13: client.options: "fingerprint.allowlist" is not supported by this version`)
	must.ErrorContains(t, err, `agent.hcl:2:13: client.options: driver.denylist names driver "dockr", which does not exist`)

	c, err := ParseConfig("agent.json", []byte(`{"client": {"options": {"driver.denylist": "raw_exec", "user.denylist": "root,admin"}}}`))
	must.NoError(t, err)
	must.Eq(t, "raw_exec", c.Client.Options["driver.denylist"])

	// A config built in code (not read from a file) is checked by Validate.
	cfg := DevConfig()
	cfg.Client.Options = map[string]string{"gc.interval": "1m"}
	must.ErrorContains(t, cfg.Validate(), `client.options: unknown option "gc.interval"`)
}

// A client's server_join.retry_join adds its addresses (with the RPC port
// where missing) to the servers the client reaches, instead of being
// stored and ignored; retry_interval and retry_max, which the client's own
// backoff replaces, are refused by name.
func TestParseConfig_ClientServerJoin(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte(`client {
  servers = ["10.0.0.1"]
  server_join {
    retry_join = ["10.0.0.2", "10.0.0.1:4647"]
  }
}
`))
	must.NoError(t, err)
	must.Eq(t, []string{"10.0.0.1:4647", "10.0.0.2:4647"}, c.Client.serverAddrs())

	_, err = ParseConfig("agent.hcl", []byte(`client {
  server_join {
    retry_join     = ["10.0.0.2"]
    retry_interval = "5s"
    retry_max      = 3
  }
}
`))
	must.ErrorContains(t, err, "agent.hcl:4:5: client.server_join.retry_interval is not supported for clients by this version")
	must.ErrorContains(t, err, "agent.hcl:5:5: client.server_join.retry_max is not supported for clients by this version")
}

// host_network blocks are read by name with their cidr, interface and
// reserved_ports, each checked where it is written; one without a cidr or
// an interface has no way to find its address and is refused.
func TestParseConfig_HostNetwork(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte(`client {
  host_network "public" {
    cidr           = "100.64.0.0/10"
    reserved_ports = "22,8000-8100"
  }
  host_network "lan" {
    interface = "eth1"
  }
}
`))
	must.NoError(t, err)
	must.Eq(t, []*HostNetworkConfig{
		{Name: "public", CIDR: "100.64.0.0/10", ReservedPorts: "22,8000-8100"},
		{Name: "lan", Interface: "eth1"},
	}, c.Client.HostNetworks)

	_, err = ParseConfig("agent.hcl", []byte(`client {
  host_network "a" {
    cidr = "10.0.0.0"
  }
  host_network "b" {
    reserved_ports = "22-"
  }
  host_network "a" {
    interface = "eth0"
  }
}
`))
	must.ErrorContains(t, err, `agent.hcl:3:12: client.host_network.a.cidr: "10.0.0.0" is not a CIDR block`)
	must.ErrorContains(t, err, `agent.hcl:6:22: client.host_network.b.reserved_ports: invalid port range "22-"`)
	must.ErrorContains(t, err, `client.host_network "b" needs a cidr or an interface`)
	must.ErrorContains(t, err, `agent.hcl:8:3: duplicate client.host_network "a" block`)
}
