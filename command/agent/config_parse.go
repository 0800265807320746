package agent

import (
	"bytes"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/drivers/registry"
	"github.com/nomad-edge/nomad/helper/nesting"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// ConfigError lists every problem found in the agent's config files, each
// with its file:line:column so an editor can jump to it.
type ConfigError struct {
	Diagnostics hcl.Diagnostics
}

func (e *ConfigError) Error() string {
	lines := make([]string, 0, len(e.Diagnostics))
	for _, d := range e.Diagnostics {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		if d.Subject != nil {
			msg = fmt.Sprintf("%s:%d:%d: %s", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, msg)
		}
		lines = append(lines, msg)
	}
	return strings.Join(lines, "\n")
}

// LoadConfigPath reads one -config argument: a file, or a directory whose
// *.hcl and *.json files are read in lexical order (not recursively), as
// upstream does. The files are merged in that order.
func LoadConfigPath(path string) (*Config, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	if !fi.IsDir() {
		return ParseConfigFile(path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("reading config directory: %w", err)
	}
	out := &Config{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".hcl" && ext != ".json") || isEditorTemp(e.Name()) {
			continue
		}
		c, err := ParseConfigFile(filepath.Join(path, e.Name()))
		if err != nil {
			return nil, err
		}
		out = out.Merge(c)
	}
	return out, nil
}

// isEditorTemp reports an editor's lock or backup file, which upstream
// skips too (emacs writes ".#agent.hcl" next to agent.hcl).
func isEditorTemp(name string) bool {
	return strings.HasPrefix(name, ".#") || strings.HasSuffix(name, "~") ||
		(strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"))
}

// ParseConfigFile parses one agent config file, HCL or (by extension) JSON.
func ParseConfigFile(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return ParseConfig(path, src)
}

// ParseConfig parses agent config source; filename names it in errors.
// The source is JSON when the name ends in ".json" or when its first
// non-blank character is "{", which no HCL file starts with: upstream's
// parser tells them apart by content, so operators name JSON files
// agent.conf or agent.hcl and expect them read. Keys the agent does not know
// are errors: a typo must not silently leave a setting at its default.
// Fields not set in src are zero, so the result is meant to be merged over
// DefaultConfig or DevConfig.
func ParseConfig(filename string, src []byte) (*Config, error) {
	p := hclparse.NewParser()
	var file *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(filename, ".json") || looksLikeJSON(src) {
		if err := nesting.CheckJSON(src, nesting.MaxDepth); err != nil {
			return nil, fmt.Errorf("%s: %w", filename, err)
		}
		file, diags = p.ParseJSON(src, filename)
	} else {
		if d := nesting.CheckHCL(src, filename, nesting.MaxDepth); d != nil {
			return nil, &ConfigError{Diagnostics: hcl.Diagnostics{d}}
		}
		file, diags = p.ParseHCL(src, filename)
	}
	if diags.HasErrors() {
		return nil, &ConfigError{Diagnostics: diags}
	}
	d := &configDecoder{}
	c := d.root(file.Body)
	if d.diags.HasErrors() {
		// Some keys are checked in map order; report in file order.
		slices.SortStableFunc(d.diags, func(a, b *hcl.Diagnostic) int {
			return comparePos(a.Subject, b.Subject)
		})
		return nil, &ConfigError{Diagnostics: d.diags}
	}
	return c, nil
}

// looksLikeJSON reports whether src starts, after blanks, with "{".
func looksLikeJSON(src []byte) bool {
	trimmed := bytes.TrimLeft(src, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

func comparePos(a, b *hcl.Range) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return a.Start.Byte - b.Start.Byte
}

// configDecoder accumulates diagnostics while decoding one file, so every
// problem is reported in one pass.
type configDecoder struct {
	diags hcl.Diagnostics
}

func (d *configDecoder) errorf(rng hcl.Range, format string, args ...any) {
	r := rng
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf(format, args...),
		Subject:  &r,
	})
}

// bodySpec is what one block may hold.
type bodySpec struct {
	attrs  []string
	blocks []hcl.BlockHeaderSchema
	// maps (meta, options) may be written as a block or, in HCL, as a map
	// attribute; only the attribute form can hold keys such as
	// "driver.allowlist" that are not identifiers.
	maps []string
	// unsupported are upstream's keys that this version cannot honour,
	// with an optional hint: refused by name, so the operator learns the
	// setting exists but does nothing here rather than suspect a typo.
	unsupported map[string]string
}

// block is one body being decoded. path prefixes its keys in messages
// ("server.server_join.").
type block struct {
	d       *configDecoder
	path    string
	content *hcl.BodyContent
}

// open decodes body against spec; unknown keys become errors here, and
// upstream keys we do not support become errors naming them.
func (d *configDecoder) open(body hcl.Body, path string, spec bodySpec) *block {
	refused := d.refuse(body, path, spec.unsupported)
	schema := &hcl.BodySchema{Blocks: spec.blocks}
	for _, a := range spec.attrs {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: a})
	}
	native, _ := body.(*hclsyntax.Body)
	for _, m := range spec.maps {
		if native != nil && native.Attributes[m] != nil {
			schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: m})
		} else {
			schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: m})
		}
	}
	content, diags := body.Content(schema)
	for _, diag := range diags {
		// A refused key was already reported by name.
		if diag.Subject == nil || !refused[diag.Subject.Start] {
			d.diags = append(d.diags, diag)
		}
	}
	if content == nil {
		content = &hcl.BodyContent{}
	}
	return &block{d: d, path: path, content: content}
}

// refuse reports every key of body found in unsupported, returning their
// positions so the generic "unexpected key" errors for them can be dropped.
func (d *configDecoder) refuse(body hcl.Body, path string, unsupported map[string]string) map[hcl.Pos]bool {
	found := map[hcl.Pos]bool{}
	report := func(name string, rng hcl.Range) {
		hint, ok := unsupported[name]
		if !ok {
			return
		}
		found[rng.Start] = true
		r := rng
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("%s%s is not supported by this version", path, name),
			Detail:   hint,
			Subject:  &r,
		})
	}
	if native, ok := body.(*hclsyntax.Body); ok {
		for name, a := range native.Attributes {
			report(name, a.NameRange)
		}
		for _, b := range native.Blocks {
			report(b.Type, b.TypeRange)
		}
		return found
	}
	// JSON: every property reads as an attribute, whatever its value.
	attrs, _ := body.JustAttributes()
	for name, a := range attrs {
		report(name, a.NameRange)
	}
	return found
}

// attr returns the attribute name, or nil when it is not set.
func (b *block) attr(name string) *hcl.Attribute { return b.content.Attributes[name] }

// key is the dotted name of a's key, for messages.
func (b *block) key(a *hcl.Attribute) string { return b.path + a.Name }

// sub returns the only nested block of type typ, reporting any repetition.
func (b *block) sub(typ string) *hcl.Block {
	var found *hcl.Block
	for _, blk := range b.content.Blocks {
		if blk.Type != typ {
			continue
		}
		if found != nil {
			b.d.errorf(blk.DefRange, "duplicate %s%s block; the first is at line %d", b.path, typ, found.DefRange.Start.Line)
			continue
		}
		found = blk
	}
	return found
}

func (d *configDecoder) root(body hcl.Body) *Config {
	b := d.open(body, "", bodySpec{
		attrs: []string{
			"name", "region", "datacenter", "data_dir", "bind_addr", "log_level",
			"log_json", "log_include_location", "log_file", "log_rotate_bytes", "log_rotate_duration", "log_rotate_max_files",
			"disable_update_check", "disable_anonymous_signature",
			"leave_on_interrupt", "leave_on_terminate", "enable_debug",
		},
		blocks: []hcl.BlockHeaderSchema{
			{Type: "addresses"}, {Type: "advertise"}, {Type: "ports"},
			{Type: "server"}, {Type: "client"}, {Type: "tls"}, {Type: "limits"}, {Type: "acl"}, {Type: "telemetry"},
			{Type: "vault"}, {Type: "autopilot"},
			{Type: "plugin", LabelNames: []string{"driver"}},
		},
		unsupported: unsupportedTopLevel,
	})
	c := &Config{}
	b.str("name", &c.NodeName)
	b.str("region", &c.Region)
	b.str("datacenter", &c.Datacenter)
	b.dir("data_dir", &c.DataDir)
	b.ip("bind_addr", &c.BindAddr)
	b.str("log_level", &c.LogLevel)
	b.boolean("log_json", &c.LogJSON)
	b.boolean("log_include_location", &c.LogIncludeLocation)
	b.str("log_file", &c.LogFile)
	b.integer("log_rotate_bytes", &c.LogRotateBytes, 0, 1<<40)
	b.duration("log_rotate_duration", &c.LogRotateDuration)
	b.integer("log_rotate_max_files", &c.LogRotateMaxFiles, 0, 1<<20)
	b.boolean("disable_update_check", &c.DisableUpdateCheck)
	b.boolean("disable_anonymous_signature", &c.DisableAnonymousSignature)
	b.boolean("leave_on_interrupt", &c.LeaveOnInterrupt)
	b.boolean("leave_on_terminate", &c.LeaveOnTerminate)
	b.boolean("enable_debug", &c.EnableDebug)

	if blk := b.sub("autopilot"); blk != nil {
		c.Autopilot = d.autopilot(blk.Body)
	}
	if blk := b.sub("addresses"); blk != nil {
		c.Addresses = &Addresses{}
		ab := d.open(blk.Body, "addresses.", bodySpec{attrs: []string{"http", "rpc", "serf"}})
		ab.ip("http", &c.Addresses.HTTP)
		ab.ip("rpc", &c.Addresses.RPC)
		ab.ip("serf", &c.Addresses.Serf)
	}
	if blk := b.sub("advertise"); blk != nil {
		c.AdvertiseAddrs = &AdvertiseAddrs{}
		ab := d.open(blk.Body, "advertise.", bodySpec{attrs: []string{"http", "rpc", "serf"}})
		ab.advertise("http", &c.AdvertiseAddrs.HTTP)
		ab.advertise("rpc", &c.AdvertiseAddrs.RPC)
		ab.advertise("serf", &c.AdvertiseAddrs.Serf)
	}
	if blk := b.sub("ports"); blk != nil {
		c.Ports = &Ports{}
		pb := d.open(blk.Body, "ports.", bodySpec{attrs: []string{"http", "rpc", "serf"}})
		pb.integer("http", &c.Ports.HTTP, 0, 65535)
		pb.integer("rpc", &c.Ports.RPC, 0, 65535)
		pb.integer("serf", &c.Ports.Serf, 0, 65535)
	}
	if blk := b.sub("server"); blk != nil {
		c.Server = d.server(blk.Body)
	}
	if blk := b.sub("client"); blk != nil {
		c.Client = d.client(blk.Body)
	}
	if blk := b.sub("tls"); blk != nil {
		c.TLSConfig = d.tls(blk.Body)
	}
	if blk := b.sub("limits"); blk != nil {
		c.Limits = d.limits(blk.Body)
	}
	if blk := b.sub("telemetry"); blk != nil {
		c.Telemetry = d.telemetry(blk.Body)
	}
	if blk := b.sub("acl"); blk != nil {
		c.ACL = &ACLConfig{}
		ab := d.open(blk.Body, "acl.", bodySpec{attrs: []string{"enabled", "replication_token"}, unsupported: unsupportedACL})
		ab.boolean("enabled", &c.ACL.Enabled)
		ab.str("replication_token", &c.ACL.ReplicationToken)
	}
	if blk := b.sub("vault"); blk != nil {
		d.vault(blk.Body)
	}
	for _, blk := range b.content.Blocks {
		if blk.Type != "plugin" {
			continue
		}
		name := blk.Labels[0]
		if slices.ContainsFunc(c.Plugins, func(p *PluginConfig) bool { return p.Name == name }) {
			d.errorf(blk.DefRange, "duplicate plugin %q block", name)
			continue
		}
		c.Plugins = append(c.Plugins, d.plugin(blk.Body, name))
	}
	return c
}

// joinKeys are the keys of server_join; upstream also still accepts them
// directly in the server block (deprecated since Nomad 0.10).
var joinKeys = []string{"retry_join", "retry_interval", "retry_max", "start_join"}

// vault accepts upstream's vault block as the disabled integration it
// is here: enabled = false (upstream's default) and nothing else; enabled
// = true and every other key are refused by name. Nothing is stored:
// disabled is what the agent does anyway.
func (d *configDecoder) vault(body hcl.Body) {
	vb := d.open(body, "vault.", bodySpec{attrs: []string{"enabled"}, unsupported: unsupportedVault})
	var enabled bool
	vb.boolean("enabled", &enabled)
	if enabled {
		d.errorf(vb.attr("enabled").Range, "vault.enabled = true is not supported by this version; %s", vaultHint)
	}
}

func (d *configDecoder) server(body hcl.Body) *ServerConfig {
	b := d.open(body, "server.", bodySpec{
		attrs: slices.Concat([]string{
			"enabled", "bootstrap_expect", "data_dir", "heartbeat_grace", "min_heartbeat_ttl",
			"max_heartbeats_per_second", "failover_heartbeat_ttl", "num_schedulers",
			"raft_protocol", "raft_multiplier",
			"node_gc_threshold", "eval_gc_threshold", "job_gc_threshold", "deployment_gc_threshold", "encrypt",
			"authoritative_region", "event_buffer_size", "job_max_count",
			"raft_snapshot_threshold", "raft_snapshot_interval", "raft_trailing_logs",
		}, joinKeys),
		blocks:      []hcl.BlockHeaderSchema{{Type: "server_join"}, {Type: "search"}, {Type: "client_introduction"}},
		unsupported: unsupportedServer,
	})
	s := &ServerConfig{}
	b.boolean("enabled", &s.Enabled)
	b.integer("bootstrap_expect", &s.BootstrapExpect, 0, 100)
	b.dir("data_dir", &s.DataDir)
	b.duration("heartbeat_grace", &s.HeartbeatGrace)
	b.duration("min_heartbeat_ttl", &s.MinHeartbeatTTL)
	b.duration("failover_heartbeat_ttl", &s.FailoverHeartbeatTTL)
	b.float("max_heartbeats_per_second", &s.MaxHeartbeatsPerSecond)
	b.integer("num_schedulers", &s.NumSchedulers, 0, 1024)
	b.integer("event_buffer_size", &s.EventBufferSize, 0, 1_000_000)
	b.integer("job_max_count", &s.JobMaxCount, 0, structs.MaxJobMaxCount)
	if a := b.attr("raft_protocol"); a != nil && b.integer("raft_protocol", &s.RaftProtocol, 0, 1<<20) && s.RaftProtocol != DefaultRaftProtocol {
		d.errorf(a.Expr.Range(), "%s", raftProtocolError(s.RaftProtocol))
	}
	// 0 means the default (1), as upstream.
	if a := b.attr("raft_multiplier"); a != nil && b.integer("raft_multiplier", &s.RaftMultiplier, -1<<20, 1<<20) &&
		(s.RaftMultiplier < 0 || s.RaftMultiplier > MaxRaftMultiplier) {
		d.errorf(a.Expr.Range(), "server.raft_multiplier must be between 1 and %d, not %d", MaxRaftMultiplier, s.RaftMultiplier)
	}
	b.integer("raft_snapshot_threshold", &s.RaftSnapshotThreshold, 0, 1<<30)
	b.duration("raft_snapshot_interval", &s.RaftSnapshotInterval)
	b.integer("raft_trailing_logs", &s.RaftTrailingLogs, 0, 1<<30)
	b.duration("node_gc_threshold", &s.NodeGCThreshold)
	b.duration("eval_gc_threshold", &s.EvalGCThreshold)
	b.duration("job_gc_threshold", &s.JobGCThreshold)
	b.duration("deployment_gc_threshold", &s.DeploymentGCThreshold)
	b.str("authoritative_region", &s.AuthoritativeRegion)
	if b.str("encrypt", &s.EncryptKey) {
		if _, err := s.encryptKey(); err != nil {
			d.errorf(b.attr("encrypt").Expr.Range(), "%v", err)
		}
	}

	if blk := b.sub("client_introduction"); blk != nil {
		s.ClientIntroduction = d.clientIntroduction(blk)
	}
	if blk := b.sub("server_join"); blk != nil {
		s.ServerJoin = d.serverJoin(blk.Body, "server.server_join.", true)
	}
	if blk := b.sub("search"); blk != nil {
		s.Search = d.search(blk.Body)
	}
	legacy := &ServerJoin{}
	b.joinAttrs(legacy)
	for _, k := range joinKeys {
		if a := b.attr(k); a != nil && s.ServerJoin != nil {
			d.errorf(a.NameRange, "server.%s and server.server_join cannot both be set; move %s into server_join", k, k)
		}
	}
	if s.ServerJoin == nil && !reflect.DeepEqual(legacy, &ServerJoin{}) {
		s.ServerJoin = legacy
	}
	return s
}

// autopilot decodes the autopilot block: the servers' configuration until
// one is written through the API. Upstream's Enterprise keys are refused.
func (d *configDecoder) autopilot(body hcl.Body) *AutopilotConfig {
	b := d.open(body, "autopilot.", bodySpec{
		attrs: []string{"cleanup_dead_servers", "last_contact_threshold", "max_trailing_logs", "min_quorum", "server_stabilization_time"},
		unsupported: map[string]string{
			"enable_redundancy_zones": "an upstream Enterprise feature", "disable_upgrade_migration": "an upstream Enterprise feature",
			"enable_custom_upgrades": "an upstream Enterprise feature",
		},
	})
	c := &AutopilotConfig{}
	if b.attr("cleanup_dead_servers") != nil {
		var on bool
		b.boolean("cleanup_dead_servers", &on)
		c.CleanupDeadServers = &on
	}
	b.duration("last_contact_threshold", &c.LastContactThreshold)
	b.duration("server_stabilization_time", &c.ServerStabilizationTime)
	b.integer("max_trailing_logs", &c.MaxTrailingLogs, 0, 1<<40)
	b.integer("min_quorum", &c.MinQuorum, 0, 1<<10)
	return c
}

// search decodes the server's search block (the fuzzy search endpoint).
func (d *configDecoder) search(body hcl.Body) *SearchConfig {
	b := d.open(body, "server.search.", bodySpec{attrs: []string{"fuzzy_enabled", "limit_query", "limit_results", "min_term_length"}})
	c := &SearchConfig{}
	if b.attr("fuzzy_enabled") != nil {
		var on bool
		b.boolean("fuzzy_enabled", &on)
		c.FuzzyEnabled = &on
	}
	b.integer("limit_query", &c.LimitQuery, 1, 1_000_000)
	b.integer("limit_results", &c.LimitResults, 1, 1_000_000)
	b.integer("min_term_length", &c.MinTermLength, 1, 1024)
	return c
}

// serverJoin decodes a server_join block. Upstream clients have no
// start_join (they reach servers over RPC, not gossip).
func (d *configDecoder) serverJoin(body hcl.Body, path string, server bool) *ServerJoin {
	b := d.open(body, path, bodySpec{attrs: joinKeys})
	if a := b.attr("start_join"); a != nil && !server {
		d.errorf(a.NameRange, "%sstart_join is not supported for clients, as upstream; use retry_join", path)
	}
	for _, k := range []string{"retry_interval", "retry_max"} {
		if a := b.attr(k); a != nil && !server {
			d.errorf(a.NameRange, "%s%s is not supported for clients by this version: the client adds retry_join to its servers and retries them with its own backoff for as long as it runs", path, k)
		}
	}
	j := &ServerJoin{}
	b.joinAttrs(j)
	return j
}

// joinAttrs reads the server_join keys of b into j.
func (b *block) joinAttrs(j *ServerJoin) {
	b.addrList("retry_join", &j.RetryJoin)
	b.addrList("start_join", &j.StartJoin)
	b.duration("retry_interval", &j.RetryInterval)
	b.integer("retry_max", &j.RetryMax, 0, 1<<31-1)
}

// clientBridgeKeys are the client keys of bridge-mode networking.
var clientBridgeKeys = []string{"bridge_network_name", "bridge_network_subnet", "bridge_network_hairpin_mode", "cni_path", "cni_config_dir"}

func (d *configDecoder) client(body hcl.Body) *ClientConfig {
	b := d.open(body, "client.", bodySpec{
		attrs:       slices.Concat([]string{"enabled", "servers", "node_class", "node_pool", "network_interface", "max_kill_timeout"}, clientBridgeKeys, clientResourceKeys),
		blocks:      []hcl.BlockHeaderSchema{{Type: "server_join"}, {Type: "host_network", LabelNames: []string{"name"}}, {Type: "artifact"}, {Type: "template"}, {Type: "reserved"}, hostVolumeBlock},
		maps:        []string{"meta", "options", "chroot_env"},
		unsupported: unsupportedClient,
	})
	c := &ClientConfig{}
	b.boolean("enabled", &c.Enabled)
	if b.addrList("servers", &c.Servers) {
		for i, s := range c.Servers {
			c.Servers[i] = withDefaultPort(s, DefaultClientRPCPort)
		}
	}
	b.str("node_class", &c.NodeClass)
	b.str("node_pool", &c.NodePool)
	b.str("network_interface", &c.NetworkInterface)
	b.duration("max_kill_timeout", &c.MaxKillTimeout)
	b.str("bridge_network_name", &c.BridgeNetworkName)
	b.str("bridge_network_subnet", &c.BridgeNetworkSubnet)
	b.boolean("bridge_network_hairpin_mode", &c.BridgeNetworkHairpinMode)
	b.str("cni_path", &c.CNIPath)
	b.str("cni_config_dir", &c.CNIConfigDir)
	c.Meta = b.mapping("meta")
	c.Options = b.mapping("options")
	if len(c.Options) > 0 {
		// Each key is checked here, at the block, so that a typo or an
		// upstream option this version cannot honour is reported with
		// its position; Validate checks configs built otherwise.
		if _, err := client.ParseOptions(c.Options, registry.Builtin().Names()); err != nil {
			for _, e := range unjoin(err) {
				d.errorf(b.mapRange("options"), "%v", e)
			}
		}
	}
	c.ChrootEnv = b.mapping("chroot_env")
	d.clientResources(b, c)
	if blk := b.sub("server_join"); blk != nil {
		c.ServerJoin = d.serverJoin(blk.Body, "client.server_join.", false)
	}
	if blk := b.sub("artifact"); blk != nil {
		c.Artifact = d.clientArtifact(blk.Body)
	}
	if blk := b.sub("template"); blk != nil {
		c.Template = d.clientTemplate(blk.Body)
	}
	c.HostVolumes = d.hostVolumes(b)
	for _, blk := range b.content.Blocks {
		if blk.Type != "host_network" {
			continue
		}
		name := blk.Labels[0]
		if slices.ContainsFunc(c.HostNetworks, func(h *HostNetworkConfig) bool { return h.Name == name }) {
			d.errorf(blk.DefRange, "duplicate client.host_network %q block", name)
			continue
		}
		c.HostNetworks = append(c.HostNetworks, d.hostNetwork(blk.Body, name))
	}
	return c
}

// hostNetwork decodes `host_network "<name>" { cidr interface
// reserved_ports }`; it needs a cidr or an interface to find its address.
func (d *configDecoder) hostNetwork(body hcl.Body, name string) *HostNetworkConfig {
	path := fmt.Sprintf("client.host_network.%s.", name)
	b := d.open(body, path, bodySpec{attrs: []string{"cidr", "interface", "reserved_ports"}})
	hn := &HostNetworkConfig{Name: name}
	if b.str("cidr", &hn.CIDR) {
		if _, _, err := net.ParseCIDR(hn.CIDR); err != nil {
			d.errorf(b.attr("cidr").Expr.Range(), "%scidr: %q is not a CIDR block such as \"10.0.0.0/8\"", path, hn.CIDR)
		}
	}
	b.str("interface", &hn.Interface)
	if b.str("reserved_ports", &hn.ReservedPorts) {
		if _, err := structs.ParsePortRanges(hn.ReservedPorts); err != nil {
			d.errorf(b.attr("reserved_ports").Expr.Range(), "%sreserved_ports: %v", path, err)
		}
	}
	if hn.CIDR == "" && hn.Interface == "" {
		d.errorf(body.MissingItemRange(), "client.host_network %q needs a cidr or an interface to find its address", name)
	}
	return hn
}

// tls decodes the tls block; file paths are made absolute, as data_dir.
func (d *configDecoder) tls(body hcl.Body) *TLSConfig {
	b := d.open(body, "tls.", bodySpec{
		attrs: []string{
			"http", "rpc", "ca_file", "cert_file", "key_file",
			"verify_server_hostname", "verify_https_client", "tls_min_version",
			"auto", "auto_cert_ttl",
		},
		unsupported: unsupportedTLS,
	})
	t := &TLSConfig{}
	b.boolean("http", &t.EnableHTTP)
	b.boolean("rpc", &t.EnableRPC)
	b.dir("ca_file", &t.CAFile)
	b.dir("cert_file", &t.CertFile)
	b.dir("key_file", &t.KeyFile)
	b.boolean("verify_server_hostname", &t.VerifyServerHostname)
	b.boolean("verify_https_client", &t.VerifyHTTPSClient)
	b.boolean("auto", &t.Auto)
	b.duration("auto_cert_ttl", &t.AutoCertTTL)
	if b.str("tls_min_version", &t.TLSMinVersion) {
		if _, ok := tlsMinVersions[t.TLSMinVersion]; !ok || t.TLSMinVersion == "" {
			d.errorf(b.attr("tls_min_version").Expr.Range(), "tls.tls_min_version must be \"tls12\" or \"tls13\", not %q (older versions are not supported)", t.TLSMinVersion)
		}
	}
	return t
}

func (d *configDecoder) plugin(body hcl.Body, name string) *PluginConfig {
	p := &PluginConfig{Name: name}
	b := d.open(body, "plugin."+name+".", bodySpec{blocks: []hcl.BlockHeaderSchema{{Type: "config"}}})
	if blk := b.sub("config"); blk != nil {
		p.Config = d.freeform(blk.Body)
	}
	return p
}

// freeform decodes a block of arbitrary attributes (meta, plugin config).
func (d *configDecoder) freeform(body hcl.Body) map[string]any {
	attrs, diags := body.JustAttributes()
	d.diags = append(d.diags, diags...)
	out := make(map[string]any, len(attrs))
	for name, a := range attrs {
		if v, ok := d.value(a, name); ok {
			out[name] = ctyToGo(v)
		}
	}
	return out
}

// mapping decodes a string map written as a block (meta { k = "v" }) or
// as a map attribute (options = { "driver.allowlist" = "raw_exec" }).
// Numbers and bools are turned into strings, as upstream's HCL does.
func (b *block) mapping(name string) map[string]string {
	var elems map[string]cty.Value
	var rng hcl.Range
	if a := b.attr(name); a != nil {
		v, ok := b.d.value(a, b.key(a))
		if !ok {
			return nil
		}
		if !v.Type().IsObjectType() && !v.Type().IsMapType() {
			b.d.typeError(a.Expr.Range(), b.key(a), "a map of strings", v)
			return nil
		}
		elems, rng = v.AsValueMap(), a.Expr.Range()
	} else if blk := b.sub(name); blk != nil {
		attrs, diags := blk.Body.JustAttributes()
		b.d.diags = append(b.d.diags, diags...)
		elems = map[string]cty.Value{}
		for k, a := range attrs {
			if v, ok := b.d.value(a, b.path+name+"."+k); ok {
				elems[k] = v
			}
		}
		rng = blk.DefRange
	} else {
		return nil
	}
	out := make(map[string]string, len(elems))
	for k, v := range elems {
		s, ok := scalarString(v)
		if !ok {
			b.d.errorf(rng, "%s%s.%s must be a string, not %s", b.path, name, k, v.Type().FriendlyName())
			continue
		}
		out[k] = s
	}
	return out
}

// mapRange is where the map name is written, attribute or block.
func (b *block) mapRange(name string) hcl.Range {
	if a := b.attr(name); a != nil {
		return a.Expr.Range()
	}
	for _, blk := range b.content.Blocks {
		if blk.Type == name {
			return blk.DefRange
		}
	}
	return hcl.Range{}
}

// unjoin splits an errors.Join into its errors, one diagnostic each.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// scalarString renders a string, number or bool as a string.
func scalarString(v cty.Value) (string, bool) {
	if v.IsNull() {
		return "", false
	}
	switch v.Type() {
	case cty.String:
		return v.AsString(), true
	case cty.Number:
		return v.AsBigFloat().Text('f', -1), true
	case cty.Bool:
		return strconv.FormatBool(v.True()), true
	}
	return "", false
}

// value evaluates an attribute. Config files are static: there are no
// variables or functions, so any reference is an error at its position.
func (d *configDecoder) value(a *hcl.Attribute, key string) (cty.Value, bool) {
	v, diags := a.Expr.Value(nil)
	d.diags = append(d.diags, diags...)
	if diags.HasErrors() {
		return cty.NilVal, false
	}
	if v.IsNull() {
		d.errorf(a.Expr.Range(), "%s must not be null", key)
		return cty.NilVal, false
	}
	return v, true
}

func (d *configDecoder) typeError(rng hcl.Range, key, want string, got cty.Value) {
	d.errorf(rng, "%s must be %s, not %s", key, want, got.Type().FriendlyName())
}

// get evaluates the attribute name, requiring type want (described as
// wantText in the error). ok is false when it is unset or wrong.
func (b *block) get(name string, want cty.Type, wantText string) (cty.Value, *hcl.Attribute, bool) {
	a := b.attr(name)
	if a == nil {
		return cty.NilVal, nil, false
	}
	v, ok := b.d.value(a, b.key(a))
	if !ok {
		return cty.NilVal, a, false
	}
	if v.Type() != want {
		b.d.typeError(a.Expr.Range(), b.key(a), wantText, v)
		return cty.NilVal, a, false
	}
	return v, a, true
}

func (b *block) str(name string, dst *string) bool {
	v, _, ok := b.get(name, cty.String, "a string")
	if ok {
		*dst = v.AsString()
	}
	return ok
}

// dir reads a directory, made absolute against the working directory so
// that the agent's later chdirs and subprocesses cannot change its meaning.
func (b *block) dir(name string, dst *string) {
	var p string
	if !b.str(name, &p) || p == "" {
		return
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		b.d.errorf(b.attr(name).Expr.Range(), "%s%s: %v", b.path, name, err)
		return
	}
	*dst = abs
}

// ip reads an IP address (bind_addr, addresses).
func (b *block) ip(name string, dst *string) {
	var v string
	if !b.str(name, &v) {
		return
	}
	if err := checkIP(b.path+name, v); err != nil {
		b.d.errorf(b.attr(name).Expr.Range(), "%v", err)
		return
	}
	*dst = v
}

// advertise reads an advertise address, "host" or "host:port".
func (b *block) advertise(name string, dst *string) {
	var v string
	if !b.str(name, &v) {
		return
	}
	if strings.Contains(v, "{{") {
		b.d.errorf(b.attr(name).Expr.Range(), "%s%s: go-sockaddr templates (%q) are not supported by this version; give an address", b.path, name, v)
		return
	}
	*dst = v
}

func (b *block) boolean(name string, dst *bool) {
	if v, _, ok := b.get(name, cty.Bool, "true or false"); ok {
		*dst = v.True()
	}
}

// integer reads a whole number in [lo, hi]; ok reports success.
func (b *block) integer(name string, dst *int, lo, hi int) bool {
	v, a, ok := b.get(name, cty.Number, "a whole number")
	if !ok {
		return false
	}
	bf := v.AsBigFloat()
	n, acc := bf.Int64()
	if !bf.IsInt() || acc != big.Exact || n < int64(lo) || n > int64(hi) {
		b.d.errorf(a.Expr.Range(), "%s must be a whole number between %d and %d", b.key(a), lo, hi)
		return false
	}
	*dst = int(n)
	return true
}

func (b *block) float(name string, dst *float64) {
	if v, _, ok := b.get(name, cty.Number, "a number"); ok {
		*dst, _ = v.AsBigFloat().Float64()
	}
}

func (b *block) duration(name string, dst *time.Duration) {
	v, a, ok := b.get(name, cty.String, `a duration string such as "10s"`)
	if !ok {
		return
	}
	dur, err := time.ParseDuration(v.AsString())
	if err != nil || dur < 0 {
		b.d.errorf(a.Expr.Range(), "%s: invalid duration %q; use a form such as \"10s\" or \"1m30s\"", b.key(a), v.AsString())
		return
	}
	*dst = dur
}

// addrList reads a list of addresses (servers, retry_join, start_join).
func (b *block) addrList(name string, dst *[]string) bool {
	var out []string
	if !b.strList(name, &out) {
		return false
	}
	for _, addr := range out {
		if err := checkJoinAddr(b.path+name, addr); err != nil {
			b.d.errorf(b.attr(name).Expr.Range(), "%v", err)
			return false
		}
	}
	*dst = out
	return true
}

// strList reads a list of strings; ok reports success.
func (b *block) strList(name string, dst *[]string) bool {
	a := b.attr(name)
	if a == nil {
		return false
	}
	v, ok := b.d.value(a, b.key(a))
	if !ok {
		return false
	}
	t := v.Type()
	if !t.IsListType() && !t.IsTupleType() && !t.IsSetType() {
		b.d.typeError(a.Expr.Range(), b.key(a), "a list of strings", v)
		return false
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, el := it.Element()
		if el.IsNull() || el.Type() != cty.String {
			b.d.errorf(a.Expr.Range(), "%s must be a list of strings", b.key(a))
			return false
		}
		out = append(out, el.AsString())
	}
	*dst = out
	return true
}

// ctyToGo converts a known value to the plain Go types drivers decode:
// string, bool, int64 or float64, []any and map[string]any.
func ctyToGo(v cty.Value) any {
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString()
	case t == cty.Bool:
		return v.True()
	case t == cty.Number:
		bf := v.AsBigFloat()
		if n, acc := bf.Int64(); bf.IsInt() && acc == big.Exact {
			return n
		}
		f, _ := bf.Float64()
		return f
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		var out []any
		for it := v.ElementIterator(); it.Next(); {
			_, el := it.Element()
			out = append(out, ctyToGo(el))
		}
		return out
	case t.IsMapType() || t.IsObjectType():
		out := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, el := it.Element()
			out[k.AsString()] = ctyToGo(el)
		}
		return out
	}
	return nil
}
