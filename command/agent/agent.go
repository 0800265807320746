package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Version is the agent's version, advertised by the server, the client's
// node attributes and `nomad version`.
const Version = "0.1.0"

// Agent is one agent process: a server, a client or both, and the HTTP API
// in front of them.
type Agent struct {
	// remote reaches the servers of a client-only agent; autoTLS is its
	// node's credentials under tls.auto (nil otherwise).
	remote  *client.ServerRPC
	autoTLS *client.AutoTLS
	config  *Config
	logger  hclog.Logger

	server    *nomad.Server
	client    *client.Client
	http      *HTTPServer
	telemetry *agentTelemetry

	dataDir string
	// tempDataDir is set when dataDir was made for a -dev agent and must
	// be removed on shutdown.
	tempDataDir bool

	// lock is held on dataDir while the agent runs.
	lock *dataDirLock

	// stopCh closes at shutdown; wg waits for the agent's own goroutines
	// (retry_join).
	stopCh chan struct{}
	wg     sync.WaitGroup

	shutdownOnce sync.Once
	shutdownErr  error
}

// NewAgent validates cfg and starts the server (when enabled), the HTTP
// API and then the client (when enabled), which talks to the in-process
// server. On error everything already started is stopped again.
func NewAgent(cfg *Config, logger hclog.Logger) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	logger = interceptable(logger)
	a := &Agent{config: cfg, logger: logger, dataDir: cfg.DataDir, stopCh: make(chan struct{})}
	if err := a.start(); err != nil {
		_ = a.Shutdown()
		return nil, err
	}
	return a, nil
}

func (a *Agent) start() error {
	cfg := a.config
	if !cfg.Server.Enabled && (!cfg.Client.Enabled || len(cfg.Client.serverAddrs()) == 0) {
		return errors.New("a client-only agent needs the servers' RPC addresses: set client { servers = [\"host:4647\"] } or client { server_join { retry_join = [...] } }, or enable the server as well (-dev or server { enabled = true })")
	}
	if a.dataDir == "" {
		dir, err := os.MkdirTemp("", "nomad-dev-")
		if err != nil {
			return fmt.Errorf("creating dev data dir: %w", err)
		}
		a.dataDir, a.tempDataDir = dir, true
	}
	lock, err := lockDataDir(a.dataDir)
	if err != nil {
		return err
	}
	a.lock = lock
	bindIP := net.ParseIP(cfg.BindAddr)
	if bindIP == nil {
		return fmt.Errorf("invalid bind address %q: must be an IP address", cfg.BindAddr)
	}
	// Before the server: raft and serf emit from their first moment.
	if a.telemetry, err = setupTelemetry(cfg); err != nil {
		return err
	}

	// rpc is where this agent's HTTP API and client send their RPCs: the
	// server in this process, or the remote servers of a client-only agent.
	var rpc client.RPCHandler
	if cfg.Server.Enabled {
		sc, err := a.serverConfig(bindIP)
		if err != nil {
			return err
		}
		if a.server, err = nomad.NewServer(sc); err != nil {
			return fmt.Errorf("starting server: %w", err)
		}
		rpc = a.server
		if err := a.startJoin(); err != nil {
			return err
		}
	} else {
		if err := a.loadAutoTLS(); err != nil {
			return err
		}
		outTLS, err := a.outgoingRPCTLS()
		if err != nil {
			return err
		}
		pc := pool.Config{TLS: outTLS}
		if a.autoTLS != nil {
			pc.Credentials = a.autoTLS
		}
		remote, err := client.NewServerRPCWithPool(cfg.Client.serverAddrs(), pc)
		if err != nil {
			return err
		}
		a.remote = remote
		rpc = remote
	}

	// The HTTP listener comes before the client so that the client can
	// advertise the actual address when the port was picked by the OS.
	httpIP := listenIP(cfg.addresses().HTTP, bindIP)
	l, err := net.Listen("tcp", net.JoinHostPort(httpIP.String(), strconv.Itoa(cfg.Ports.HTTP)))
	if err != nil {
		return fmt.Errorf("starting HTTP API: %w", err)
	}
	l = limitHTTPListener(l, httpLimitsInput{
		MaxPerClient: cfg.connLimits().HTTPMaxConnsPerClient,
		Plaintext:    a.HTTPScheme() == "http",
		Logger:       a.logger.Named("http"),
	})
	if l, err = a.httpsListener(l); err != nil {
		return err
	}
	a.http = newHTTPServer(a, rpc, l, a.logger)
	if a.server != nil {
		a.server.SetClientHTTPHandler(a.http.clientAPIHandler())
	}

	if cfg.Client.Enabled {
		if a.server != nil {
			if len(cfg.Client.serverAddrs()) > 0 {
				a.logger.Warn("client.servers and client.server_join are ignored: the client uses the server in this agent")
			}
			// The client's first act is to register with a leader. A lone
			// dev server elects itself within milliseconds: waiting for
			// that spares the client a failed registration and its backoff.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := a.server.WaitForLeader(ctx); err != nil {
				a.logger.Warn("no cluster leader yet; the client will keep retrying", "error", err)
			}
			cancel()
		}
		c, err := client.NewClient(a.clientConfig(rpc))
		if err != nil {
			return fmt.Errorf("starting client: %w", err)
		}
		a.client = c
		if a.remote != nil {
			a.startNodeSession()
		}
	}
	return nil
}

func (a *Agent) serverConfig(bindIP net.IP) (*nomad.Config, error) {
	cfg := a.config
	sc := nomad.DefaultConfig()
	sc.Logger = a.logger
	sc.NodeName = cfg.nodeName()
	sc.Region = cfg.Region
	sc.Datacenter = cfg.Datacenter
	sc.DataDir = filepath.Join(a.dataDir, "server")
	if cfg.Server.DataDir != "" {
		sc.DataDir = cfg.Server.DataDir
	}
	sc.DevMode = cfg.DevMode
	sc.Version = Version
	sc.RPCAddr = &net.TCPAddr{IP: listenIP(cfg.addresses().RPC, bindIP), Port: cfg.Ports.RPC}
	sc.SerfAddr = &net.TCPAddr{IP: listenIP(cfg.addresses().Serf, bindIP), Port: cfg.Ports.Serf}
	if adv := cfg.AdvertiseAddrs.RPC; adv != "" {
		addr, err := advertiseAddr(adv, cfg.Ports.RPC)
		if err != nil {
			return nil, fmt.Errorf("advertise.rpc: %w", err)
		}
		sc.RPCAdvertise = addr
	} else if sc.RPCAddr.IP.IsUnspecified() {
		// Peers cannot dial 0.0.0.0: advertise the address the host
		// would use to reach the others, as upstream does.
		ip, err := defaultAdvertiseIP()
		if err != nil {
			return nil, err
		}
		sc.RPCAdvertise = &net.TCPAddr{IP: ip, Port: cfg.Ports.RPC}
	}
	if adv := cfg.AdvertiseAddrs.Serf; adv != "" {
		addr, err := advertiseAddr(adv, cfg.Ports.Serf)
		if err != nil {
			return nil, fmt.Errorf("advertise.serf: %w", err)
		}
		sc.SerfAdvertise = addr
	} else if sc.SerfAddr.IP.IsUnspecified() && sc.RPCAdvertise != nil {
		sc.SerfAdvertise = &net.TCPAddr{IP: sc.RPCAdvertise.IP, Port: cfg.Ports.Serf}
	}
	if v := cfg.Server.RaftMultiplier; v > 0 {
		sc.RaftMultiplier = v
	}
	if v := cfg.Server.RaftSnapshotThreshold; v > 0 {
		sc.RaftSnapshotThreshold = uint64(v)
	}
	if v := cfg.Server.RaftSnapshotInterval; v > 0 {
		sc.RaftSnapshotInterval = v
	}
	if v := cfg.Server.RaftTrailingLogs; v > 0 {
		sc.RaftTrailingLogs = uint64(v)
	}
	if v := cfg.Server.EvalGCThreshold; v > 0 {
		sc.EvalGCThreshold = v
	}
	if v := cfg.Server.JobGCThreshold; v > 0 {
		sc.JobGCThreshold = v
	}
	if v := cfg.Server.NodeGCThreshold; v > 0 {
		sc.NodeGCThreshold = v
	}
	if v := cfg.Server.DeploymentGCThreshold; v > 0 {
		sc.DeploymentGCThreshold = v
	}
	if v := cfg.Server.BootstrapExpect; v > 0 {
		sc.BootstrapExpect = v
	}
	if v := cfg.Server.NumSchedulers; v > 0 {
		sc.NumSchedulers = v
	}
	if v := cfg.Server.JobMaxCount; v > 0 {
		sc.JobMaxCount = v
	}
	if v := cfg.Server.ClientIntroduction; v != nil {
		sc.ClientIntroduction = *v
	}
	sc.EventBufferSize = cfg.Server.EventBufferSize
	cfg.Server.Search.apply(&sc.Search)
	sc.Autopilot = structs.DefaultAutopilotConfig()
	cfg.Autopilot.apply(sc.Autopilot)
	if v := cfg.Server.HeartbeatGrace; v > 0 {
		sc.HeartbeatGrace = v
	}
	if v := cfg.Server.MinHeartbeatTTL; v > 0 {
		sc.MinHeartbeatTTL = v
	}
	if v := cfg.Server.FailoverHeartbeatTTL; v > 0 {
		sc.FailoverHeartbeatTTL = v
	}
	if v := cfg.Server.MaxHeartbeatsPerSecond; v > 0 {
		sc.MaxHeartbeatsPerSecond = v
	}
	lim := cfg.connLimits()
	sc.RPCHandshakeTimeout = lim.RPCHandshakeTimeout
	sc.RPCMaxConnsPerClient = lim.RPCMaxConnsPerClient
	if cfg.TLSConfig != nil && (cfg.TLSConfig.EnableRPC || cfg.TLSConfig.Auto) {
		sc.TLS = cfg.tlsutilConfig()
	}
	key, err := cfg.Server.encryptKey()
	if err != nil {
		return nil, err
	}
	sc.SerfEncryptKey = key
	sc.ACLEnabled = cfg.ACL != nil && cfg.ACL.Enabled
	sc.AuthoritativeRegion = cfg.Server.AuthoritativeRegion
	if cfg.ACL != nil {
		sc.ReplicationToken = cfg.ACL.ReplicationToken
	}
	sc.StatsCollectionInterval = cfg.telemetry().CollectionInterval
	sc.GaugeRefreshInterval = gaugeRefresh(cfg.telemetry())
	return sc, nil
}

func (a *Agent) clientConfig(rpc client.RPCHandler) *client.Config {
	cfg := a.config
	tc := cfg.telemetry()
	httpAddr := a.http.Addr().String()
	if adv := cfg.AdvertiseAddrs.HTTP; adv != "" {
		if addr, err := advertiseAddr(adv, a.http.Addr().(*net.TCPAddr).Port); err == nil {
			httpAddr = addr.String()
		}
	}
	return &client.Config{
		Logger:     a.logger,
		RPCHandler: rpc,
		StateDir:   filepath.Join(a.dataDir, "client"),
		AllocDir:   filepath.Join(a.dataDir, "alloc"),
		// An upstream client's data_dir is taken over as it is.
		UpstreamDataDir: a.dataDir,
		NodeName:        cfg.nodeName(),
		IntroToken:      clientIntroToken(cfg.Client.IntroToken),
		AutoTLS:         a.autoTLS,
		Datacenter:      cfg.Datacenter,
		NodeClass:       cfg.Client.NodeClass,
		NodePool:        cfg.Client.NodePool,
		Region:          cfg.Region,
		Meta:            cfg.Client.Meta,
		HTTPAddr:        httpAddr,
		Version:         Version,
		PluginConfig:    cfg.PluginConfigs(),
		MaxKillTimeout:  cfg.Client.MaxKillTimeout,
		ChrootEnv:       cfg.Client.ChrootEnv,
		Options:         cfg.Client.Options,
		Artifact:        cfg.Client.Artifact.clientConfig(),
		Template:        cfg.Client.Template.clientConfig(),
		HostVolumes:     cfg.Client.hostVolumes(),

		NetworkInterface: cfg.Client.NetworkInterface,
		HostNetworks:     cfg.Client.hostNetworks(),
		Bridge:           cfg.Client.bridgeNetwork(),
		Resources:        cfg.Client.resources(),
		GC:               cfg.Client.gc(),

		StatsCollectionInterval:  tc.CollectionInterval,
		PublishNodeMetrics:       tc.PublishNodeMetrics,
		PublishAllocationMetrics: tc.PublishAllocationMetrics,
	}
}

// advertiseAddr parses "host" or "host:port"; a missing port is def.
func advertiseAddr(s string, def int) (*net.TCPAddr, error) {
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		host, portStr = s, strconv.Itoa(def)
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, fmt.Errorf("%q is not an IP address", host)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("%q has an invalid port", s)
	}
	return &net.TCPAddr{IP: ip, Port: port}, nil
}

// Config returns the agent's configuration. Callers must not change it.
func (a *Agent) Config() *Config { return a.config }

// Server returns the in-process server, or nil.
func (a *Agent) Server() *nomad.Server { return a.server }

// Client returns the in-process client, or nil.
func (a *Agent) Client() *client.Client { return a.client }

// HTTPAddr returns the address the HTTP API listens on.
func (a *Agent) HTTPAddr() net.Addr { return a.http.Addr() }

// DataDir returns the agent's data directory.
func (a *Agent) DataDir() string { return a.dataDir }

// Shutdown stops the HTTP API, the client and the server, in that order.
// A -dev agent also kills its tasks and removes its temporary data dir,
// as upstream's does: nothing of a dev agent outlives it. Any other
// client leaves its tasks running for the next agent to re-attach.
func (a *Agent) Shutdown() error {
	a.shutdownOnce.Do(func() {
		close(a.stopCh)
		a.wg.Wait()
		var errs []error
		if a.http != nil {
			a.http.Shutdown()
		}
		if a.client != nil {
			stop := a.client.Shutdown
			if a.config.DevMode {
				stop = a.client.Destroy
			}
			if err := stop(); err != nil {
				errs = append(errs, fmt.Errorf("stopping client: %w", err))
			}
		}
		if a.server != nil {
			if err := a.server.Shutdown(); err != nil {
				errs = append(errs, fmt.Errorf("stopping server: %w", err))
			}
		}
		if a.remote != nil {
			a.remote.Shutdown()
		}
		a.telemetry.stop()
		a.lock.release()
		if a.tempDataDir {
			if err := os.RemoveAll(a.dataDir); err != nil {
				errs = append(errs, fmt.Errorf("removing dev data dir: %w", err))
			}
		}
		a.shutdownErr = errors.Join(errs...)
	})
	return a.shutdownErr
}
