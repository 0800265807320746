package agent

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/drivers/registry"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
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
// Datacenter from there); where our Go name differs, a tag keeps
// upstream's key.
type Config struct {
	NodeName   string
	Region     string
	Datacenter string
	DataDir    string
	BindAddr   string
	LogLevel   string
	// LogJSON writes log lines as JSON objects (log_json, -log-json), and
	// LogIncludeLocation adds the file and line of each.
	LogJSON            bool
	LogIncludeLocation bool
	// LogFile also writes the log to this file (or nomad.log in this
	// directory), rotated after LogRotateBytes or LogRotateDuration (24h
	// when 0), keeping LogRotateMaxFiles rotated files (0: all).
	LogFile           string
	LogRotateBytes    int
	LogRotateDuration time.Duration
	LogRotateMaxFiles int

	// Addresses override BindAddr per listener; empty means BindAddr.
	Addresses      *Addresses
	AdvertiseAddrs *AdvertiseAddrs
	Ports          *Ports
	Server         *ServerConfig
	Client         *ClientConfig
	Plugins        []*PluginConfig
	// TLSConfig is the `tls` block.
	TLSConfig *TLSConfig
	// Limits is the `limits` block: per-client connection caps and
	// handshake timeouts.
	Limits *Limits
	// ACL is the `acl` block.
	ACL *ACLConfig
	// Telemetry is the `telemetry` block.
	Telemetry *Telemetry
	// Autopilot is the `autopilot` block.
	Autopilot *AutopilotConfig

	// DisableUpdateCheck and DisableAnonymousSignature are accepted so
	// that upstream configs load: this agent never checks for updates, so
	// both are always in effect.
	DisableUpdateCheck        bool
	DisableAnonymousSignature bool

	// LeaveOnInterrupt and LeaveOnTerminate ask the agent to leave the
	// cluster gracefully on SIGINT and SIGTERM respectively, rather than
	// just stopping.
	LeaveOnInterrupt bool `json:"LeaveOnInt"`
	LeaveOnTerminate bool `json:"LeaveOnTerm"`

	// EnableDebug serves the runtime profiles under /v1/agent/pprof/ when
	// ACLs are off (with ACLs on, a token with agent:write may read them
	// whatever this says), as upstream's enable_debug.
	EnableDebug bool

	// DevMode runs a server and a client in one process with in-memory
	// raft and a throwaway data directory.
	DevMode bool
}

// Addresses are the IP addresses each listener binds to, when it should
// not be BindAddr.
type Addresses struct {
	HTTP string
	RPC  string
	Serf string
}

// AdvertiseAddrs are the addresses other agents are told to use, when they
// differ from the bind address (NAT, several interfaces). Each is "host" or
// "host:port".
type AdvertiseAddrs struct {
	HTTP string
	RPC  string
	Serf string
}

// Ports are the agent's listening ports.
type Ports struct {
	HTTP int
	RPC  int
	Serf int
}

// ServerConfig is the `server` block. Zero durations and counts mean "the
// server's default".
type ServerConfig struct {
	Enabled         bool
	BootstrapExpect int
	// DataDir is where the server keeps raft and its state; empty means
	// <data_dir>/server.
	DataDir                string
	ServerJoin             *ServerJoin
	HeartbeatGrace         time.Duration
	MinHeartbeatTTL        time.Duration
	MaxHeartbeatsPerSecond float64
	FailoverHeartbeatTTL   time.Duration
	NumSchedulers          int
	// EventBufferSize is how many raft entries' event batches the event
	// stream keeps; 0 means the server's default.
	EventBufferSize int
	// RaftProtocol is always 3; older protocols are refused at load.
	RaftProtocol int
	// RaftMultiplier scales raft's timeouts, 1 (fastest) to 10.
	RaftMultiplier int
	// RaftSnapshotThreshold, RaftSnapshotInterval and RaftTrailingLogs
	// tune raft's snapshots (upstream's keys); zero means the default.
	RaftSnapshotThreshold int
	RaftSnapshotInterval  time.Duration
	RaftTrailingLogs      int
	NodeGCThreshold       time.Duration
	EvalGCThreshold       time.Duration
	JobGCThreshold        time.Duration
	DeploymentGCThreshold time.Duration
	// Search is the search block; nil fields keep upstream's defaults.
	Search *SearchConfig
	// JobMaxCount caps the instances of one job, the sum of its groups'
	// counts (upstream's job_max_count); 0 means the server's default.
	JobMaxCount int
	// ClientIntroduction is the client_introduction block; nil means the
	// server's defaults (warn, 5m, 30m).
	ClientIntroduction *structs.ClientIntroductionConfig
	// EncryptKey is the base64 gossip key (server.encrypt, -encrypt). It
	// is a secret: /v1/agent/self never shows it, as upstream's.
	EncryptKey string `json:"-"`
	// AuthoritativeRegion (server.authoritative_region) is the region whose
	// ACL policies and global tokens every other region copies; empty or
	// this agent's region: its own ACLs are authoritative.
	AuthoritativeRegion string
}

// AutopilotConfig is the `autopilot` block: the servers' autopilot
// configuration until one is written through the API. Zero values (nil
// for CleanupDeadServers) mean upstream's defaults.
type AutopilotConfig struct {
	CleanupDeadServers      *bool
	LastContactThreshold    time.Duration
	MaxTrailingLogs         int
	MinQuorum               int
	ServerStabilizationTime time.Duration
}

// apply sets the server's autopilot defaults from c.
func (c *AutopilotConfig) apply(dst *structs.AutopilotConfig) {
	if c == nil {
		return
	}
	if c.CleanupDeadServers != nil {
		dst.CleanupDeadServers = *c.CleanupDeadServers
	}
	if c.LastContactThreshold > 0 {
		dst.LastContactThreshold = c.LastContactThreshold
	}
	if c.MaxTrailingLogs > 0 {
		dst.MaxTrailingLogs = uint64(c.MaxTrailingLogs)
	}
	if c.MinQuorum > 0 {
		dst.MinQuorum = uint(c.MinQuorum)
	}
	if c.ServerStabilizationTime > 0 {
		dst.ServerStabilizationTime = c.ServerStabilizationTime
	}
}

// merge returns o overridden by c's set keys, as a new value.
func (o *AutopilotConfig) merge(c *AutopilotConfig) *AutopilotConfig {
	if c == nil {
		return o
	}
	out := &AutopilotConfig{}
	if o != nil {
		*out = *o
	}
	if c.CleanupDeadServers != nil {
		on := *c.CleanupDeadServers
		out.CleanupDeadServers = &on
	}
	setDuration(&out.LastContactThreshold, c.LastContactThreshold)
	setInt(&out.MaxTrailingLogs, c.MaxTrailingLogs)
	setInt(&out.MinQuorum, c.MinQuorum)
	setDuration(&out.ServerStabilizationTime, c.ServerStabilizationTime)
	return out
}

// SearchConfig is the server's `search` block. Zero values (nil for
// FuzzyEnabled) mean upstream's defaults: enabled, 20, 100 and 2.
type SearchConfig struct {
	FuzzyEnabled  *bool
	LimitQuery    int
	LimitResults  int
	MinTermLength int
}

// apply sets the server's search settings from c.
func (c *SearchConfig) apply(dst *structs.SearchConfig) {
	if c == nil {
		return
	}
	if c.FuzzyEnabled != nil {
		dst.FuzzyEnabled = *c.FuzzyEnabled
	}
	if c.LimitQuery > 0 {
		dst.LimitQuery = c.LimitQuery
	}
	if c.LimitResults > 0 {
		dst.LimitResults = c.LimitResults
	}
	if c.MinTermLength > 0 {
		dst.MinTermLength = c.MinTermLength
	}
}

// merge returns o overridden by c's set keys, as a new value: a merged
// config never shares it with its inputs.
func (o *SearchConfig) merge(c *SearchConfig) *SearchConfig {
	if c == nil {
		return o
	}
	out := &SearchConfig{}
	if o != nil {
		*out = *o
	}
	if c.FuzzyEnabled != nil {
		on := *c.FuzzyEnabled
		out.FuzzyEnabled = &on
	}
	setInt(&out.LimitQuery, c.LimitQuery)
	setInt(&out.LimitResults, c.LimitResults)
	setInt(&out.MinTermLength, c.MinTermLength)
	return out
}

// ACLConfig is the `acl` block: with Enabled, every API and RPC endpoint
// checks the caller's ACL token. Every server and client of a cluster
// must agree.
type ACLConfig struct {
	Enabled bool
	// ReplicationToken (acl.replication_token) is the management token of
	// the authoritative region the servers of another region copy its
	// policies and global tokens with; never shown by /v1/agent/self.
	ReplicationToken string `json:"-"`
}

// TLSConfig is the `tls` block: mutual TLS for RPC and raft, HTTPS for the
// API. Its field names are upstream's /v1/agent/self keys.
type TLSConfig struct {
	EnableHTTP           bool
	EnableRPC            bool
	VerifyServerHostname bool
	VerifyHTTPSClient    bool
	CAFile               string
	CertFile             string
	KeyFile              string
	// TLSMinVersion is "tls12" (the default) or "tls13".
	TLSMinVersion string
	// Auto is automatic mutual TLS (tls.auto): the servers' cluster CA
	// issues every agent its RPC certificate, of AutoCertTTL
	// (tls.auto_cert_ttl, 24h by default).
	Auto        bool
	AutoCertTTL time.Duration
}

// ServerJoin is the `server_join` block of the server (serf addresses of
// other servers) or of the client (RPC addresses of servers).
type ServerJoin struct {
	// RetryJoin addresses are tried until one answers, every
	// RetryInterval, at most RetryMax times (0: forever).
	RetryJoin     []string
	RetryInterval time.Duration
	RetryMax      int `json:"RetryMaxAttempts"`
	// StartJoin addresses are tried once at start; the agent fails if
	// none answers. Servers only.
	StartJoin []string
}

// ClientConfig is the `client` block.
type ClientConfig struct {
	Enabled    bool
	Servers    []string
	ServerJoin *ServerJoin
	NodeClass  string
	NodePool   string
	Meta       map[string]string
	// Options are upstream's "namespace.option" client settings; only
	// the keys client.ParseOptions reads are accepted.
	Options map[string]string
	// NetworkInterface is the interface whose address the node
	// advertises for its tasks' ports (network_interface,
	// -network-interface); empty means the interface of the default route.
	// IntroToken is the client introduction token (-client-intro-token,
	// NOMAD_CLIENT_INTRO_TOKEN); no config file key, as upstream. A
	// secret: never shown.
	IntroToken       string `json:"-"`
	NetworkInterface string
	// MaxKillTimeout caps every task's kill_timeout on this client, so a
	// job cannot make the agent wait for ever to stop it.
	MaxKillTimeout time.Duration
	// BridgeNetworkName, BridgeNetworkSubnet and BridgeNetworkHairpinMode
	// are the bridge of bridge-mode allocations (bridge_network_*); empty
	// means upstream's defaults, "nomad" and 172.26.64.0/20.
	BridgeNetworkName        string
	BridgeNetworkSubnet      string
	BridgeNetworkHairpinMode bool
	// CNIPath is cni_path: directories of the CNI plugins, separated by
	// ':'; empty means /opt/cni/bin then /usr/lib/cni.
	CNIPath string
	// CNIConfigDir is cni_config_dir: the CNI networks of cni/<name>
	// network modes; empty means /opt/cni/config.
	CNIConfigDir string
	// ChrootEnv is upstream's chroot_env: host paths (keys) bound at
	// paths (values) in exec tasks' roots, instead of the default set.
	ChrootEnv map[string]string
	// HostVolumes are the `host_volume` blocks (config_host_volume.go).
	HostVolumes []*HostVolumeConfig `json:",omitempty"`
	// HostNetworks are the `host_network "<name>" { cidr interface
	// reserved_ports }` blocks, by name.
	HostNetworks []*HostNetworkConfig `json:"HostNetworks,omitempty"`
	// Artifact is the `artifact` block (config_artifact.go).
	Artifact *ArtifactConfig `json:",omitempty"`
	// Template is the `template` block (config_template.go).
	Template *TemplateConfig `json:",omitempty"`

	// Reserved is the `reserved` block: capacity and host ports the
	// scheduler never hands out. nil keeps the client's automatic
	// reservation (see client.NodeResourcesConfig).
	Reserved *ReservedConfig `json:",omitempty"`
	// MinDynamicPort and MaxDynamicPort bound the ports dynamic `port`
	// blocks are given on this node.
	MinDynamicPort int
	MaxDynamicPort int
	// NodeMaxAllocs caps the allocations placed on the node; 0 is none.
	NodeMaxAllocs int
	// CPUTotalCompute and MemoryTotalMB replace the fingerprinted CPU
	// (MHz) and memory totals when set. The JSON keys are upstream's.
	CPUTotalCompute int `json:"CpuCompute"`
	MemoryTotalMB   int `json:"MemoryMB"`
	// The gc_* keys: the client's collector of terminal allocations (see
	// client.GCConfig).
	GCInterval            time.Duration
	GCDiskUsageThreshold  float64
	GCInodeUsageThreshold float64
	GCMaxAllocs           int
	GCParallelDestroys    int
}

// HostNetworkConfig is one client host_network block: the address a
// port's host_network = "<Name>" is placed on.
type HostNetworkConfig struct {
	Name          string
	CIDR          string
	Interface     string
	ReservedPorts string
}

// hostNetworks is the host_network blocks in the client's terms.
func (cl *ClientConfig) hostNetworks() []client.HostNetwork {
	var out []client.HostNetwork
	for _, hn := range cl.HostNetworks {
		out = append(out, client.HostNetwork{Name: hn.Name, CIDR: hn.CIDR, Interface: hn.Interface, ReservedPorts: hn.ReservedPorts})
	}
	return out
}

// bridgeNetwork is the bridge_network_* and cni_* keys in the client's
// terms.
func (cl *ClientConfig) bridgeNetwork() client.BridgeNetworkConfig {
	out := client.BridgeNetworkConfig{BridgeConfig: allocnet.BridgeConfig{
		Name: cl.BridgeNetworkName, Subnet: cl.BridgeNetworkSubnet, HairpinMode: cl.BridgeNetworkHairpinMode,
	}, CNIConfigDir: cl.CNIConfigDir}
	for _, p := range filepath.SplitList(cl.CNIPath) {
		if p != "" {
			out.CNIPath = append(out.CNIPath, p)
		}
	}
	return out
}

// serverAddrs are the servers a client-only agent reaches: client.servers
// and client.server_join.retry_join (the RPC port added where missing,
// as upstream), each once. The client retries them for as long as it runs.
func (cl *ClientConfig) serverAddrs() []string {
	out := slices.Clone(cl.Servers)
	if cl.ServerJoin != nil {
		for _, s := range cl.ServerJoin.RetryJoin {
			if s = withDefaultPort(s, DefaultClientRPCPort); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// PluginConfig is one `plugin "<driver>" { config { ... } }` block. Config
// is loosely typed: each driver decodes its own keys.
type PluginConfig struct {
	Name   string
	Config map[string]any
}

// Upstream's defaults for the settings the server package does not own.
const (
	DefaultRetryInterval         = 30 * time.Second
	DefaultRaftProtocol          = 3
	DefaultRaftMultiplier        = 1
	MaxRaftMultiplier            = 10
	DefaultNodeGCThreshold       = 24 * time.Hour
	DefaultEvalGCThreshold       = time.Hour
	DefaultJobGCThreshold        = 4 * time.Hour
	DefaultDeploymentGCThreshold = time.Hour
	DefaultClientRPCPort         = DefaultRPCPort
)

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
		Addresses:      &Addresses{},
		AdvertiseAddrs: &AdvertiseAddrs{},
		Ports:          &Ports{HTTP: DefaultHTTPPort, RPC: DefaultRPCPort, Serf: DefaultSerfPort},
		Server: &ServerConfig{
			ServerJoin:             &ServerJoin{RetryInterval: DefaultRetryInterval},
			HeartbeatGrace:         sd.HeartbeatGrace,
			MinHeartbeatTTL:        sd.MinHeartbeatTTL,
			MaxHeartbeatsPerSecond: sd.MaxHeartbeatsPerSecond,
			FailoverHeartbeatTTL:   sd.FailoverHeartbeatTTL,
			NumSchedulers:          sd.NumSchedulers,
			RaftProtocol:           DefaultRaftProtocol,
			RaftMultiplier:         DefaultRaftMultiplier,
			NodeGCThreshold:        DefaultNodeGCThreshold,
			EvalGCThreshold:        DefaultEvalGCThreshold,
			JobGCThreshold:         DefaultJobGCThreshold,
			DeploymentGCThreshold:  DefaultDeploymentGCThreshold,
		},
		Client: &ClientConfig{
			ServerJoin:            &ServerJoin{RetryInterval: DefaultRetryInterval},
			MaxKillTimeout:        30 * time.Second,
			MinDynamicPort:        structs.MinDynamicPort,
			MaxDynamicPort:        structs.MaxDynamicPort,
			GCInterval:            client.DefaultGCInterval,
			GCDiskUsageThreshold:  client.DefaultGCDiskUsageThreshold,
			GCInodeUsageThreshold: client.DefaultGCInodeUsageThreshold,
			GCMaxAllocs:           client.DefaultGCMaxAllocs,
			GCParallelDestroys:    client.DefaultGCParallelDestroys,
		},
		TLSConfig: &TLSConfig{},
		Limits:    defaultLimits(),
		ACL:       &ACLConfig{},
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
	// As upstream's dev agent: every metric, Prometheus included.
	c.Telemetry = &Telemetry{PrometheusMetrics: ptr(true), PublishNodeMetrics: ptr(true), PublishAllocationMetrics: ptr(true)}
	return c
}

// Merge returns a new config with b layered over c, as upstream merges
// config files: scalars set in b win (an empty string, a zero or false is
// "not set", so a role once enabled stays enabled); client.servers
// accumulate; server_join lists set in b replace; meta, options and plugin
// blocks merge key by key. c and b are not modified.
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
	setBool(&out.LogJSON, b.LogJSON)
	setBool(&out.LogIncludeLocation, b.LogIncludeLocation)
	setString(&out.LogFile, b.LogFile)
	setInt(&out.LogRotateBytes, b.LogRotateBytes)
	setDuration(&out.LogRotateDuration, b.LogRotateDuration)
	setInt(&out.LogRotateMaxFiles, b.LogRotateMaxFiles)
	out.Autopilot = out.Autopilot.merge(b.Autopilot)
	setBool(&out.DisableUpdateCheck, b.DisableUpdateCheck)
	setBool(&out.DisableAnonymousSignature, b.DisableAnonymousSignature)
	setBool(&out.LeaveOnInterrupt, b.LeaveOnInterrupt)
	setBool(&out.LeaveOnTerminate, b.LeaveOnTerminate)
	setBool(&out.EnableDebug, b.EnableDebug)
	setBool(&out.DevMode, b.DevMode)
	if a := b.Addresses; a != nil {
		setString(&out.Addresses.HTTP, a.HTTP)
		setString(&out.Addresses.RPC, a.RPC)
		setString(&out.Addresses.Serf, a.Serf)
	}
	if a := b.AdvertiseAddrs; a != nil {
		setString(&out.AdvertiseAddrs.HTTP, a.HTTP)
		setString(&out.AdvertiseAddrs.RPC, a.RPC)
		setString(&out.AdvertiseAddrs.Serf, a.Serf)
	}
	if p := b.Ports; p != nil {
		setInt(&out.Ports.HTTP, p.HTTP)
		setInt(&out.Ports.RPC, p.RPC)
		setInt(&out.Ports.Serf, p.Serf)
	}
	out.Server.merge(b.Server)
	out.Client.merge(b.Client)
	out.TLSConfig.merge(b.TLSConfig)
	out.Limits.merge(b.Limits)
	out.Telemetry.merge(b.Telemetry)
	if b.ACL != nil {
		setBool(&out.ACL.Enabled, b.ACL.Enabled)
		setString(&out.ACL.ReplicationToken, b.ACL.ReplicationToken)
	}
	for _, p := range b.Plugins {
		out.mergePlugin(p)
	}
	return out
}

func (o *ServerConfig) merge(s *ServerConfig) {
	if s == nil {
		return
	}
	setBool(&o.Enabled, s.Enabled)
	setInt(&o.BootstrapExpect, s.BootstrapExpect)
	setString(&o.DataDir, s.DataDir)
	o.ServerJoin.merge(s.ServerJoin)
	setDuration(&o.HeartbeatGrace, s.HeartbeatGrace)
	setDuration(&o.MinHeartbeatTTL, s.MinHeartbeatTTL)
	setDuration(&o.FailoverHeartbeatTTL, s.FailoverHeartbeatTTL)
	if s.MaxHeartbeatsPerSecond != 0 {
		o.MaxHeartbeatsPerSecond = s.MaxHeartbeatsPerSecond
	}
	setInt(&o.NumSchedulers, s.NumSchedulers)
	setInt(&o.JobMaxCount, s.JobMaxCount)
	if s.ClientIntroduction != nil {
		o.ClientIntroduction = s.ClientIntroduction
	}
	setInt(&o.EventBufferSize, s.EventBufferSize)
	setInt(&o.RaftProtocol, s.RaftProtocol)
	setInt(&o.RaftMultiplier, s.RaftMultiplier)
	setInt(&o.RaftSnapshotThreshold, s.RaftSnapshotThreshold)
	setDuration(&o.RaftSnapshotInterval, s.RaftSnapshotInterval)
	setInt(&o.RaftTrailingLogs, s.RaftTrailingLogs)
	setDuration(&o.NodeGCThreshold, s.NodeGCThreshold)
	setDuration(&o.EvalGCThreshold, s.EvalGCThreshold)
	setDuration(&o.JobGCThreshold, s.JobGCThreshold)
	setDuration(&o.DeploymentGCThreshold, s.DeploymentGCThreshold)
	setString(&o.EncryptKey, s.EncryptKey)
	setString(&o.AuthoritativeRegion, s.AuthoritativeRegion)
	o.Search = o.Search.merge(s.Search)
}

func (o *TLSConfig) merge(t *TLSConfig) {
	if t == nil {
		return
	}
	setBool(&o.EnableHTTP, t.EnableHTTP)
	setBool(&o.EnableRPC, t.EnableRPC)
	setBool(&o.VerifyServerHostname, t.VerifyServerHostname)
	setBool(&o.VerifyHTTPSClient, t.VerifyHTTPSClient)
	setString(&o.CAFile, t.CAFile)
	setString(&o.CertFile, t.CertFile)
	setString(&o.KeyFile, t.KeyFile)
	setString(&o.TLSMinVersion, t.TLSMinVersion)
	setBool(&o.Auto, t.Auto)
	if t.AutoCertTTL != 0 {
		o.AutoCertTTL = t.AutoCertTTL
	}
}

func (o *ClientConfig) merge(cl *ClientConfig) {
	if cl == nil {
		return
	}
	setBool(&o.Enabled, cl.Enabled)
	// Upstream appends the servers of each file (and of -servers); a
	// server named twice is kept once.
	for _, s := range cl.Servers {
		if !slices.Contains(o.Servers, s) {
			o.Servers = append(o.Servers, s)
		}
	}
	o.ServerJoin.merge(cl.ServerJoin)
	setString(&o.NodeClass, cl.NodeClass)
	setString(&o.NodePool, cl.NodePool)
	setString(&o.NetworkInterface, cl.NetworkInterface)
	setString(&o.IntroToken, cl.IntroToken)
	setString(&o.BridgeNetworkName, cl.BridgeNetworkName)
	setString(&o.BridgeNetworkSubnet, cl.BridgeNetworkSubnet)
	setBool(&o.BridgeNetworkHairpinMode, cl.BridgeNetworkHairpinMode)
	setString(&o.CNIPath, cl.CNIPath)
	setString(&o.CNIConfigDir, cl.CNIConfigDir)
	if cl.MaxKillTimeout > 0 {
		o.MaxKillTimeout = cl.MaxKillTimeout
	}
	o.Meta = mergeMap(o.Meta, cl.Meta)
	o.Options = mergeMap(o.Options, cl.Options)
	o.ChrootEnv = mergeMap(o.ChrootEnv, cl.ChrootEnv)
	o.HostVolumes = mergeHostVolumes(o.HostVolumes, cl.HostVolumes)
	o.Artifact = o.Artifact.merge(cl.Artifact)
	o.Template = o.Template.merge(cl.Template)
	o.mergeResources(cl)
	// A block of a name seen before replaces it, as plugin blocks merge.
	for _, hn := range cl.HostNetworks {
		c := *hn
		if i := slices.IndexFunc(o.HostNetworks, func(x *HostNetworkConfig) bool { return x.Name == hn.Name }); i >= 0 {
			o.HostNetworks[i] = &c
		} else {
			o.HostNetworks = append(o.HostNetworks, &c)
		}
	}
}

// merge layers b over j; j is never nil (copy makes it).
func (j *ServerJoin) merge(b *ServerJoin) {
	if b == nil {
		return
	}
	if len(b.RetryJoin) > 0 {
		j.RetryJoin = slices.Clone(b.RetryJoin)
	}
	if len(b.StartJoin) > 0 {
		j.StartJoin = slices.Clone(b.StartJoin)
	}
	setDuration(&j.RetryInterval, b.RetryInterval)
	setInt(&j.RetryMax, b.RetryMax)
}

// copy returns a copy of j with its own slices, never nil.
func (j *ServerJoin) copy() *ServerJoin {
	if j == nil {
		return &ServerJoin{}
	}
	out := *j
	out.RetryJoin = slices.Clone(j.RetryJoin)
	out.StartJoin = slices.Clone(j.StartJoin)
	return &out
}

func mergeMap(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
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
	out.Addresses = &Addresses{}
	if c.Addresses != nil {
		*out.Addresses = *c.Addresses
	}
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
	out.Server.ServerJoin = out.Server.ServerJoin.copy()
	out.Client = &ClientConfig{}
	if c.Client != nil {
		*out.Client = *c.Client
		out.Client.Servers = slices.Clone(c.Client.Servers)
		out.Client.Meta = maps.Clone(c.Client.Meta)
		out.Client.Options = maps.Clone(c.Client.Options)
		out.Client.ChrootEnv = maps.Clone(c.Client.ChrootEnv)
		out.Client.HostVolumes = copyHostVolumes(c.Client.HostVolumes)
		out.Client.HostNetworks = nil
		for _, hn := range c.Client.HostNetworks {
			cp := *hn
			out.Client.HostNetworks = append(out.Client.HostNetworks, &cp)
		}
		if c.Client.Reserved != nil {
			r := *c.Client.Reserved
			out.Client.Reserved = &r
		}
	}
	out.Client.ServerJoin = out.Client.ServerJoin.copy()
	out.TLSConfig = &TLSConfig{}
	if c.TLSConfig != nil {
		*out.TLSConfig = *c.TLSConfig
	}
	out.Limits = c.Limits.copy()
	out.Telemetry = c.Telemetry.copy()
	out.ACL = &ACLConfig{}
	if c.ACL != nil {
		*out.ACL = *c.ACL
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

// Validate reports every problem with a merged config at once. Files were
// checked key by key when parsed; this catches what flags and merging can
// still get wrong.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !c.Server.Enabled && !c.Client.Enabled {
		add("must enable the server or the client (server { enabled = true }, client { enabled = true }, -server, -client or -dev)")
	}
	if a := c.Server.AuthoritativeRegion; c.Server.Enabled && c.ACL != nil && c.ACL.Enabled && a != "" && a != c.Region && c.ACL.ReplicationToken == "" {
		add("acl.replication_token is required: this server's region %q copies its ACLs from server.authoritative_region %q, with a management token of that region", c.Region, a)
	}
	if !slices.Contains(validLogLevels, strings.ToUpper(c.LogLevel)) {
		add("invalid log level %q: must be one of %s", c.LogLevel, strings.Join(validLogLevels, ", "))
	}
	for _, p := range []struct {
		name string
		port int
	}{{"http", c.Ports.HTTP}, {"rpc", c.Ports.RPC}, {"serf", c.Ports.Serf}} {
		// 0 is allowed: it asks for a free port, which tests rely on.
		if p.port < 0 || p.port > 65535 {
			add("invalid %s port %d", p.name, p.port)
		}
	}
	if !c.DevMode && c.DataDir == "" {
		add("must specify a data directory (data_dir or -data-dir) outside of -dev mode")
	}
	if c.Addresses != nil {
		for _, a := range []struct{ key, v string }{
			{"addresses.http", c.Addresses.HTTP}, {"addresses.rpc", c.Addresses.RPC}, {"addresses.serf", c.Addresses.Serf},
		} {
			if err := checkIP(a.key, a.v); err != nil {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, c.Server.validate()...)
	errs = append(errs, c.Client.validate()...)
	errs = append(errs, c.telemetry().validate()...)
	if err := c.tlsutilConfig().Check(); err != nil {
		errs = append(errs, err)
	}
	if err := c.tlsutilConfig().CheckAuto(); err != nil {
		errs = append(errs, err)
	}
	if err := c.checkTLSAuto(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s *ServerConfig) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.BootstrapExpect < 0 {
		add("server.bootstrap_expect can't be negative")
	}
	if s.BootstrapExpect > 0 && !s.Enabled {
		add("server.bootstrap_expect (-bootstrap-expect) requires the server to be enabled (server { enabled = true } or -server)")
	}
	if s.NumSchedulers < 0 {
		add("server.num_schedulers can't be negative")
	}
	if s.MaxHeartbeatsPerSecond < 0 {
		add("server.max_heartbeats_per_second can't be negative")
	}
	if _, err := s.encryptKey(); err != nil {
		errs = append(errs, err)
	}
	// 0 means the default, for configs built in code.
	if s.RaftProtocol != 0 && s.RaftProtocol != DefaultRaftProtocol {
		add("%s", raftProtocolError(s.RaftProtocol))
	}
	if s.RaftMultiplier < 0 || s.RaftMultiplier > MaxRaftMultiplier {
		add("server.raft_multiplier must be between 1 and %d, not %d", MaxRaftMultiplier, s.RaftMultiplier)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"server.node_gc_threshold", s.NodeGCThreshold},
		{"server.eval_gc_threshold", s.EvalGCThreshold},
		{"server.job_gc_threshold", s.JobGCThreshold},
		{"server.deployment_gc_threshold", s.DeploymentGCThreshold},
	} {
		if d.v < 0 {
			add("%s can't be negative", d.key)
		}
	}
	return append(errs, s.ServerJoin.validate("server.server_join")...)
}

func (cl *ClientConfig) validate() []error {
	errs := cl.ServerJoin.validate("client.server_join")
	if cl.ServerJoin != nil && len(cl.ServerJoin.StartJoin) > 0 {
		errs = append(errs, errors.New("client.server_join.start_join is not supported for clients, as upstream; use retry_join"))
	}
	if cl.ServerJoin != nil && (cl.ServerJoin.RetryMax != 0 || cl.ServerJoin.RetryInterval != 0 && cl.ServerJoin.RetryInterval != DefaultRetryInterval) {
		errs = append(errs, errors.New("client.server_join: retry_interval and retry_max are not supported for clients by this version; the client retries its servers with its own backoff"))
	}
	if len(cl.Options) > 0 {
		if _, err := client.ParseOptions(cl.Options, registry.Builtin().Names()); err != nil {
			errs = append(errs, err)
		}
	}
	if cl.NodePool == structs.NodePoolAll {
		errs = append(errs, errors.New(`client.node_pool "all" is built in and holds every node; a client cannot join it`))
	}
	return append(errs, cl.validateResources()...)
}

func (j *ServerJoin) validate(key string) []error {
	if j == nil {
		return nil
	}
	var errs []error
	if j.RetryMax < 0 {
		errs = append(errs, fmt.Errorf("%s.retry_max can't be negative", key))
	}
	if j.RetryInterval < 0 {
		errs = append(errs, fmt.Errorf("%s.retry_interval can't be negative", key))
	}
	for _, addr := range j.RetryJoin {
		if err := checkJoinAddr(key+".retry_join", addr); err != nil {
			errs = append(errs, err)
		}
	}
	for _, addr := range j.StartJoin {
		if err := checkJoinAddr(key+".start_join", addr); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// raftProtocolError words the refusal of a raft protocol other than 3.
func raftProtocolError(v int) string {
	return fmt.Sprintf("server.raft_protocol %d is not supported by this version: only raft protocol 3 is (upstream's only protocol since Nomad 1.4)", v)
}

// checkJoinAddr refuses go-discover cloud auto-join strings, which look
// like "provider=aws tag_key=...": joining them as host names would fail
// forever with a confusing DNS error.
func checkJoinAddr(key, addr string) error {
	if strings.Contains(addr, "provider=") {
		return fmt.Errorf("%s: cloud auto-join (%q) is not supported by this version; list the servers' addresses", key, addr)
	}
	if strings.TrimSpace(addr) == "" {
		return fmt.Errorf("%s: an address must not be empty", key)
	}
	return nil
}

// checkIP accepts "" (unset) or an IP address. Upstream also accepts
// go-sockaddr templates; saying so beats "not an IP address".
func checkIP(key, v string) error {
	switch {
	case v == "":
		return nil
	case strings.Contains(v, "{{"):
		return fmt.Errorf("%s: go-sockaddr templates (%q) are not supported by this version; give an IP address", key, v)
	case net.ParseIP(v) == nil:
		return fmt.Errorf("%s must be an IP address, not %q", key, v)
	}
	return nil
}

// withDefaultPort adds the servers' RPC port to a client.servers entry
// that has none, as upstream does.
func withDefaultPort(addr string, port int) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(strings.Trim(addr, "[]"), strconv.Itoa(port))
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

func setBool(dst *bool, v bool) {
	if v {
		*dst = true
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
