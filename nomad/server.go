package nomad

import (
	"context"

	"github.com/nomad-edge/nomad/helper/clock"

	"fmt"
	"io"
	"math/rand"
	"net"
	"net/rpc"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/stream"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// Server is a Nomad server: it holds the replicated state, and while it is
// the raft leader it runs the eval broker, the plan applier and the
// heartbeat timers.
type Server struct {
	config *Config
	logger hclog.Logger
	clock  Clock

	// id is this server's raft ID, kept in its data dir across restarts.
	id            string
	raft          *raft.Raft
	raftTransport raft.Transport
	raftLayer     *raftLayer
	raftStores    *raftStores
	fsm           *nomadFSM

	// serf is the LAN gossip pool of servers (nil for a dev server);
	// bootstrapped is set once raft has a configuration; reconcileCh wakes
	// the leader's raft membership loop.
	serf         *serf.Serf
	serfEvents   chan serf.Event
	bootstrapped atomic.Bool
	reconcileCh  chan struct{}

	rpcServer *rpc.Server
	tls       *rpcTLS
	// autoCert is the server's own certificate of tls.auto.
	autoCert    autoCert
	rpcListener net.Listener
	// conns are the accepted RPC connections, closed at shutdown.
	connsMu      sync.Mutex
	conns        map[net.Conn]struct{}
	rpcAdvertise net.Addr
	connPool     *pool.ConnPool
	regionPools  regionPools
	// stable tracks since when each server has been healthy (autopilot).
	stable stableSince
	// nodeConns are the sessions nodes opened to reach them behind NAT.
	nodeConns *nodeConns

	evalBroker   *EvalBroker
	blockedEvals *BlockedEvals
	planQueue    *PlanQueue
	heartbeats   *heartbeater
	// sessions are the nodes' liveness sessions this server holds;
	// ledger, on the leader, which server holds whose (node_session.go).
	sessions *sessionHolder
	ledger   *sessionLedger
	// sites declares and clears site outages while this server leads.
	sites *siteDetector

	// The leader's write batchers: node status changes and client
	// allocation updates of many nodes share raft entries and evaluations.
	nodeStatusBatch  *updateBatcher[nodeStatusChange]
	allocUpdateBatch *updateBatcher[clientAllocUpdate]

	// leaderState is what exists only while this server leads; guarded by
	// leaderLock so leadership changes and RPCs see a consistent view.
	leaderLock sync.Mutex
	leaderStop chan struct{}
	isLeader   atomic.Bool
	// brokerPaused is the scheduler configuration's PauseEvalBroker as
	// last applied; guarded by leaderLock.
	brokerPaused bool

	workers []*worker

	rand *lockedRand

	// identity is the servers' shared secret as last known (see
	// server_identity.go).
	identity *identityCache

	// aclCache keeps compiled ACL policies; see resolveToken.
	aclCache *aclCache

	// encrypter holds the root keys (see keyring.go); varLocks runs the
	// TTLs of variable locks while leading; rekeyCh wakes the rekey duty.
	encrypter *encrypter
	varLocks  *varLocks
	rekeyCh   chan struct{}
	// reassertCh asks monitorLeadership to step through revoke and
	// establish again, after a snapshot restore replaced the state the
	// leader's duties were built from; the error of establish comes back.
	reassertCh chan chan error

	shutdown     atomic.Bool
	shutdownCh   chan struct{}
	wg           sync.WaitGroup
	leaderLoss   broadcast
	leaderChange broadcast
}

// lockedRand is a rand.Rand safe for concurrent use, seeded at start.
type lockedRand struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (l *lockedRand) Int63n(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Int63n(n)
}

// NewServer starts a server: state, raft, RPC listener, leadership monitor
// and scheduling workers.
func NewServer(cfg *Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if err := checkAutoTLSConfig(cfg); err != nil {
		return nil, err
	}
	rpcTLS, err := newRPCTLS(cfg.TLS, cfg.Region)
	if err != nil {
		return nil, err
	}
	s := &Server{
		config:      cfg,
		tls:         rpcTLS,
		logger:      cfg.Logger.Named("server"),
		clock:       cfg.Clock,
		rpcServer:   rpc.NewServer(),
		shutdownCh:  make(chan struct{}),
		serfEvents:  make(chan serf.Event, 256),
		reconcileCh: make(chan struct{}, 1),
		conns:       map[net.Conn]struct{}{},
		nodeConns:   newNodeConns(),
		rand:        &lockedRand{r: rand.New(rand.NewSource(time.Now().UnixNano()))},
		aclCache:    newACLCache(aclCacheSize),
	}
	s.connPool = pool.NewPool(pool.Config{Dialer: cfg.Dialer, DialTLS: s.serverDialTLS, Prover: serverProver{s}, Credentials: &s.autoCert})

	s.evalBroker, err = NewEvalBroker(EvalBrokerConfig{
		NackTimeout:         cfg.EvalNackTimeout,
		InitialNackDelay:    cfg.EvalNackInitialReenqueue,
		SubsequentNackDelay: cfg.EvalNackSubsequentReenqueue,
		DeliveryLimit:       cfg.EvalDeliveryLimit,
		Clock:               cfg.Clock,
	})
	if err != nil {
		return nil, err
	}
	s.blockedEvals = NewBlockedEvals(s.evalBroker, s.logger)
	if s.planQueue, err = NewPlanQueue(); err != nil {
		return nil, err
	}
	s.heartbeats = newHeartbeater(s.heartbeaterDeps())
	s.sessions = newSessionHolder(cfg.Clock.Now)
	s.ledger = newSessionLedger(sessionLedgerDeps{
		grace: max(cfg.HeartbeatGrace, nodeSessionMinGrace), now: cfg.Clock.Now, logger: s.logger.Named("node_sessions"),
		pullIn: s.heartbeats.pullIn, restore: s.heartbeats.restore, serverAlive: s.serverAlive,
	})
	s.nodeStatusBatch = newUpdateBatcher(cfg.Clock, cfg.NodeStatusBatchWindow, maxNodeStatusBatch, s.commitNodeStatuses)
	s.allocUpdateBatch = newUpdateBatcher(cfg.Clock, cfg.AllocUpdateBatchWindow, maxAllocUpdateBatch, s.commitAllocUpdates)
	s.sites = &siteDetector{srv: s}
	if s.encrypter, err = newEncrypter(keystoreDir(cfg)); err != nil {
		return nil, err
	}
	s.varLocks = newVarLocks(s)
	s.rekeyCh = make(chan struct{}, 1)
	s.reassertCh = make(chan chan error)

	s.fsm, err = newFSM(fsmDeps{
		logger:  s.logger,
		events:  stream.NewEventBroker(stream.EventBrokerConfig{BufferSize: cfg.EventBufferSize}),
		evals:   s.evalBroker,
		blocked: s.blockedEvals,
		// Set before the FSM exists: it only runs once entries apply.
		schedulerConfig: func(c *structs.SchedulerConfiguration) { s.setEvalBrokerPaused(c.PauseEvalBroker) },
	})
	if err != nil {
		return nil, err
	}

	if s.id, err = loadServerID(cfg); err != nil {
		return nil, err
	}
	if s.identity, err = loadIdentityCache(cfg); err != nil {
		return nil, err
	}
	if err := s.setupAutoTLS(); err != nil {
		return nil, err
	}
	if err := s.setupRPC(); err != nil {
		return nil, err
	}
	if err := s.setupRaft(); err != nil {
		s.rpcListener.Close()
		return nil, err
	}
	if err := s.setupSerf(); err != nil {
		s.rpcListener.Close()
		_ = s.raft.Shutdown().Error()
		s.raftStores.close()
		return nil, err
	}

	s.wg.Add(5)
	go func() { defer s.wg.Done(); s.listen() }()
	go func() { defer s.wg.Done(); s.watchLeaderLoss() }()
	go func() { defer s.wg.Done(); s.sendSessionDigests() }()
	go func() { defer s.wg.Done(); s.monitorLeadership() }()
	go func() { defer s.wg.Done(); s.replicateKeys() }()
	if s.autoTLSOn() {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.autoTLSLoop() }()
	}

	// Zero workers is allowed: such a server replicates and serves but
	// leaves scheduling to its peers.
	n := max(cfg.NumSchedulers, 0)
	for i := 0; i < n; i++ {
		w := newWorker(s, i)
		s.workers = append(s.workers, w)
		s.wg.Add(1)
		go func() { defer s.wg.Done(); w.run() }()
	}
	s.logger.Info("server started", "rpc", s.rpcAdvertise.String(), "schedulers", n)
	return s, nil
}

func (s *Server) setupRPC() error {
	if err := s.registerEndpoints(s.rpcServer, rpcPeer{local: true}); err != nil {
		return err
	}
	addr := s.config.RPCAddr
	if addr == nil {
		addr = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	}
	l := s.config.RPCListener
	if l == nil {
		tl, err := net.ListenTCP("tcp", addr)
		if err != nil {
			return fmt.Errorf("RPC listener on %s: %w", addr, err)
		}
		l = tl
	}
	s.rpcListener = l
	s.rpcAdvertise = l.Addr()
	if a := s.config.RPCAdvertise; a != nil {
		if a.Port == 0 {
			a = &net.TCPAddr{IP: a.IP, Port: l.Addr().(*net.TCPAddr).Port}
		}
		s.rpcAdvertise = a
	}
	return nil
}

// registerEndpoints registers every RPC endpoint on srv, those that check
// their caller bound to peer.
func (s *Server) registerEndpoints(srv *rpc.Server, peer rpcPeer) error {
	for name, ep := range map[string]any{
		"Job":         &Job{srv: s},
		"Node":        &Node{srv: s},
		"Alloc":       &Alloc{srv: s},
		"Eval":        &Eval{srv: s, peer: peer},
		"Plan":        &Plan{srv: s, peer: peer},
		"Status":      &Status{srv: s, peer: peer},
		"Region":      &Region{srv: s},
		"NodeSession": &NodeSession{srv: s, peer: peer},
		"Operator":    &Operator{srv: s},
		"System":      &System{srv: s},
		"ACL":         &ACL{srv: s},
		"Namespace":   &Namespace{srv: s},
		"NodePool":    &NodePool{srv: s},
		"Search":      &Search{srv: s},
		"Event":       &Event{srv: s},
		"Deployment":  &Deployment{srv: s},
		"Variables":   &Variables{srv: s},
		"Keyring":     &Keyring{srv: s, peer: peer},
		"ServerTLS":   &ServerTLS{srv: s},
		// The service catalog (services with provider "nomad").
		"ServiceRegistration": &ServiceRegistration{srv: s},
		"Scaling":             &Scaling{srv: s},
	} {
		if err := srv.RegisterName(name, ep); err != nil {
			return fmt.Errorf("registering %s endpoint: %w", name, err)
		}
	}
	return nil
}

// IsLeader reports whether this server currently leads.
func (s *Server) IsLeader() bool { return s.isLeader.Load() }

// Leader returns the leader's RPC address, or "".
func (s *Server) Leader() string {
	addr, _ := s.raft.LeaderWithID()
	return string(addr)
}

// State returns the current state store.
func (s *Server) State() *state.StateStore { return s.fsm.State() }

// EventBroker returns the server's event stream, fed by its own FSM.
func (s *Server) EventBroker() *stream.EventBroker { return s.fsm.Events() }

// RPCAddr returns the advertised RPC address.
func (s *Server) RPCAddr() net.Addr { return s.rpcAdvertise }

func (s *Server) isShutdown() bool { return s.shutdown.Load() }

// Shutdown stops the server.
func (s *Server) Shutdown() error {
	if s.shutdown.Swap(true) {
		return nil
	}
	close(s.shutdownCh)
	s.rpcListener.Close()
	s.closeConns()
	if s.serf != nil {
		if err := s.serf.Shutdown(); err != nil {
			s.logger.Warn("serf shutdown", "error", err)
		}
	}
	if s.raft != nil {
		if err := s.raft.Shutdown().Error(); err != nil {
			s.logger.Warn("raft shutdown", "error", err)
		}
	}
	// Closing the transport (which closes the raft layer) after raft marks
	// it shut down, so its accept loop ends quietly.
	if c, ok := s.raftTransport.(io.Closer); ok {
		_ = c.Close()
	}
	if s.raftLayer != nil {
		s.raftLayer.Close()
	}
	if s.raftStores != nil {
		if err := s.raftStores.close(); err != nil {
			s.logger.Warn("closing raft store", "error", err)
		}
	}
	s.revokeLeadership()
	s.evalBroker.SetEnabled(false)
	s.planQueue.SetEnabled(false)
	s.connPool.Shutdown()
	s.regionPools.shutdown()
	s.waitGoroutines(shutdownWait)
	s.fsm.State().Abandon()
	s.fsm.Events().Close()
	return nil
}

// shutdownWait bounds how long Shutdown waits for the server's goroutines.
const shutdownWait = 10 * time.Second

// waitGoroutines waits for the server's goroutines to end, for at most d.
// Raft can drop a write it had already taken when it shuts down (one
// queued for its FSM), and that write's future has nothing to give up on:
// a worker waiting on it would keep the server, and the agent on SIGTERM,
// from ever stopping. Such a goroutine is left behind, named in the log;
// the state it would touch is abandoned next.
func (s *Server) waitGoroutines(d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		s.logger.Warn("shutdown: goroutines still running, leaving them behind (a raft write dropped at shutdown never answers)", "waited", d)
		return false
	}
}

// WaitForLeader returns once this server knows a leader and, if it is that
// leader, has finished taking up its duties; or when ctx ends.
func (s *Server) WaitForLeader(ctx context.Context) error {
	for {
		changed := s.leaderChange.wait()
		leader := s.Leader()
		if leader != "" && (leader != s.rpcAdvertise.String() || s.IsLeader()) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.shutdownCh:
			return structs.ErrServerShutdown
		}
	}
}
