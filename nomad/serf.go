package nomad

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/serf/serf"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Serf tag names, upstream's, so that a member list reads the same.
const (
	serfTagRole        = "role"
	serfTagRegion      = "region"
	serfTagDC          = "dc"
	serfTagBuild       = "build"
	serfTagVsn         = "vsn"
	serfTagRaftVsn     = "raft_vsn"
	serfTagID          = "id"
	serfTagRPCAddr     = "rpc_addr"
	serfTagPort        = "port"
	serfTagExpect      = "expect"
	serfTagBootstrap   = "bootstrap"
	serfRoleNomad      = "nomad"
	serfSnapshotSubdir = "serf"
)

// serverParts is what a serf member says about the Nomad server behind it.
type serverParts struct {
	Name       string
	ID         string
	Region     string
	Datacenter string
	Build      string
	Expect     int
	RaftVsn    int
	RPCAddr    *net.TCPAddr
	Status     serf.MemberStatus
}

// parseServer returns the server a serf member stands for; ok is false for
// members that are not Nomad servers (or say too little to be used).
func parseServer(m serf.Member) (*serverParts, bool) {
	if m.Tags[serfTagRole] != serfRoleNomad {
		return nil, false
	}
	port, err := strconv.Atoi(m.Tags[serfTagPort])
	if err != nil {
		return nil, false
	}
	ip := m.Addr
	if a := net.ParseIP(m.Tags[serfTagRPCAddr]); a != nil {
		ip = a
	}
	expect, _ := strconv.Atoi(m.Tags[serfTagExpect])
	raftVsn, _ := strconv.Atoi(m.Tags[serfTagRaftVsn])
	return &serverParts{
		Name:       m.Name,
		ID:         m.Tags[serfTagID],
		Region:     m.Tags[serfTagRegion],
		Datacenter: m.Tags[serfTagDC],
		Build:      m.Tags[serfTagBuild],
		Expect:     expect,
		RaftVsn:    raftVsn,
		RPCAddr:    &net.TCPAddr{IP: ip, Port: port},
		Status:     m.Status,
	}, true
}

// setupSerf starts this server's membership in the LAN gossip pool. Serf
// finds the other servers, carries each one's version (the mixed-version
// gate reads it) and detects failed ones; raft membership follows it.
func (s *Server) setupSerf() error {
	if s.config.DevMode {
		return nil
	}
	conf := serf.DefaultConfig()
	conf.Init()
	conf.NodeName = fmt.Sprintf("%s.%s", s.config.NodeName, s.config.Region)
	rpcAddr := s.rpcAdvertise.(*net.TCPAddr)
	conf.Tags = map[string]string{
		serfTagRole:    serfRoleNomad,
		serfTagRegion:  s.config.Region,
		serfTagDC:      s.config.Datacenter,
		serfTagBuild:   s.config.Version,
		serfTagVsn:     "1",
		serfTagRaftVsn: "3",
		serfTagID:      s.id,
		serfTagRPCAddr: rpcAddr.IP.String(),
		serfTagPort:    strconv.Itoa(rpcAddr.Port),
	}
	if s.config.BootstrapExpect > 1 {
		conf.Tags[serfTagExpect] = strconv.Itoa(s.config.BootstrapExpect)
	} else if s.config.BootstrapExpect == 1 {
		conf.Tags[serfTagBootstrap] = "1"
	}
	ml := memberlist.DefaultLANConfig()
	bind := s.config.SerfAddr
	if bind == nil {
		bind = &net.TCPAddr{IP: net.ParseIP("127.0.0.1")}
	}
	ml.BindAddr = bind.IP.String()
	ml.BindPort = bind.Port
	ml.Transport = s.config.SerfTransport
	if a := s.config.SerfAdvertise; a != nil {
		ml.AdvertiseAddr = a.IP.String()
		ml.AdvertisePort = a.Port
	}
	ml.SecretKey = s.config.SerfEncryptKey
	if s.config.SerfTimeScale > 0 {
		scaleMemberlist(ml, s.config.SerfTimeScale)
	}
	// A log.Logger without flags: serf's lines then start with their
	// "[LEVEL]" and hclog files them at that level. A date prefix would
	// hide the level and log memberlist's DEBUG chatter at INFO.
	stdLog := s.logger.Named("serf").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	ml.LogOutput, ml.Logger = nil, stdLog
	conf.LogOutput, conf.Logger = nil, stdLog
	conf.MemberlistConfig = ml
	conf.EventCh = s.serfEvents
	conf.RejoinAfterLeave = true
	// Servers that failed are forgotten after a day, as upstream's.
	conf.ReconnectTimeout = 24 * time.Hour
	if !s.config.InMemory {
		dir := filepath.Join(s.config.DataDir, serfSnapshotSubdir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating serf dir %s: %w", dir, err)
		}
		conf.SnapshotPath = filepath.Join(dir, "local.snapshot")
	}
	sf, err := serf.Create(conf)
	if err != nil {
		return fmt.Errorf("starting serf on %s:%d: %w", ml.BindAddr, ml.BindPort, err)
	}
	s.serf = sf
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.serfEventLoop() }()
	return nil
}

// scaleMemberlist shrinks memberlist's probe and gossip timers, for tests
// that need a failed server detected in well under a second.
func scaleMemberlist(ml *memberlist.Config, f float64) {
	sc := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	ml.ProbeInterval = sc(ml.ProbeInterval)
	ml.ProbeTimeout = sc(ml.ProbeTimeout)
	ml.GossipInterval = sc(ml.GossipInterval)
	ml.PushPullInterval = sc(ml.PushPullInterval)
	ml.SuspicionMult = 2
}

// serfEventLoop follows membership: it records servers, tries to bootstrap
// once enough are seen, and asks the leader to reconcile raft membership.
func (s *Server) serfEventLoop() {
	for {
		select {
		case e := <-s.serfEvents:
			me, ok := e.(serf.MemberEvent)
			if !ok {
				continue
			}
			for _, m := range me.Members {
				p, ok := parseServer(m)
				if !ok || p.Region != s.config.Region {
					continue
				}
				switch me.EventType() {
				case serf.EventMemberJoin:
					s.logger.Info("server joined", "name", p.Name, "rpc", p.RPCAddr)
				case serf.EventMemberFailed:
					s.logger.Info("server failed", "name", p.Name)
				case serf.EventMemberLeave:
					s.logger.Info("server left", "name", p.Name)
				}
			}
			s.maybeBootstrap()
			s.triggerReconcile()
		case <-s.shutdownCh:
			return
		}
	}
}

// regionServers returns the serf members that are Nomad servers of this
// server's region.
func (s *Server) regionServers() []*serverParts {
	if s.serf == nil {
		return nil
	}
	var out []*serverParts
	for _, m := range s.serf.Members() {
		if p, ok := parseServer(m); ok && p.Region == s.config.Region {
			out = append(out, p)
		}
	}
	return out
}

// maybeBootstrap bootstraps raft once bootstrap_expect servers of the
// region are alive in serf, agree on bootstrap_expect, and none of them
// already has raft peers. Every server does it with the same configuration,
// so whichever bootstraps first the result is one cluster.
func (s *Server) maybeBootstrap() {
	if s.config.BootstrapExpect <= 1 || s.bootstrapped.Load() {
		return
	}
	if fut := s.raft.GetConfiguration(); fut.Error() == nil && len(fut.Configuration().Servers) > 0 {
		s.bootstrapped.Store(true)
		return
	}
	var alive []*serverParts
	for _, p := range s.regionServers() {
		if p.Status != serf.StatusAlive {
			continue
		}
		if p.Expect != s.config.BootstrapExpect {
			s.logger.Error("servers disagree on bootstrap_expect; not bootstrapping until they agree",
				"this_server", s.config.BootstrapExpect, "peer", p.Name, "peer_bootstrap_expect", p.Expect)
			return
		}
		alive = append(alive, p)
	}
	if len(alive) < s.config.BootstrapExpect {
		return
	}
	var servers []raft.Server
	for _, p := range alive {
		if p.ID == "" {
			s.logger.Error("peer advertises no server ID; not bootstrapping", "peer", p.Name)
			return
		}
		if p.ID != s.id {
			// A peer that already has raft peers was bootstrapped by a
			// cluster we must join, not found a second one beside it.
			var peers []string
			if err := s.connPool.RPC(p.RPCAddr.String(), "Status.Peers", &structs.GenericRequest{}, &peers, 0); err != nil {
				s.logger.Debug("bootstrap: asking peer for its raft peers", "peer", p.Name, "error", err)
				return
			}
			if len(peers) > 0 {
				s.logger.Info("bootstrap: a peer is already in a cluster; waiting to be added", "peer", p.Name)
				s.bootstrapped.Store(true)
				return
			}
		}
		servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RPCAddr.String()), Suffrage: raft.Voter})
	}
	if err := s.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		if !errors.Is(err, raft.ErrCantBootstrap) {
			s.logger.Error("bootstrapping raft", "error", err)
			return
		}
	}
	s.logger.Info("cluster bootstrapped", "servers", len(servers))
	s.bootstrapped.Store(true)
}

// Join asks serf to join the servers at addrs ("host:port" of their serf
// ports); it returns how many it reached.
func (s *Server) Join(addrs []string) (int, error) {
	if s.serf == nil {
		return 0, errors.New("a dev server has no gossip pool to join")
	}
	return s.serf.Join(addrs, true)
}

// Members returns this server's view of the gossip pool. A dev server,
// which has none, reports itself alone.
func (s *Server) Members() []serf.Member {
	if s.serf != nil {
		return s.serf.Members()
	}
	addr := s.rpcAdvertise.(*net.TCPAddr)
	return []serf.Member{{
		Name:   fmt.Sprintf("%s.%s", s.config.NodeName, s.config.Region),
		Addr:   addr.IP,
		Port:   uint16(addr.Port),
		Status: serf.StatusAlive,
		Tags: map[string]string{
			serfTagRole: serfRoleNomad, serfTagRegion: s.config.Region, serfTagDC: s.config.Datacenter,
			serfTagBuild: s.config.Version, serfTagID: s.id, serfTagPort: strconv.Itoa(addr.Port),
			serfTagBootstrap: "1", serfTagRaftVsn: "3", serfTagVsn: "1",
		},
	}}
}

// LocalMemberName is the name this server goes by in the gossip pool.
func (s *Server) LocalMemberName() string {
	return fmt.Sprintf("%s.%s", s.config.NodeName, s.config.Region)
}

// ForceLeaveOptions tune ForceLeave.
type ForceLeaveOptions struct {
	// Prune also forgets the member (upstream's -prune; serf erases it on
	// its own goroutine, a moment after the call returns), instead
	// of listing it as left until the reconnect timeout reaps it.
	Prune bool
}

// ForceLeave marks a failed server as left, so the leader removes it from
// raft at once instead of waiting for it to come back.
func (s *Server) ForceLeave(name string, opts ForceLeaveOptions) error {
	if s.serf == nil {
		return errors.New("a dev server has no gossip pool")
	}
	if opts.Prune {
		return s.serf.RemoveFailedNodePrune(name)
	}
	return s.serf.RemoveFailedNode(name)
}

// SerfAddr returns the address this server's gossip pool listens on, or
// "" for a dev server.
func (s *Server) SerfAddr() string {
	if s.serf == nil {
		return ""
	}
	n := s.serf.Memberlist().LocalNode()
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// ID returns this server's raft ID.
func (s *Server) ID() string { return s.id }

// Leave leaves the gossip pool gracefully; the leader then removes this
// server from raft. A leader first hands over leadership so the cluster is
// not left waiting for an election timeout.
func (s *Server) Leave() error {
	if s.serf == nil {
		return nil
	}
	if s.IsLeader() {
		if cfg, _, err := s.RaftConfiguration(); err == nil && len(cfg.Servers) > 1 {
			if err := s.raft.LeadershipTransfer().Error(); err != nil {
				s.logger.Warn("transferring leadership before leaving", "error", err)
			}
		}
	}
	return s.serf.Leave()
}

// ServerRPCAddr returns the RPC address of the live server of this
// region that name names: its member name (`<name>.<region>`) or its
// node name alone. ok is false when no live server is named so.
func (s *Server) ServerRPCAddr(name string) (addr string, ok bool) {
	for _, m := range s.Members() {
		p, isServer := parseServer(m)
		if !isServer || p.Region != s.config.Region || p.Status != serf.StatusAlive {
			continue
		}
		if p.Name == name || p.Name == name+"."+p.Region {
			return p.RPCAddr.String(), true
		}
	}
	return "", false
}
