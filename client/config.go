package client

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/registry"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// RPCHandler makes a call to the servers. Errors the servers return wrap
// the structs sentinels (errors.Is(err, structs.ErrUnknownNode)).
//
// The client sets a context on every request (structs.RequestContext),
// which ends when the client shuts down: RPC must return soon after it
// ends, and must not write reply after it returned. The connection pool,
// the in-process server and the test fakes do.
type RPCHandler interface {
	RPC(method string, args any, reply any) error
}

// RPC methods the client calls.
const (
	methodNodeRegister     = "Node.Register"
	methodNodeUpdateStatus = "Node.UpdateStatus"
	methodGetClientAllocs  = "Node.GetClientAllocs"
	methodGetAllocs        = "Alloc.GetAllocs"
	methodUpdateAlloc      = "Node.UpdateAlloc"
)

// Config is the input of NewClient.
type Config struct {
	Logger     hclog.Logger
	RPCHandler RPCHandler

	// StateDir holds the client's database (StateDir/client/state.db);
	// UpstreamDataDir is the data_dir an upstream Nomad client may have
	// left, the agent's (its client/ is StateDir): while it holds an
	// upstream node and this client has none of its own, this client
	// takes that node over (takeover.go). Empty: never.
	UpstreamDataDir string
	// AllocDir holds the allocations' directories.
	StateDir string
	AllocDir string

	// IntroToken is the client introduction token a new node presents
	// at its first registration; when empty, StateDir/intro_token.jwt
	// is read, if it exists (see intro_token.go).
	IntroToken string
	// AutoTLS, when set, is the node's credentials of tls.auto (the
	// agent's, which its connection pool presents): the client gets and
	// renews its certificate (see autotls.go).
	AutoTLS *AutoTLS

	NodeName   string // default: the hostname
	Datacenter string // default: dc1
	NodeClass  string
	NodePool   string // default: default
	Region     string // default: global
	Meta       map[string]string
	// HTTPAddr is the address the agent's HTTP API is advertised on.
	HTTPAddr string
	// NetworkInterface names the interface whose address the node
	// advertises for its tasks' ports (see fingerprintNetwork); empty
	// means HTTPAddr's host.
	NetworkInterface string
	// HostNetworks are the client's host_network blocks: named addresses
	// a port's host_network is placed on (see fingerprintHostNetworks).
	HostNetworks []HostNetwork
	// Bridge is the bridge of bridge-mode allocations (see
	// setupBridgeNetwork).
	Bridge BridgeNetworkConfig
	// HostVolumes are the client's host_volume blocks by name; each path
	// must exist when the client starts (see fingerprintHostVolumes).
	HostVolumes map[string]*structs.ClientHostVolumeConfig
	// Version is the agent's version, advertised as nomad.version.
	Version string

	// MaxKillTimeout caps every task's kill_timeout (client
	// max_kill_timeout, upstream's default 30s): a job cannot make the
	// client wait longer than this for a task to stop before SIGKILL.
	MaxKillTimeout time.Duration

	// Options is the client's `options` block (ParseOptions reads it):
	// driver allow/deny lists and the user denylist.
	Options map[string]string

	// PluginConfig is each driver's agent config block by driver name,
	// e.g. {"raw_exec": {"enabled": true}}.
	PluginConfig map[string]map[string]any
	// ChrootEnv is client chroot_env, handed to the drivers; nil means
	// theirs.
	ChrootEnv map[string]string
	// Drivers is the catalog the client builds its drivers from; nil
	// means the built-in drivers.
	Drivers *drivers.Catalog

	// StatsCollectionInterval is how often the client publishes its
	// gauges (telemetry.collection_interval); 0 publishes none.
	// PublishNodeMetrics adds the host's and PublishAllocationMetrics
	// each allocation's (the telemetry keys of the same names).
	StatsCollectionInterval  time.Duration
	PublishNodeMetrics       bool
	PublishAllocationMetrics bool

	// Clock is the source of time for every loop; nil means the real one.
	Clock clock.Clock
	// BootClock measures time across client restarts within one boot
	// (the persisted last heartbeat); nil means the machine's.
	BootClock clock.BootClock

	// StateDB replaces the bbolt database under StateDir, for tests
	// (state.NewMemDB()). The client closes it on Shutdown.
	StateDB state.StateDB

	// Artifact is the client's artifact block; nil means upstream's
	// defaults and a cache of DefaultArtifactCacheSize.
	Artifact *ArtifactConfig
	// Template is the client's template block; nil means upstream's
	// defaults (template.DefaultClientConfig).
	Template *template.ClientConfig
	// Resources are the client's overrides of what fingerprinting finds
	// and what the scheduler may use (see NodeResourcesConfig).
	Resources NodeResourcesConfig
	// GC is the collector of terminal allocations (see GCConfig).
	GC GCConfig

	// HostFingerprint, when set, fills the node's attributes and
	// resources instead of probing the machine: the client simulator runs
	// thousands of nodes on one host, each advertising its own size.
	HostFingerprint func(node *structs.Node)
}

// Defaults applied by NewClient.
const (
	DefaultDatacenter = "dc1"
	DefaultVersion    = "0.1.0"
	// DefaultMaxKillTimeout is upstream's client max_kill_timeout.
	DefaultMaxKillTimeout = 30 * time.Second
)

// withDefaults returns a copy of c with defaults filled, or an error naming
// what is missing.
func (c *Config) withDefaults() (Config, error) {
	if c == nil {
		return Config{}, errors.New("client config is required")
	}
	out := *c
	if out.RPCHandler == nil {
		return out, errors.New("client config: RPCHandler is required")
	}
	if out.StateDB == nil && out.StateDir == "" {
		return out, errors.New("client config: StateDir is required")
	}
	if out.AllocDir == "" {
		return out, errors.New("client config: AllocDir is required")
	}
	if out.Logger == nil {
		out.Logger = hclog.NewNullLogger()
	}
	if out.Clock == nil {
		out.Clock = clock.Real()
	}
	if out.BootClock == nil {
		out.BootClock = clock.RealBoot()
	}
	if out.Drivers == nil {
		out.Drivers = registry.Builtin()
	}
	if out.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return out, fmt.Errorf("client config: no NodeName and no hostname: %w", err)
		}
		out.NodeName = h
	}
	if out.Datacenter == "" {
		out.Datacenter = DefaultDatacenter
	}
	if out.NodePool == "" {
		out.NodePool = structs.DefaultNodePool
	}
	if out.Region == "" {
		out.Region = structs.DefaultRegion
	}
	if out.MaxKillTimeout <= 0 {
		out.MaxKillTimeout = DefaultMaxKillTimeout
	}
	if out.Version == "" {
		out.Version = DefaultVersion
	}
	if err := out.Resources.validate(); err != nil {
		return out, err
	}
	out.GC = out.GC.withDefaults()
	return out, nil
}
