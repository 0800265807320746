package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad"
)

// allKeysHCL sets every key the agent implements, so that an operator's
// upstream config never silently does nothing.
const allKeysHCL = `
name                        = "edge-1"
region                      = "eu"
datacenter                  = "site-7"
data_dir                    = "/var/lib/nomad"
bind_addr                   = "10.0.0.5"
log_level                   = "WARN"
disable_update_check        = true
disable_anonymous_signature = true
leave_on_interrupt          = true
leave_on_terminate          = true

addresses {
  http = "127.0.0.1"
  rpc  = "10.0.0.6"
  serf = "10.0.0.7"
}

advertise {
  http = "192.168.1.5"
  rpc  = "192.168.1.5:4647"
  serf = "192.168.1.5:5648"
}

ports {
  http = 5646
  rpc  = 5647
  serf = 5648
}

server {
  enabled                   = true
  bootstrap_expect          = 3
  data_dir                  = "/srv/nomad-server"
  heartbeat_grace           = "30s"
  min_heartbeat_ttl         = "15s"
  max_heartbeats_per_second = 25.5
  failover_heartbeat_ttl    = "10m"
  num_schedulers            = 4
  raft_protocol             = 3
  raft_multiplier           = 5
  node_gc_threshold         = "48h"
  eval_gc_threshold         = "2h"
  job_gc_threshold          = "8h"
  deployment_gc_threshold   = "30m"
  server_join {
    retry_join     = ["10.0.0.1", "10.0.0.2:4648"]
    retry_interval = "15s"
    retry_max      = 3
    start_join     = ["10.0.0.3"]
  }
}

client {
  enabled           = true
  servers           = ["10.0.0.1:4647", "10.0.0.2"]
  node_class        = "lte"
  node_pool         = "edge"
  network_interface = "wwan0"
  bridge_network_name         = "br-edge"
  bridge_network_subnet       = "10.77.0.0/20"
  bridge_network_hairpin_mode = true
  cni_path                    = "/opt/cni/bin:/usr/lib/cni"
  cni_config_dir              = "/etc/cni/net.d"
  meta {
    rack = "r1"
  }
  options = {
    "driver.allowlist" = "raw_exec"
  }
  server_join {
    retry_join = ["10.0.0.1:4647"]
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

// allKeysJSON is allKeysHCL in HCL's JSON form, which upstream accepts too.
const allKeysJSON = `{
  "name": "edge-1", "region": "eu", "datacenter": "site-7",
  "data_dir": "/var/lib/nomad", "bind_addr": "10.0.0.5", "log_level": "WARN",
  "disable_update_check": true, "disable_anonymous_signature": true,
  "leave_on_interrupt": true, "leave_on_terminate": true,
  "addresses": {"http": "127.0.0.1", "rpc": "10.0.0.6", "serf": "10.0.0.7"},
  "advertise": {"http": "192.168.1.5", "rpc": "192.168.1.5:4647", "serf": "192.168.1.5:5648"},
  "ports": {"http": 5646, "rpc": 5647, "serf": 5648},
  "server": {
    "enabled": true, "bootstrap_expect": 3, "data_dir": "/srv/nomad-server",
    "heartbeat_grace": "30s", "min_heartbeat_ttl": "15s",
    "max_heartbeats_per_second": 25.5, "failover_heartbeat_ttl": "10m",
    "num_schedulers": 4, "raft_protocol": 3, "raft_multiplier": 5,
    "node_gc_threshold": "48h", "eval_gc_threshold": "2h", "job_gc_threshold": "8h",
    "deployment_gc_threshold": "30m",
    "server_join": {
      "retry_join": ["10.0.0.1", "10.0.0.2:4648"], "retry_interval": "15s",
      "retry_max": 3, "start_join": ["10.0.0.3"]
    }
  },
  "client": {
    "enabled": true, "servers": ["10.0.0.1:4647", "10.0.0.2"],
    "node_class": "lte", "node_pool": "edge", "network_interface": "wwan0",
    "bridge_network_name": "br-edge", "bridge_network_subnet": "10.77.0.0/20",
    "bridge_network_hairpin_mode": true, "cni_path": "/opt/cni/bin:/usr/lib/cni",
    "cni_config_dir": "/etc/cni/net.d",
    "meta": {"rack": "r1"},
    "options": {"driver.allowlist": "raw_exec"},
    "server_join": {"retry_join": ["10.0.0.1:4647"]}
  },
  "plugin": {
    "raw_exec": {"config": {"enabled": true}},
    "mock_driver": {"config": {"shutdown_periodic_after": 3}}
  }
}`

func wantAllKeys() *Config {
	return &Config{
		NodeName:                  "edge-1",
		Region:                    "eu",
		Datacenter:                "site-7",
		DataDir:                   "/var/lib/nomad",
		BindAddr:                  "10.0.0.5",
		LogLevel:                  "WARN",
		DisableUpdateCheck:        true,
		DisableAnonymousSignature: true,
		LeaveOnInterrupt:          true,
		LeaveOnTerminate:          true,
		Addresses:                 &Addresses{HTTP: "127.0.0.1", RPC: "10.0.0.6", Serf: "10.0.0.7"},
		AdvertiseAddrs:            &AdvertiseAddrs{HTTP: "192.168.1.5", RPC: "192.168.1.5:4647", Serf: "192.168.1.5:5648"},
		Ports:                     &Ports{HTTP: 5646, RPC: 5647, Serf: 5648},
		Server: &ServerConfig{
			Enabled:         true,
			BootstrapExpect: 3,
			DataDir:         "/srv/nomad-server",
			ServerJoin: &ServerJoin{
				RetryJoin:     []string{"10.0.0.1", "10.0.0.2:4648"},
				RetryInterval: 15 * time.Second,
				RetryMax:      3,
				StartJoin:     []string{"10.0.0.3"},
			},
			HeartbeatGrace:         30 * time.Second,
			MinHeartbeatTTL:        15 * time.Second,
			MaxHeartbeatsPerSecond: 25.5,
			FailoverHeartbeatTTL:   10 * time.Minute,
			NumSchedulers:          4,
			RaftProtocol:           3,
			RaftMultiplier:         5,
			NodeGCThreshold:        48 * time.Hour,
			EvalGCThreshold:        2 * time.Hour,
			JobGCThreshold:         8 * time.Hour,
			DeploymentGCThreshold:  30 * time.Minute,
		},
		Client: &ClientConfig{
			Enabled: true,
			// A server without a port gets the RPC port, as upstream.
			Servers:          []string{"10.0.0.1:4647", "10.0.0.2:4647"},
			ServerJoin:       &ServerJoin{RetryJoin: []string{"10.0.0.1:4647"}},
			NodeClass:        "lte",
			NodePool:         "edge",
			Meta:             map[string]string{"rack": "r1"},
			Options:          map[string]string{"driver.allowlist": "raw_exec"},
			NetworkInterface: "wwan0",

			BridgeNetworkName:        "br-edge",
			BridgeNetworkSubnet:      "10.77.0.0/20",
			BridgeNetworkHairpinMode: true,
			CNIPath:                  "/opt/cni/bin:/usr/lib/cni",
			CNIConfigDir:             "/etc/cni/net.d",
		},
		Plugins: []*PluginConfig{
			{Name: "raw_exec", Config: map[string]any{"enabled": true}},
			{Name: "mock_driver", Config: map[string]any{"shutdown_periodic_after": int64(3)}},
		},
	}
}

// Every implemented key parses into its field, in HCL and in JSON alike.
func TestParseConfig_AllKeys(t *testing.T) {
	for name, src := range map[string]string{"agent.hcl": allKeysHCL, "agent.json": allKeysJSON} {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig(name, []byte(src))
			must.NoError(t, err)
			want := wantAllKeys()
			must.Eq(t, want.PluginConfigs(), c.PluginConfigs())
			c.Plugins, want.Plugins = nil, nil // JSON objects have no order
			must.Eq(t, want, c)
		})
	}
}

// vault { enabled = false } is accepted, as the disabled integration it
// is here (upstream configs carry it); enabled = true and every other
// vault key are refused by name, at their position.
func TestParseConfig_VaultDisabled(t *testing.T) {
	for name, src := range map[string]string{
		"agent.hcl":  "vault {\n  enabled = false\n}\n",
		"empty.hcl":  "vault {}\n",
		"agent.json": `{"vault": {"enabled": false}}`,
	} {
		_, err := ParseConfig(name, []byte(src))
		must.NoError(t, err, must.Sprint(name))
	}
	_, err := ParseConfig("agent.hcl", []byte("vault {\n  enabled = true\n  address = \"https://vault:8200\"\n}\n"))
	must.Error(t, err)
	must.StrContains(t, err.Error(), "agent.hcl:2:3: vault.enabled = true is not supported by this version; there is no Vault integration")
	must.StrContains(t, err.Error(), "agent.hcl:3:3: vault.address is not supported by this version; there is no Vault integration")
}

// A file written as JSON is read as JSON whatever its name, as upstream's
// parser tells them apart by content: operators keep JSON configs as
// agent.conf or agent.hcl, which were parsed as HCL and failed at 1:1.
func TestParseConfig_JSONByContent(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"agent.conf", "agent.hcl", "agent"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			must.NoError(t, os.WriteFile(path, []byte("\n  "+allKeysJSON), 0o600))
			c, err := LoadConfigPath(path)
			must.NoError(t, err)
			want := wantAllKeys()
			must.Eq(t, want.PluginConfigs(), c.PluginConfigs())
			c.Plugins, want.Plugins = nil, nil
			must.Eq(t, want, c)
		})
	}
	// Errors in such a file point into it as JSON.
	_, err := ParseConfig("agent.conf", []byte(`{"no_such_key": 1}`))
	must.ErrorContains(t, err, `agent.conf:1:2: Extraneous JSON object property; No argument or block type is named "no_such_key"`)
	// HCL is still HCL.
	c, err := ParseConfig("agent.conf", []byte(`name = "x"`))
	must.NoError(t, err)
	must.Eq(t, "x", c.NodeName)
}

// meta and options take both of upstream's forms; only the map attribute
// can hold dotted keys in HCL2. Numbers and bools become strings.
func TestParseConfig_MapForms(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte(`
client {
  meta {
    rack  = "r1"
    floor = 3
    edge  = true
  }
  options = { "user.denylist" = "root" }
}
`))
	must.NoError(t, err)
	must.Eq(t, map[string]string{"rack": "r1", "floor": "3", "edge": "true"}, c.Client.Meta)
	must.Eq(t, map[string]string{"user.denylist": "root"}, c.Client.Options)

	_, err = ParseConfig("agent.hcl", []byte("client {\n  meta = { rack = [\"a\"] }\n}\n"))
	must.ErrorContains(t, err, "agent.hcl:2:10: client.meta.rack must be a string, not tuple")
}

// Upstream's deprecated server-level join keys still work, and land in
// server_join; mixing both forms is ambiguous and refused.
func TestParseConfig_DeprecatedServerJoinKeys(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte(`
server {
  retry_join     = ["10.0.0.1"]
  retry_interval = "5s"
  retry_max      = 2
}
`))
	must.NoError(t, err)
	must.Eq(t, &ServerJoin{RetryJoin: []string{"10.0.0.1"}, RetryInterval: 5 * time.Second, RetryMax: 2}, c.Server.ServerJoin)

	_, err = ParseConfig("agent.hcl", []byte(`
server {
  retry_join = ["10.0.0.1"]
  server_join {
    retry_join = ["10.0.0.2"]
  }
}
`))
	must.ErrorContains(t, err, "agent.hcl:3:3: server.retry_join and server.server_join cannot both be set")
}

// A relative data_dir is made absolute when loaded, so later chdirs and
// subprocesses cannot change which directory it names.
func TestParseConfig_RelativeDataDir(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte("data_dir = \"state\"\nserver {\n  data_dir = \"./srv\"\n}\n"))
	must.NoError(t, err)
	wd, err := os.Getwd()
	must.NoError(t, err)
	must.Eq(t, filepath.Join(wd, "state"), c.DataDir)
	must.Eq(t, filepath.Join(wd, "srv"), c.Server.DataDir)
}

// A typo is an error pointing at it, with HCL's suggestion, not a setting
// silently left at its default.
func TestParseConfig_UnknownKeysAreErrors(t *testing.T) {
	src := `
server {
  enabled = true
  heartbeet_grace = "10s"
}
clinet {
}
`
	_, err := ParseConfig("agent.hcl", []byte(src))
	must.Error(t, err)
	must.StrContains(t, err.Error(), `agent.hcl:4:3: Unsupported argument; An argument named "heartbeet_grace" is not expected here. Did you mean "heartbeat_grace"?`)
	must.StrContains(t, err.Error(), `agent.hcl:6:1: Unsupported block type; Blocks of type "clinet" are not expected here. Did you mean "client"?`)
}

// Upstream keys this version cannot honour are refused by name, at their
// position, so the operator can tell them from a typo; they are never
// silently accepted.
func TestParseConfig_UnsupportedRefusedByName(t *testing.T) {
	hclSrc := `
enable_syslog = true
tls {
  rpc_upgrade_mode = true
}
server {
  enabled = true
  non_voting_server = true
}
client {
  state_dir = "/tmp/x"
  gc_volumes_on_node_gc = true
  server_join {
    start_join = ["10.0.0.1"]
  }
}
`
	_, err := ParseConfig("agent.hcl", []byte(hclSrc))
	must.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"agent.hcl:2:1: enable_syslog is not supported by this version",
		"agent.hcl:4:3: tls.rpc_upgrade_mode is not supported by this version; a server with tls.rpc refuses plaintext",
		"agent.hcl:8:3: server.non_voting_server is not supported by this version",
		"agent.hcl:11:3: client.state_dir is not supported by this version",
		"agent.hcl:12:3: client.gc_volumes_on_node_gc is not supported by this version",
		"agent.hcl:14:5: client.server_join.start_join is not supported for clients, as upstream; use retry_join",
	} {
		must.StrContains(t, msg, want)
	}
	must.StrNotContains(t, msg, "Unsupported argument")
	must.StrNotContains(t, msg, "Unsupported block type")
	// In file order, whatever order the keys were checked in.
	must.Less(t, strings.Index(msg, "client.state_dir"), strings.Index(msg, "enable_syslog"))

	_, err = ParseConfig("agent.json", []byte(`{"vault": {"enabled": true}, "server": {"raft_boltdb": {"no_freelist_sync": true}}}`))
	must.Error(t, err)
	must.StrContains(t, err.Error(), "agent.json:1:12: vault.enabled = true is not supported by this version; there is no Vault integration")
	must.Error(t, err)
	must.StrContains(t, err.Error(), "agent.json:1:41: server.raft_boltdb is not supported by this version")
	must.StrNotContains(t, err.Error(), "Unsupported argument")
}

// Values of the wrong type or out of range are reported at the value, with
// the key named in full.
func TestParseConfig_BadValues(t *testing.T) {
	src := `
ports {
  http = "4646"
}
bind_addr = "{{ GetPrivateIP }}"
addresses {
  http = "localhost"
}
server {
  heartbeat_grace  = "ten seconds"
  bootstrap_expect = 1.5
  raft_protocol    = 2
  raft_multiplier  = 11
  server_join {
    retry_join = ["provider=aws tag_key=nomad"]
    retry_max  = -1
  }
}
client {
  servers = "10.0.0.1"
  enabled = "yes"
}
`
	_, err := ParseConfig("agent.hcl", []byte(src))
	must.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		`agent.hcl:3:10: ports.http must be a whole number, not string`,
		`agent.hcl:5:13: bind_addr: go-sockaddr templates ("{{ GetPrivateIP }}") are not supported by this version; give an IP address`,
		`agent.hcl:7:10: addresses.http must be an IP address, not "localhost"`,
		`agent.hcl:10:22: server.heartbeat_grace: invalid duration "ten seconds"`,
		`agent.hcl:11:22: server.bootstrap_expect must be a whole number between 0 and 100`,
		`agent.hcl:12:22: server.raft_protocol 2 is not supported by this version: only raft protocol 3 is`,
		`agent.hcl:13:22: server.raft_multiplier must be between 1 and 10, not 11`,
		`agent.hcl:15:18: server.server_join.retry_join: cloud auto-join ("provider=aws tag_key=nomad") is not supported by this version`,
		`agent.hcl:16:18: server.server_join.retry_max must be a whole number between 0 and`,
		`agent.hcl:20:13: client.servers must be a list of strings, not string`,
		`agent.hcl:21:13: client.enabled must be true or false, not string`,
	} {
		must.StrContains(t, msg, want)
	}
}

// Several -config files merge in order, as upstream: later scalars win,
// client servers accumulate, server_join lists are replaced, maps and
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
server {
  enabled = true
  server_join {
    retry_join = ["10.0.0.1", "10.0.0.2"]
    retry_max  = 5
  }
}
client {
  servers = ["10.0.0.1:4647"]
  meta { a = "1" }
  options = { "driver.denylist" = "raw_exec" }
}
plugin "raw_exec" {
  config { enabled = true }
}
`)
	write("b.json", `{"region": "two", "server": {"enabled": false, "server_join": {"retry_join": ["10.0.0.9"]}},
"client": {"servers": ["10.0.0.2", "10.0.0.1:4647"], "meta": {"b": "2"}, "options": {"driver.denylist": "exec"}},
"plugin": {"raw_exec": {"config": {"no_cgroups": true}}}}`)
	write("ignored.txt", `not = config`)
	write(".#a.hcl", `not = config`)

	fromDir, err := LoadConfigPath(dir)
	must.NoError(t, err)
	c := DefaultConfig().Merge(fromDir).Merge(&Config{Datacenter: "dc9"})
	must.Eq(t, "two", c.Region)
	must.Eq(t, "dc9", c.Datacenter)
	must.True(t, c.Server.Enabled)
	must.Eq(t, []string{"10.0.0.9"}, c.Server.ServerJoin.RetryJoin)
	must.Eq(t, 5, c.Server.ServerJoin.RetryMax)
	must.Eq(t, DefaultRetryInterval, c.Server.ServerJoin.RetryInterval)
	must.Eq(t, []string{"10.0.0.1:4647", "10.0.0.2:4647"}, c.Client.Servers)
	must.Eq(t, map[string]string{"a": "1", "b": "2"}, c.Client.Meta)
	must.Eq(t, map[string]string{"driver.denylist": "exec"}, c.Client.Options)
	must.Eq(t, map[string]any{"enabled": true, "no_cgroups": true}, c.PluginConfigs()["raw_exec"])

	// Merging never writes through to its inputs.
	must.Eq(t, "global", DefaultConfig().Region)
	must.Eq(t, map[string]string{"a": "1"}, mustParse(t, dir, "a.hcl").Client.Meta)
}

// Merge carries every field: a config with all of them set, layered over
// the defaults or under an empty config, comes out unchanged, and the
// result shares no slice or map with its input. A field added to Config
// but forgotten in Merge or copy fails here.
func TestConfig_MergeHandlesEveryField(t *testing.T) {
	full := &Config{}
	n := 0
	fillValue(reflect.ValueOf(full).Elem(), &n)

	must.Eq(t, full, DefaultConfig().Merge(full))
	must.Eq(t, full, (&Config{}).Merge(full))
	must.Eq(t, full, full.Merge(&Config{}))
	must.Eq(t, full, full.Merge(nil))

	before := DefaultConfig().Merge(full)
	got := DefaultConfig().Merge(full)
	got.Client.Servers[0] = "changed"
	got.Client.Meta["k1"] = "changed"
	got.Client.Options["k2"] = "changed"
	got.Client.ServerJoin.RetryJoin[0] = "changed"
	got.Server.ServerJoin.StartJoin[0] = "changed"
	got.Plugins[0].Config["changed"] = true
	got.Ports.HTTP = 1
	must.Eq(t, before, full)
}

// fillValue sets every field reachable from v to a distinct non-zero value.
func fillValue(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			fillValue(v.Field(i), n)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.5)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillValue(s.Index(0), n)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		val := reflect.New(v.Type().Elem()).Elem()
		fillValue(val, n)
		m.SetMapIndex(reflect.ValueOf(fmt.Sprintf("k%d", *n)), val)
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf(fmt.Sprintf("v%d", *n)))
	default:
		panic("fillValue: unhandled kind " + v.Kind().String())
	}
}

func mustParse(t *testing.T, dir, name string) *Config {
	t.Helper()
	c, err := ParseConfigFile(filepath.Join(dir, name))
	must.NoError(t, err)
	return c
}

// The defaults are upstream's, so /v1/agent/self shows the values in
// effect and an upstream operator's expectations hold.
func TestDefaultConfig_UpstreamDefaults(t *testing.T) {
	c := DefaultConfig()
	must.Eq(t, &Ports{HTTP: 4646, RPC: 4647, Serf: 4648}, c.Ports)
	must.Eq(t, 3, c.Server.RaftProtocol)
	must.Eq(t, 1, c.Server.RaftMultiplier)
	must.Eq(t, 24*time.Hour, c.Server.NodeGCThreshold)
	must.Eq(t, time.Hour, c.Server.EvalGCThreshold)
	must.Eq(t, 4*time.Hour, c.Server.JobGCThreshold)
	must.Eq(t, time.Hour, c.Server.DeploymentGCThreshold)
	must.Eq(t, &ServerJoin{RetryInterval: 30 * time.Second}, c.Server.ServerJoin)
	must.Eq(t, &ServerJoin{RetryInterval: 30 * time.Second}, c.Client.ServerJoin)
	must.Eq(t, &Addresses{}, c.Addresses)
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

// Validation reports every problem of a merged config at once, naming the
// key (and the flag) to fix.
func TestConfig_Validate(t *testing.T) {
	c := DefaultConfig()
	c.LogLevel = "LOUD"
	c.Server.BootstrapExpect = 3
	c.Server.RaftProtocol = 2
	c.Server.RaftMultiplier = 11
	c.Server.ServerJoin.RetryJoin = []string{"provider=gce tag_value=x"}
	c.Client.ServerJoin.StartJoin = []string{"10.0.0.1"}
	c.Addresses.RPC = "nomad.local"
	c.Client.NodePool = "all"
	err := c.Validate()
	must.Error(t, err)
	for _, want := range []string{
		"must enable the server or the client",
		`invalid log level "LOUD"`,
		"must specify a data directory (data_dir or -data-dir) outside of -dev mode",
		"server.bootstrap_expect (-bootstrap-expect) requires the server to be enabled",
		"server.raft_protocol 2 is not supported by this version",
		"server.raft_multiplier must be between 1 and 10, not 11",
		`server.server_join.retry_join: cloud auto-join ("provider=gce tag_value=x") is not supported`,
		"client.server_join.start_join is not supported for clients",
		`addresses.rpc must be an IP address, not "nomad.local"`,
		`client.node_pool "all" is built in`,
	} {
		must.StrContains(t, err.Error(), want)
	}
}

// Every HCL example in the agent configuration docs parses, so the docs
// never show operators a config this version refuses.
func TestDocsExamplesParse(t *testing.T) {
	src, err := os.ReadFile("../../website/content/docs/agent-configuration.md")
	must.NoError(t, err)
	blocks := strings.Split(string(src), "```hcl\n")[1:]
	must.Greater(t, 3, len(blocks))
	for i, b := range blocks {
		body, _, ok := strings.Cut(b, "```")
		must.True(t, ok)
		_, err := ParseConfig(fmt.Sprintf("example-%d.hcl", i+1), []byte(body))
		must.NoError(t, err, must.Sprint(body))
	}
}

// An agent config nested deeper than the limit is refused with its
// position, not parsed until the stack overflows.
func TestParseConfig_DeepNestingRefused(t *testing.T) {
	src := "name = " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + "\n"
	_, err := ParseConfig("deep.hcl", []byte(src))
	must.ErrorContains(t, err, "deep.hcl:1:")
	must.ErrorContains(t, err, "64")
	_, err = ParseConfig("deep.json", []byte(`{"name":`+strings.Repeat("[", 100000)+strings.Repeat("]", 100000)+`}`))
	must.ErrorContains(t, err, "deep.json")
}

// The tls block takes upstream's keys; file paths become absolute, and
// the gossip key is checked where it is written.
func TestParseConfig_TLSAndEncrypt(t *testing.T) {
	src := `
tls {
  http = true
  rpc  = true
  ca_file   = "certs/nomad-agent-ca.pem"
  cert_file = "/etc/nomad/global-server-nomad.pem"
  key_file  = "/etc/nomad/global-server-nomad-key.pem"
  verify_server_hostname = true
  verify_https_client    = true
  tls_min_version        = "tls13"
}
server {
  encrypt = "cg8StVXbQJ0gPvMd9o7yrg=="
}
`
	c, err := ParseConfig("agent.hcl", []byte(src))
	must.NoError(t, err)
	wd, _ := os.Getwd()
	must.Eq(t, &TLSConfig{
		EnableHTTP: true, EnableRPC: true, VerifyServerHostname: true, VerifyHTTPSClient: true,
		CAFile:        filepath.Join(wd, "certs/nomad-agent-ca.pem"),
		CertFile:      "/etc/nomad/global-server-nomad.pem",
		KeyFile:       "/etc/nomad/global-server-nomad-key.pem",
		TLSMinVersion: "tls13",
	}, c.TLSConfig)
	key, err := c.Server.encryptKey()
	must.NoError(t, err)
	must.Len(t, 16, key)

	merged := DefaultConfig().Merge(c)
	must.True(t, merged.TLSConfig.EnableRPC)
	must.Eq(t, "cg8StVXbQJ0gPvMd9o7yrg==", merged.Server.EncryptKey)

	_, err = ParseConfig("agent.hcl", []byte(`
tls {
  tls_min_version = "tls10"
}
server {
  encrypt = "c2hvcnQ="
}`))
	must.ErrorContains(t, err, `agent.hcl:3:21: tls.tls_min_version must be "tls12" or "tls13", not "tls10"`)
	must.ErrorContains(t, err, "agent.hcl:6:13: server.encrypt must decode to 16, 24 or 32 bytes, not 5")
}

// A tls block that enables TLS without its files fails validation naming
// each missing key, before anything starts.
func TestValidate_TLSNeedsFiles(t *testing.T) {
	c := DevConfig()
	c.TLSConfig = &TLSConfig{EnableRPC: true, CAFile: "/nonexistent/ca.pem"}
	err := c.Validate()
	must.ErrorContains(t, err, "tls.cert_file is required")
	must.ErrorContains(t, err, "tls.key_file is required")
}

// The acl block takes upstream's enabled; its token and policy caches
// and replication are refused by name, since this version has neither.
func TestParseConfig_ACL(t *testing.T) {
	cfg, err := ParseConfig("acl.hcl", []byte("acl {\n  enabled = true\n}\n"))
	must.NoError(t, err)
	must.True(t, cfg.ACL.Enabled)
	must.True(t, DefaultConfig().Merge(cfg).ACL.Enabled)

	_, err = ParseConfig("acl.hcl", []byte("acl {\n  enabled = true\n  token_ttl = \"30s\"\n}\n"))
	must.ErrorContains(t, err, "acl.hcl:3:")
	must.ErrorContains(t, err, "acl.token_ttl is not supported by this version")
	_, err = ParseConfig("acl.hcl", []byte("acl {\n  enabld = true\n}\n"))
	must.ErrorContains(t, err, "acl.hcl:2:")
}

// client chroot_env is read as upstream's map, from HCL's map attribute (a
// block cannot hold path keys in HCL2) and from JSON, and reaches the
// client's config for the drivers.
func TestParseConfig_ChrootEnv(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte(`
client {
  chroot_env = {
    "/bin"             = "/bin"
    "/opt/tools/bin"   = "/usr/local/bin"
  }
}
`))
	must.NoError(t, err)
	want := map[string]string{"/bin": "/bin", "/opt/tools/bin": "/usr/local/bin"}
	must.Eq(t, want, c.Client.ChrootEnv)
	must.Eq(t, want, c.copy().Client.ChrootEnv)

	c, err = ParseConfig("agent.json", []byte(`{"client": {"chroot_env": {"/etc": "/etc"}}}`))
	must.NoError(t, err)
	must.Eq(t, map[string]string{"/etc": "/etc"}, c.Client.ChrootEnv)
}

// tls.auto is one setting; combined with the settings it replaces
// (operator files, tls.rpc, tls.http) it fails validation naming each,
// so an operator never runs half of one scheme and half of the other; a
// server of tls.auto needs the gossip key (server.encrypt), the secret
// servers prove to each other before they hold certificates.
func TestValidate_TLSAuto(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte("tls {\n  auto = true\n  auto_cert_ttl = \"12h\"\n}\n"))
	must.NoError(t, err)
	must.Eq(t, &TLSConfig{Auto: true, AutoCertTTL: 12 * time.Hour}, c.TLSConfig)
	merged := DevConfig().Merge(c)
	must.NoError(t, merged.Validate())
	must.True(t, merged.tlsutilConfig().Auto)
	must.Eq(t, 12*time.Hour, merged.tlsutilConfig().CertTTL())

	server := DevConfig().Merge(c)
	server.DevMode, server.DataDir = false, t.TempDir()
	must.ErrorIs(t, server.Validate(), nomad.ErrTLSAutoNeedsEncrypt)
	server.Server.EncryptKey = "T1VSYG1pwi4iEAmZ0jE4bw=="
	must.NoError(t, server.Validate())
	client := DevConfig().Merge(c)
	client.DevMode, client.DataDir, client.Server.Enabled, client.Server.BootstrapExpect = false, t.TempDir(), false, 0
	must.NoError(t, client.Validate())

	bad := DevConfig()
	bad.TLSConfig = &TLSConfig{Auto: true, EnableRPC: true, CertFile: "/etc/nomad/cert.pem", AutoCertTTL: time.Minute}
	err = bad.Validate()
	must.ErrorContains(t, err, "tls.rpc cannot be combined with tls.auto = true")
	must.ErrorContains(t, err, "tls.cert_file cannot be combined with tls.auto = true")
	must.ErrorContains(t, err, "tls.auto_cert_ttl 1m0s must be at least 10m")

	orphan := DevConfig()
	orphan.TLSConfig = &TLSConfig{AutoCertTTL: time.Hour}
	must.ErrorContains(t, orphan.Validate(), "tls.auto_cert_ttl is set but tls.auto is not")
}
