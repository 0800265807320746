package agent

import (
	"errors"
	"fmt"
	"github.com/nomad-edge/nomad/nomad"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// Default ports, upstream's, so that tools and firewall rules written for
// upstream agents work unchanged.
const (
	DefaultHTTPPort = 4646
	DefaultRPCPort  = 4647
	DefaultSerfPort = 4648
)

// Config is the agent's configuration: the merge of its config files and
// flags. Field names double as the JSON keys /v1/agent/self reports under
// "config", which are upstream's (tools read NodeName, Region and
// Datacenter from there).
type Config struct {
	NodeName   string
	Region     string
	Datacenter string
	DataDir    string
	BindAddr   string
	LogLevel   string

	AdvertiseAddrs *AdvertiseAddrs
	Ports          *Ports
	Server         *ServerConfig
	Client         *ClientConfig
	Plugins        []*PluginConfig

	// DevMode runs a server and a client in one process with in-memory
	// raft and a throwaway data directory.
	DevMode bool
}

// AdvertiseAddrs are the addresses other agents are told to use, when they
// differ from the bind address (NAT, several interfaces). Each is "host" or
// "host:port".
type AdvertiseAddrs struct {
	HTTP string
	RPC  string
}

// Ports are the agent's listening ports. Serf is accepted for config
// compatibility; a dev agent has no server gossip.
type Ports struct {
	HTTP int
	RPC  int
	Serf int
}

// ServerConfig is the `server` block. Zero durations and counts mean "the
// server's default".
type ServerConfig struct {
	Enabled                bool
	BootstrapExpect        int
	HeartbeatGrace         time.Duration
	MinHeartbeatTTL        time.Duration
	MaxHeartbeatsPerSecond float64
	FailoverHeartbeatTTL   time.Duration
	NumSchedulers          int
}

// ClientConfig is the `client` block.
type ClientConfig struct {
	Enabled   bool
	Servers   []string
	NodeClass string
	NodePool  string
	Meta      map[string]string
}

// PluginConfig is one `plugin "<driver>" { config { ... } }` block. Config
// is loosely typed: each driver decodes its own keys.
type PluginConfig struct {
	Name   string
	Config map[string]any
}

// DefaultConfig returns the configuration an agent starts from before its
// files and flags are applied.
func DefaultConfig() *Config {
	// The server block starts from the server's own defaults, so that
	// /v1/agent/self shows the values in effect rather than zeros.
	sd := nomad.DefaultConfig()
	return &Config{
		Region:         "global",
		Datacenter:     "dc1",
		BindAddr:       "0.0.0.0",
		LogLevel:       "INFO",
		AdvertiseAddrs: &AdvertiseAddrs{},
		Ports:          &Ports{HTTP: DefaultHTTPPort, RPC: DefaultRPCPort, Serf: DefaultSerfPort},
		Server: &ServerConfig{
			HeartbeatGrace:         sd.HeartbeatGrace,
			MinHeartbeatTTL:        sd.MinHeartbeatTTL,
			MaxHeartbeatsPerSecond: sd.MaxHeartbeatsPerSecond,
			FailoverHeartbeatTTL:   sd.FailoverHeartbeatTTL,
			NumSchedulers:          sd.NumSchedulers,
		},
		Client: &ClientConfig{},
	}
}

// DevConfig returns the `-dev` configuration: a server and a client on
// loopback with raw_exec enabled, so that `nomad agent -dev` followed by
// `nomad job run` works on a laptop with no other setup.
func DevConfig() *Config {
	c := DefaultConfig()
	c.DevMode = true
	c.BindAddr = "127.0.0.1"
	c.LogLevel = "DEBUG"
	c.Server.Enabled = true
	c.Server.BootstrapExpect = 1
	c.Client.Enabled = true
	c.Plugins = []*PluginConfig{{Name: "raw_exec", Config: map[string]any{"enabled": true}}}
	return c
}

// Merge returns a new config with b layered over c: scalars set in b win,
// lists are replaced, maps and plugin blocks are merged key by key. c and b
// are not modified.
func (c *Config) Merge(b *Config) *Config {
	out := c.copy()
	if b == nil {
		return out
	}
	setString(&out.NodeName, b.NodeName)
	setString(&out.Region, b.Region)
	setString(&out.Datacenter, b.Datacenter)
	setString(&out.DataDir, b.DataDir)
	setString(&out.BindAddr, b.BindAddr)
	setString(&out.LogLevel, b.LogLevel)
	if b.DevMode {
		out.DevMode = true
	}
	if a := b.AdvertiseAddrs; a != nil {
		setString(&out.AdvertiseAddrs.HTTP, a.HTTP)
		setString(&out.AdvertiseAddrs.RPC, a.RPC)
	}
	if p := b.Ports; p != nil {
		setInt(&out.Ports.HTTP, p.HTTP)
		setInt(&out.Ports.RPC, p.RPC)
		setInt(&out.Ports.Serf, p.Serf)
	}
	if s := b.Server; s != nil {
		o := out.Server
		// Enabling is sticky, as upstream: a later file cannot turn a role
		// off that an earlier one turned on.
		o.Enabled = o.Enabled || s.Enabled
		setInt(&o.BootstrapExpect, s.BootstrapExpect)
		setDuration(&o.HeartbeatGrace, s.HeartbeatGrace)
		setDuration(&o.MinHeartbeatTTL, s.MinHeartbeatTTL)
		setDuration(&o.FailoverHeartbeatTTL, s.FailoverHeartbeatTTL)
		if s.MaxHeartbeatsPerSecond != 0 {
			o.MaxHeartbeatsPerSecond = s.MaxHeartbeatsPerSecond
		}
		setInt(&o.NumSchedulers, s.NumSchedulers)
	}
	if cl := b.Client; cl != nil {
		o := out.Client
		o.Enabled = o.Enabled || cl.Enabled
		if len(cl.Servers) > 0 {
			o.Servers = slices.Clone(cl.Servers)
		}
		setString(&o.NodeClass, cl.NodeClass)
		setString(&o.NodePool, cl.NodePool)
		if len(cl.Meta) > 0 {
			if o.Meta == nil {
				o.Meta = map[string]string{}
			}
			maps.Copy(o.Meta, cl.Meta)
		}
	}
	for _, p := range b.Plugins {
		out.mergePlugin(p)
	}
	return out
}

// mergePlugin layers p's config keys over the existing block of the same
// driver, or adds the block.
func (c *Config) mergePlugin(p *PluginConfig) {
	for _, existing := range c.Plugins {
		if existing.Name == p.Name {
			if existing.Config == nil {
				existing.Config = map[string]any{}
			}
			maps.Copy(existing.Config, p.Config)
			return
		}
	}
	c.Plugins = append(c.Plugins, &PluginConfig{Name: p.Name, Config: maps.Clone(p.Config)})
}

// copy returns a copy deep enough that Merge never writes through to c,
// with every sub-block present.
func (c *Config) copy() *Config {
	out := *c
	out.AdvertiseAddrs = &AdvertiseAddrs{}
	if c.AdvertiseAddrs != nil {
		*out.AdvertiseAddrs = *c.AdvertiseAddrs
	}
	out.Ports = &Ports{}
	if c.Ports != nil {
		*out.Ports = *c.Ports
	}
	out.Server = &ServerConfig{}
	if c.Server != nil {
		*out.Server = *c.Server
	}
	out.Client = &ClientConfig{}
	if c.Client != nil {
		*out.Client = *c.Client
		out.Client.Servers = slices.Clone(c.Client.Servers)
		out.Client.Meta = maps.Clone(c.Client.Meta)
	}
	out.Plugins = nil
	for _, p := range c.Plugins {
		out.Plugins = append(out.Plugins, &PluginConfig{Name: p.Name, Config: maps.Clone(p.Config)})
	}
	return &out
}

// PluginConfigs returns the plugin blocks keyed by driver name, the form
// the client takes.
func (c *Config) PluginConfigs() map[string]map[string]any {
	out := make(map[string]map[string]any, len(c.Plugins))
	for _, p := range c.Plugins {
		out[p.Name] = maps.Clone(p.Config)
	}
	return out
}

// validLogLevels are hclog's level names, as upstream accepts them.
var validLogLevels = []string{"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"}

// Validate reports every problem with a merged config at once.
func (c *Config) Validate() error {
	var errs []error
	if !c.Server.Enabled && !c.Client.Enabled {
		errs = append(errs, errors.New("must enable the server or the client (server { enabled = true }, client { enabled = true }, -server, -client or -dev)"))
	}
	if !slices.Contains(validLogLevels, strings.ToUpper(c.LogLevel)) {
		errs = append(errs, fmt.Errorf("invalid log level %q: must be one of %s", c.LogLevel, strings.Join(validLogLevels, ", ")))
	}
	for name, port := range map[string]int{"http": c.Ports.HTTP, "rpc": c.Ports.RPC, "serf": c.Ports.Serf} {
		// 0 is allowed: it asks for a free port, which tests rely on.
		if port < 0 || port > 65535 {
			errs = append(errs, fmt.Errorf("invalid %s port %d", name, port))
		}
	}
	if c.Server.BootstrapExpect < 0 {
		errs = append(errs, errors.New("server.bootstrap_expect can't be negative"))
	}
	if c.Server.NumSchedulers < 0 {
		errs = append(errs, errors.New("server.num_schedulers can't be negative"))
	}
	if c.Server.MaxHeartbeatsPerSecond < 0 {
		errs = append(errs, errors.New("server.max_heartbeats_per_second can't be negative"))
	}
	if !c.DevMode && c.DataDir == "" {
		errs = append(errs, errors.New("must specify a data directory (data_dir or -data-dir) outside of -dev mode"))
	}
	return errors.Join(errs...)
}

// nodeName returns the configured name, or the hostname as upstream does.
func (c *Config) nodeName() string {
	if c.NodeName != "" {
		return c.NodeName
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "nomad"
}

func setString(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func setInt(dst *int, v int) {
	if v != 0 {
		*dst = v
	}
}

func setDuration(dst *time.Duration, v time.Duration) {
	if v != 0 {
		*dst = v
	}
}
