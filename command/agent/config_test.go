package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// Every key an operator's upstream agent config may hold (of the ones we
// implement) must parse into the right field, or their config silently
// does nothing.
func TestParseConfig_AllKeys(t *testing.T) {
	src := `
name       = "edge-1"
region     = "eu"
datacenter = "site-7"
data_dir   = "/var/lib/nomad"
bind_addr  = "10.0.0.5"
log_level  = "WARN"

advertise {
  http = "192.168.1.5"
  rpc  = "192.168.1.5:4647"
}

ports {
  http = 5646
  rpc  = 5647
  serf = 5648
}

server {
  enabled                   = true
  bootstrap_expect          = 3
  heartbeat_grace           = "30s"
  min_heartbeat_ttl         = "15s"
  max_heartbeats_per_second = 25.5
  failover_heartbeat_ttl    = "10m"
  num_schedulers            = 4
}

client {
  enabled    = true
  servers    = ["10.0.0.1:4647", "10.0.0.2:4647"]
  node_class = "lte"
  node_pool  = "edge"
  meta {
    rack = "r1"
  }
}

plugin "raw_exec" {
  config {
    enabled = true
  }
}

plugin "mock_driver" {
  config {
    shutdown_periodic_after = 3
  }
}
`
	c, err := ParseConfig("agent.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, "edge-1", c.NodeName)
	must.Eq(t, "eu", c.Region)
	must.Eq(t, "site-7", c.Datacenter)
	must.Eq(t, "/var/lib/nomad", c.DataDir)
	must.Eq(t, "10.0.0.5", c.BindAddr)
	must.Eq(t, "WARN", c.LogLevel)
	must.Eq(t, &AdvertiseAddrs{HTTP: "192.168.1.5", RPC: "192.168.1.5:4647"}, c.AdvertiseAddrs)
	must.Eq(t, &Ports{HTTP: 5646, RPC: 5647, Serf: 5648}, c.Ports)
	must.Eq(t, &ServerConfig{
		Enabled:                true,
		BootstrapExpect:        3,
		HeartbeatGrace:         30 * time.Second,
		MinHeartbeatTTL:        15 * time.Second,
		MaxHeartbeatsPerSecond: 25.5,
		FailoverHeartbeatTTL:   10 * time.Minute,
		NumSchedulers:          4,
	}, c.Server)
	must.Eq(t, &ClientConfig{
		Enabled:   true,
		Servers:   []string{"10.0.0.1:4647", "10.0.0.2:4647"},
		NodeClass: "lte",
		NodePool:  "edge",
		Meta:      map[string]string{"rack": "r1"},
	}, c.Client)
	must.Eq(t, map[string]map[string]any{
		"raw_exec":    {"enabled": true},
		"mock_driver": {"shutdown_periodic_after": int64(3)},
	}, c.PluginConfigs())
}

// A typo or an unimplemented key must be an error pointing at it, not a
// setting silently left at its default.
func TestParseConfig_UnknownKeysAreErrors(t *testing.T) {
	src := `
server {
  enabled = true
  heartbeet_grace = "10s"
}
telemetry {
  foo = 1
}
`
	_, err := ParseConfig("agent.hcl", []byte(src))
	must.Error(t, err)
	must.StrContains(t, err.Error(), `agent.hcl:4:3: Unsupported argument`)
	must.StrContains(t, err.Error(), `heartbeet_grace`)
	must.StrContains(t, err.Error(), `agent.hcl:6:1: Unsupported block type`)
}

// Values of the wrong type are reported at the value, with the key named.
func TestParseConfig_BadValues(t *testing.T) {
	src := `
ports {
  http = "4646"
}
server {
  heartbeat_grace = "ten seconds"
  bootstrap_expect = 1.5
}
`
	_, err := ParseConfig("agent.hcl", []byte(src))
	must.Error(t, err)
	msg := err.Error()
	must.StrContains(t, msg, `agent.hcl:3:10: http must be a whole number`)
	must.StrContains(t, msg, `agent.hcl:6:21: heartbeat_grace: invalid duration "ten seconds"`)
	must.StrContains(t, msg, `agent.hcl:7:22: bootstrap_expect must be a whole number between 0 and 100`)
}

// Several -config files merge in order: later scalars win, maps and
// plugin blocks merge, and a role once enabled stays enabled.
func TestConfig_MergeOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		must.NoError(t, os.WriteFile(p, []byte(src), 0o600))
		return p
	}
	write("a.hcl", `
region = "one"
server { enabled = true }
client {
  meta { a = "1" }
}
plugin "raw_exec" {
  config { enabled = true }
}
`)
	write("b.json", `{"region": "two", "client": {"meta": {"b": "2"}}, "plugin": {"raw_exec": {"config": {"no_cgroups": true}}}}`)
	write("ignored.txt", `not = config`)

	fromDir, err := LoadConfigPath(dir)
	must.NoError(t, err)
	c := DefaultConfig().Merge(fromDir).Merge(&Config{Datacenter: "dc9"})
	must.Eq(t, "two", c.Region)
	must.Eq(t, "dc9", c.Datacenter)
	must.True(t, c.Server.Enabled)
	must.Eq(t, map[string]string{"a": "1", "b": "2"}, c.Client.Meta)
	must.Eq(t, map[string]any{"enabled": true, "no_cgroups": true}, c.PluginConfigs()["raw_exec"])

	// Merging never writes through to its inputs.
	must.Eq(t, "global", DefaultConfig().Region)
	must.Eq(t, map[string]string{"a": "1"}, mustParse(t, dir, "a.hcl").Client.Meta)
}

func mustParse(t *testing.T, dir, name string) *Config {
	t.Helper()
	c, err := ParseConfigFile(filepath.Join(dir, name))
	must.NoError(t, err)
	return c
}

// The dev config is a complete, valid agent: server and client on
// loopback with raw_exec enabled.
func TestDevConfig(t *testing.T) {
	c := DevConfig()
	must.NoError(t, c.Validate())
	must.True(t, c.Server.Enabled)
	must.True(t, c.Client.Enabled)
	must.Eq(t, "127.0.0.1", c.BindAddr)
	must.Eq(t, &Ports{HTTP: 4646, RPC: 4647, Serf: 4648}, c.Ports)
	must.Eq(t, map[string]any{"enabled": true}, c.PluginConfigs()["raw_exec"])
}

// Validation reports every problem of a merged config at once.
func TestConfig_Validate(t *testing.T) {
	c := DefaultConfig()
	c.LogLevel = "LOUD"
	err := c.Validate()
	must.Error(t, err)
	must.StrContains(t, err.Error(), "must enable the server or the client")
	must.StrContains(t, err.Error(), `invalid log level "LOUD"`)
	must.StrContains(t, err.Error(), "must specify a data directory")
}
