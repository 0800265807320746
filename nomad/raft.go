package nomad

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	bolt "go.etcd.io/bbolt"
	boltErrors "go.etcd.io/bbolt/errors"

	"github.com/nomad-edge/nomad/helper/atomicfile"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// raftDirName is where a server keeps its raft log, stable store and
// snapshots, under the server's data dir.
const raftDirName = "raft"

// raftStoreOpenTimeout bounds the wait for the raft store's file lock, so a
// second agent on the same data dir fails with a clear error instead of
// hanging.
const raftStoreOpenTimeout = 2 * time.Second

// raftLayer is the raft.StreamLayer that shares the RPC port: the RPC
// accept loop hands it every connection whose first byte is pool.RPCRaft
// (inside TLS with tls.rpc, and with tls.auto once the server has its
// certificate), and its Dial writes that byte before raft speaks.
type raftLayer struct {
	addr   net.Addr
	dialer pool.Dialer
	// tls is what each dial goes out with, nil for plaintext: decided at
	// the dial, since a server of tls.auto dials with its certificate
	// only once it has one (serverDialTLS).
	tls func() *tls.Config
	// prover proves this server to the peer it dials (see
	// server_identity.go).
	prover pool.ServerProver

	conns    chan net.Conn
	closeMu  sync.Mutex
	closed   bool
	closedCh chan struct{}
}

var _ raft.StreamLayer = (*raftLayer)(nil)

func newRaftLayer(addr net.Addr, dialer pool.Dialer, tlsCfg func() *tls.Config, prover pool.ServerProver) *raftLayer {
	if dialer == nil {
		dialer = &net.Dialer{}
	}
	if tlsCfg == nil {
		tlsCfg = func() *tls.Config { return nil }
	}
	return &raftLayer{addr: addr, dialer: dialer, tls: tlsCfg, prover: prover, conns: make(chan net.Conn), closedCh: make(chan struct{})}
}

// handoff gives an accepted connection to raft; it closes the connection
// when the layer is closed.
func (l *raftLayer) handoff(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.closedCh:
		c.Close()
	}
}

// Accept implements net.Listener.
func (l *raftLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closedCh:
		return nil, errors.New("raft layer closed")
	}
}

// Close implements net.Listener.
func (l *raftLayer) Close() error {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.closedCh)
	}
	return nil
}

// Addr implements net.Listener: the advertised RPC address, which is what
// peers dial.
func (l *raftLayer) Addr() net.Addr { return l.addr }

// Dial implements raft.StreamLayer.
func (l *raftLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return pool.Dial(ctx, pool.DialInput{Dialer: l.dialer, Addr: string(address), TLS: l.tls(), Kind: pool.RPCRaft, Prover: l.prover})
}

// raftStores are the log, stable and snapshot stores of one server, and
// what must be closed on shutdown.
type raftStores struct {
	log    raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	close  func() error
}

// openRaftStores opens the on-disk stores under dir, or in-memory ones for
// a dev server. A store that cannot be opened is reported with its path.
func openRaftStores(dir string, dev bool, logger hclog.Logger) (*raftStores, error) {
	if dev {
		store := raft.NewInmemStore()
		return &raftStores{log: store, stable: store, snaps: raft.NewInmemSnapshotStore(), close: func() error { return nil }}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating raft dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, "raft.db")
	if err := checkRaftStore(path); err != nil {
		return nil, err
	}
	store, err := openBoltStore(raftboltdb.Options{
		Path:        path,
		BoltOptions: &bolt.Options{Timeout: raftStoreOpenTimeout, NoFreelistSync: true},
	})
	if err != nil {
		if errors.Is(err, boltErrors.ErrTimeout) {
			return nil, errRaftStoreLocked(path)
		}
		return nil, fmt.Errorf("opening raft store %s: %w", path, err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logger.Named("snapshot"))
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("opening raft snapshots in %s: %w", dir, err)
	}
	// The leader sends followers the entries it has just written; without
	// a cache each is read back from bolt and decoded again (a sixth of the
	// leader's CPU in a 1,000-node reconnect storm). Upstream keeps 512.
	cached, err := raft.NewLogCache(raftLogCacheSize, store)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("raft log cache: %w", err)
	}
	stable := &closingStable{store: store, logger: logger.Named("stable")}
	closeAll := func() error {
		stable.close()
		return store.Close()
	}
	return &raftStores{log: cached, stable: stable, snaps: snaps, close: closeAll}, nil
}

// raftLogCacheSize is how many of the newest raft entries are kept in
// memory, upstream's figure.
const raftLogCacheSize = 512

// raftConfig returns raft's settings for this server. Timeouts scale with
// raft_multiplier as upstream's do; a dev server, alone, elects itself at
// once.
func (s *Server) raftConfig() *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(s.id)
	conf.Logger = s.logger.Named("raft")
	conf.LogLevel = "WARN"
	conf.ShutdownOnRemove = false
	// Not BatchApplyCh: an apply buffered in its channel when raft shuts
	// down is never answered, and its caller waits forever (the in-process
	// cluster tests caught it as a deadlock at shutdown). Without it the
	// leader still takes every apply waiting to be sent, up to
	// MaxAppendEntries, into one log write and one fsync.
	if s.config.DevMode {
		conf.HeartbeatTimeout = 50 * time.Millisecond
		conf.ElectionTimeout = 50 * time.Millisecond
		conf.LeaderLeaseTimeout = 50 * time.Millisecond
		conf.CommitTimeout = 5 * time.Millisecond
		return conf
	}
	mult := time.Duration(max(s.config.RaftMultiplier, 1))
	if d := s.config.RaftElectionTimeout; d > 0 {
		// Tests shrink every timeout together.
		conf.HeartbeatTimeout = d
		conf.ElectionTimeout = d
		conf.LeaderLeaseTimeout = d / 2
	}
	conf.HeartbeatTimeout *= mult
	conf.ElectionTimeout *= mult
	conf.LeaderLeaseTimeout *= mult
	// Snapshots bound the log a restarted server replays.
	if s.config.RaftSnapshotThreshold > 0 {
		conf.SnapshotThreshold = s.config.RaftSnapshotThreshold
	}
	if s.config.RaftSnapshotInterval > 0 {
		conf.SnapshotInterval = s.config.RaftSnapshotInterval
	}
	if s.config.RaftTrailingLogs > 0 {
		conf.TrailingLogs = s.config.RaftTrailingLogs
	}
	return conf
}

// newRaftNetTransport is the servers' raft transport over the RPC port's
// raft layer. It replicates one AppendEntries at a time to each follower
// (MaxRPCsInFlight 1), not pipelined: hashicorp/raft v1.8.0's pipeline
// deadlocks when a follower refuses an entry (Success=false: its disk
// failed the write, or its log does not match after an election). The
// pipeline's decoder stops reading responses, the sender then blocks
// handing over its next request, and neither is ever woken: the leader
// keeps heartbeating that follower but sends it no entry again, and its
// own shutdown hangs on the stuck replication goroutine (the chaos run
// saw both: a server that did not stop within 20 s of SIGTERM, stuck in
// netPipeline.AppendEntries). Entries still go out in batches of up to
// MaxAppendEntries, so one round trip per batch is what this costs.
func newRaftNetTransport(stream raft.StreamLayer, logger hclog.Logger) *raft.NetworkTransport {
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:          stream,
		MaxPool:         3,
		MaxRPCsInFlight: 1,
		Timeout:         10 * time.Second,
		Logger:          logger,
	})
}

func (s *Server) setupRaft() error {
	conf := s.raftConfig()
	stores, err := openRaftStores(filepath.Join(s.config.DataDir, raftDirName), s.config.DevMode || s.config.InMemory, s.logger.Named("raft"))
	if err != nil {
		return err
	}
	s.raftStores = stores

	var trans raft.Transport
	if s.config.DevMode {
		_, trans = raft.NewInmemTransport(raft.ServerAddress(s.rpcAdvertise.String()))
	} else {
		s.raftLayer = newRaftLayer(s.rpcAdvertise, s.config.Dialer, s.serverDialTLS, serverProver{s})
		trans = newRaftNetTransport(s.raftLayer, s.logger.Named("raft-net"))
	}
	s.raftTransport = trans

	existing, err := raft.HasExistingState(stores.log, stores.stable, stores.snaps)
	if err != nil {
		stores.close()
		return fmt.Errorf("reading raft state in %s: %w", s.config.DataDir, err)
	}
	// A dev server, or a production one told it is alone, bootstraps at
	// once; a cluster waits until bootstrap_expect servers see each other
	// over serf (maybeBootstrap).
	if !existing && (s.config.DevMode || s.config.BootstrapExpect == 1) {
		if err := raft.BootstrapCluster(conf, stores.log, stores.stable, stores.snaps, trans, raft.Configuration{
			Servers: []raft.Server{{ID: conf.LocalID, Address: trans.LocalAddr()}},
		}); err != nil {
			stores.close()
			return fmt.Errorf("bootstrapping raft: %w", err)
		}
	}
	if existing {
		s.logger.Info("raft state found; rejoining the cluster without bootstrapping", "data_dir", s.config.DataDir)
	}
	r, err := raft.NewRaft(conf, s.fsm, stores.log, stores.stable, stores.snaps, trans)
	if err != nil {
		stores.close()
		return fmt.Errorf("starting raft: %w", err)
	}
	s.raft = r
	return nil
}

// serverIDFile holds a server's raft ID under its data dir, so a restarted
// server is the same raft member.
const serverIDFile = "node-id"

// loadServerID returns the server's persistent ID, creating it on first
// start; a dev server gets a fresh one.
func loadServerID(cfg *Config) (string, error) {
	if cfg.DevMode || cfg.DataDir == "" {
		return structs.GenerateUUID(), nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return "", fmt.Errorf("creating server data dir %s: %w", cfg.DataDir, err)
	}
	path := filepath.Join(cfg.DataDir, serverIDFile)
	buf, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(buf))
		if !uuidPattern.MatchString(id) {
			return "", fmt.Errorf("server ID file %s is corrupt: %q is not a UUID; remove it only if this server's raft data is gone too", path, id)
		}
		return id, nil
	case errors.Is(err, os.ErrNotExist):
		id := structs.GenerateUUID()
		if err := atomicfile.Write(path, []byte(id+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("writing server ID %s: %w", path, err)
		}
		return id, nil
	default:
		return "", fmt.Errorf("reading server ID %s: %w", path, err)
	}
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
