package nomad

import (
	"net"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/helper/tlsutil"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Config is the server's configuration, filled by the agent from its HCL
// config and flags.
type Config struct {
	Logger hclog.Logger

	NodeName   string
	Region     string
	Datacenter string
	DataDir    string

	// DevMode runs raft in memory with a single voter and no disk state.
	DevMode bool

	// RPCAddr is where the RPC listener binds; RPCAdvertise is what other
	// agents are told. A zero port picks a free one (tests).
	RPCAddr      *net.TCPAddr
	RPCAdvertise *net.TCPAddr

	BootstrapExpect int

	// SerfAddr is where the gossip pool binds, SerfAdvertise what other
	// servers are told; a zero port picks a free one (tests).
	SerfAddr      *net.TCPAddr
	SerfAdvertise *net.TCPAddr
	// SerfTimeScale, when set, multiplies memberlist's probe and gossip
	// intervals (tests use 0.1 to detect failures quickly).
	SerfTimeScale float64

	// RaftMultiplier scales raft's timeouts (raft_multiplier, 1-10).
	RaftMultiplier int
	// RaftSnapshotThreshold is how many raft entries since the last
	// snapshot start a new one; RaftSnapshotInterval how often raft checks
	// (with jitter up to twice as long); RaftTrailingLogs how many entries
	// a snapshot leaves in the log, for followers a little behind.
	RaftSnapshotThreshold uint64
	RaftSnapshotInterval  time.Duration
	RaftTrailingLogs      uint64
	// RaftElectionTimeout, when set, replaces raft's heartbeat and election
	// timeouts before the multiplier (tests).
	RaftElectionTimeout time.Duration
	// DeadServerCleanup is how long a server stays failed in serf before the
	// leader removes it from raft.
	DeadServerCleanup time.Duration

	// TLS, with EnableRPC, carries RPC and raft inside mutual TLS and
	// refuses plaintext connections.
	TLS *tlsutil.Config
	// SerfEncryptKey, when set, encrypts gossip (server.encrypt): 16, 24
	// or 32 bytes, the same on every server.
	SerfEncryptKey []byte

	// RPCHandshakeTimeout bounds how long a new RPC connection may take
	// to say what it is and finish TLS (limits.rpc_handshake_timeout);
	// 0 waits for ever.
	RPCHandshakeTimeout time.Duration
	// RPCMaxConnsPerClient caps the RPC connections one IP may hold open
	// (limits.rpc_max_conns_per_client); 0 is no limit.
	RPCMaxConnsPerClient int
	// ACLEnabled makes every user-facing endpoint check the caller's ACL
	// token (acl.enabled).
	ACLEnabled bool
	// AuthoritativeRegion is the region whose ACL policies and global
	// tokens this region copies (server.authoritative_region); empty or
	// this server's region: this region's ACLs are its own.
	AuthoritativeRegion string
	// ReplicationToken is the authoritative region's management token the
	// copying is done with (acl.replication_token).
	ReplicationToken string

	// Dialer opens the server's outgoing connections (raft, forwarded
	// RPCs); tests pass a faultable one.
	Dialer pool.Dialer

	// RPCListener, when set, is accepted on instead of listening on
	// RPCAddr; its Addr must be a *net.TCPAddr. With SerfTransport and
	// InMemory it lets a test run a cluster on an in-memory network
	// (under testing/synctest, where real sockets would not be fake-timed).
	RPCListener net.Listener
	// SerfTransport, when set, carries gossip instead of UDP and TCP on
	// SerfAddr.
	SerfTransport memberlist.Transport
	// InMemory keeps raft's stores and the serf snapshot in memory, while
	// raft and serf still run as a cluster (DevMode is a cluster of one).
	InMemory bool

	// NumSchedulers is the number of scheduling workers; one per core by
	// default.
	NumSchedulers     int
	EnabledSchedulers []string

	// EventBufferSize is how many raft entries' event batches the event
	// stream keeps (upstream's server event_buffer_size); 0 means
	// stream.DefaultBufferSize.
	EventBufferSize int

	// Autopilot is the autopilot configuration until one is written
	// through the API (the agent's autopilot block).
	Autopilot *structs.AutopilotConfig

	// Search bounds the search endpoints (upstream's server.search).
	Search structs.SearchConfig

	// Heartbeat settings, with upstream's defaults.
	MinHeartbeatTTL        time.Duration
	MaxHeartbeatsPerSecond float64
	HeartbeatGrace         time.Duration
	FailoverHeartbeatTTL   time.Duration

	// NodeStatusBatchWindow and AllocUpdateBatchWindow are how long the
	// leader gathers node status changes, and clients' allocation
	// updates, to commit them in one raft entry with one evaluation per
	// job. Zero commits at once, still batching what arrives while the
	// previous commit is in flight.
	NodeStatusBatchWindow  time.Duration
	AllocUpdateBatchWindow time.Duration

	// Eval broker settings.
	EvalNackTimeout             time.Duration
	EvalDeliveryLimit           int
	EvalNackInitialReenqueue    time.Duration
	EvalNackSubsequentReenqueue time.Duration

	// Garbage collection on the leader: how often each kind runs (0 turns
	// it off) and how old a finished object must be before it goes.
	// Upstream's defaults. A forced collection (System.GarbageCollect)
	// ignores the thresholds.
	EvalGCInterval  time.Duration
	EvalGCThreshold time.Duration
	JobGCInterval   time.Duration
	JobGCThreshold  time.Duration
	// JobMaxCount caps the instances of one job: the sum of its groups'
	// counts, checked before a registration, a scale or a plan is stored
	// (structs.DefaultJobMaxCount by default).
	JobMaxCount int
	// ClientIntroduction is what a new node must present to register
	// (server.client_introduction; see node_intro.go).
	ClientIntroduction structs.ClientIntroductionConfig
	NodeGCInterval     time.Duration
	NodeGCThreshold    time.Duration
	// Finished deployments (deployment_gc_threshold, upstream's 1h);
	// every job keeps its newest whatever its age.
	DeploymentGCInterval  time.Duration
	DeploymentGCThreshold time.Duration

	// StatsCollectionInterval is how often the leader publishes its
	// gauges (telemetry.collection_interval); 0, the default outside an
	// agent, publishes none.
	StatsCollectionInterval time.Duration
	// GaugeRefreshInterval is how long the leader may go without emitting
	// again a gauge whose value has not changed; 0 emits every gauge at
	// every collection. The agent sets it from its sinks (gaugeRefresh).
	GaugeRefreshInterval time.Duration

	// Clock is the source of time for timers and stamps; tests inject a
	// fake or run under testing/synctest.
	Clock Clock

	// Version is advertised to other servers and clients.
	Version string
}

// DefaultConfig returns the server defaults.
func DefaultConfig() *Config {
	return &Config{
		Region:                      "global",
		Datacenter:                  "dc1",
		RPCAddr:                     &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 4647},
		BootstrapExpect:             1,
		RaftMultiplier:              1,
		RaftSnapshotThreshold:       8192,
		RaftSnapshotInterval:        120 * time.Second,
		RaftTrailingLogs:            10240,
		DeadServerCleanup:           time.Minute,
		NumSchedulers:               runtime.NumCPU(),
		EnabledSchedulers:           []string{"service", "batch", "system", "sysbatch"},
		Search:                      structs.DefaultSearchConfig(),
		Autopilot:                   structs.DefaultAutopilotConfig(),
		MinHeartbeatTTL:             10 * time.Second,
		MaxHeartbeatsPerSecond:      50,
		HeartbeatGrace:              10 * time.Second,
		FailoverHeartbeatTTL:        5 * time.Minute,
		NodeStatusBatchWindow:       defaultNodeStatusBatchWindow,
		AllocUpdateBatchWindow:      defaultAllocUpdateBatchWindow,
		EvalNackTimeout:             60 * time.Second,
		EvalDeliveryLimit:           3,
		EvalNackInitialReenqueue:    1 * time.Second,
		EvalNackSubsequentReenqueue: 20 * time.Second,
		EvalGCInterval:              5 * time.Minute,
		EvalGCThreshold:             time.Hour,
		JobGCInterval:               5 * time.Minute,
		JobGCThreshold:              4 * time.Hour,
		JobMaxCount:                 structs.DefaultJobMaxCount,
		ClientIntroduction:          structs.DefaultClientIntroductionConfig(),
		NodeGCInterval:              5 * time.Minute,
		NodeGCThreshold:             24 * time.Hour,
		DeploymentGCInterval:        5 * time.Minute,
		DeploymentGCThreshold:       time.Hour,
		RPCHandshakeTimeout:         DefaultRPCHandshakeTimeout,
		RPCMaxConnsPerClient:        DefaultRPCMaxConnsPerClient,
		Version:                     "0.1.0",
	}
}
