package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/client/getter"
	"github.com/nomad-edge/nomad/client/state"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/clock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// errShutdown ends a call cancelled because the client is shutting down.
var errShutdown = errors.New("client is shutting down")

// Client is the client agent. Its loops run from NewClient until Shutdown
// or Destroy.
type Client struct {
	cfg    Config
	logger hclog.Logger
	clock  clock.Clock
	// serverClock is the clock allocations report their times on: clock,
	// or the servers' while the two disagree (server_clock.go).
	serverClock *serverClock
	db          state.StateDB
	drivers     map[string]drivers.Driver
	options     Options
	updater     *allocUpdater
	// adoptOrphans is set when the state database was lost: the tasks it
	// named may still run, and are found by their environment.
	adoptOrphans bool
	// takeover is the taking over of an upstream client's node, nil
	// when there is none (takeover.go).
	takeover *takeover
	// tookOver is set on a node taken over from an upstream client, now
	// or by an earlier start: upstream's standby logmons may be left.
	tookOver bool
	// artifacts fetches every task's artifacts, through the cache.
	artifacts *getter.Getter

	nodeMu sync.RWMutex
	node   *structs.Node
	// dynamicMeta is the metadata applied at runtime (ApplyNodeMeta),
	// persisted; node.Meta is the config's with it laid over. metaMu
	// orders the applies.
	dynamicMeta map[string]*string
	metaMu      sync.Mutex
	// hostStats reads /v1/client/stats (HostStats).
	hostStats *hostStatsReader

	hbMu          sync.RWMutex
	heartbeatTTL  time.Duration
	lastHeartbeat time.Time // monotonic: when the servers last heard us
	// settleUntil ends the window after an outage in which every status
	// push is followed by a heartbeat (see linkBack).
	settleUntil time.Time
	// startedAt stands in for lastHeartbeat until the first heartbeat.
	startedAt time.Time
	// alone is how long before startedAt the servers last heard the node,
	// from the heartbeat an earlier client process persisted.
	alone aloneFor

	// contacted is closed once the servers have been heard from since
	// the client started: its first allocation sync (see serversHeard).
	contacted     chan struct{}
	contactedOnce sync.Once
	// hbWriter writes the heartbeats persistHeartbeat hands it.
	hbWriter heartbeatWriter

	readyCh     chan struct{}
	readyOnce   sync.Once
	nodeChanged chan struct{} // the node must be re-registered
	beatNow     chan struct{} // heartbeat without waiting for the interval
	// watchKick restarts the allocation watch at once; with
	// watchFromScratch set it starts from index 0.
	watchKick        chan struct{}
	watchFromScratch atomic.Bool
	// gc runs the garbage collector periodically; its kick runs it now
	// (see collectGarbagePeriodically). Set before the allocation watch.
	gc *periodicRun

	allocMu sync.RWMutex
	allocs  map[string]*allocrunner.AllocRunner
	// finished are allocations the servers list that ended before this
	// client had a runner for them, by AllocModifyIndex, so they are not
	// pulled again until they change.
	finished map[string]uint64

	// ctx ends on Shutdown; every call to the servers carries it, and
	// shutdownCh is its Done.
	ctx          context.Context
	cancel       context.CancelFunc
	shutdownCh   <-chan struct{}
	shutdownOnce sync.Once
	stopErr      error
	wg           sync.WaitGroup // the client's loops
	destroyWG    sync.WaitGroup // runners being destroyed

	// network gives bridge-mode allocations their namespaces; nil when
	// the host cannot, for bridgeUnavailable.
	network           *allocnet.Manager
	bridgeUnavailable error
}

// NewClient opens the state database, fingerprints the node, restores the
// allocations a previous client process left (re-attaching to their tasks)
// and starts registration, heartbeats, the allocation watch and the update
// batcher.
func NewClient(cfg *Config) (*Client, error) {
	conf, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{
		cfg:         conf,
		logger:      conf.Logger.Named("client"),
		clock:       conf.Clock,
		serverClock: newServerClock(conf.Clock),
		startedAt:   conf.Clock.Now(),
		readyCh:     make(chan struct{}),
		nodeChanged: make(chan struct{}, 1),
		beatNow:     make(chan struct{}, 1),
		watchKick:   make(chan struct{}, 1),
		allocs:      make(map[string]*allocrunner.AllocRunner),
		finished:    make(map[string]uint64),
		contacted:   make(chan struct{}),
		hostStats:   &hostStatsReader{src: defaultStatsSources, allocDir: conf.AllocDir},
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.shutdownCh = c.ctx.Done()
	c.updater = newAllocUpdater(c.clock, c.sendAllocUpdates, c.logger.Named("alloc_sync"))
	c.updater.onSent = c.allocsPushed
	c.updater.hold = c.holdPushes

	if c.db = conf.StateDB; c.db == nil {
		bdb, err := state.OpenBolt(conf.StateDir)
		if err != nil {
			return nil, err
		}
		if r := bdb.Recovery(); r != nil {
			c.logger.Error("client state file was damaged: moved it aside and started with an empty one; tasks still running will be re-attached as the servers assign them",
				"path", r.Path, "moved_to", r.MovedTo, "error", r.Err)
			c.adoptOrphans = true
			if r.IdentityErr != nil {
				c.logger.Error("node identity not recovered: registering as a new node", "error", r.IdentityErr)
			}
		}
		c.db = bdb
	}
	fail := func(err error) (*Client, error) {
		c.cancel()
		_ = c.db.Close()
		return nil, err
	}
	if err := c.takeOver(); err != nil {
		return fail(err)
	}
	if err := c.setupDrivers(); err != nil {
		return fail(err)
	}
	if c.artifacts, err = newArtifactGetter(&conf, c); err != nil {
		return fail(err)
	}
	if conf.HostFingerprint != nil {
		// A node whose host is not probed (the simulator's) has no host
		// network to make namespaces on either.
		c.bridgeUnavailable = errSimulatedHost
	} else if err := c.setupBridgeNetwork(); err != nil {
		return fail(err)
	}
	if err := c.setupNode(); err != nil {
		return fail(err)
	}
	c.alone = c.measureTimeAlone()
	if err := c.restoreAllocs(); err != nil {
		return fail(err)
	}
	c.reapBridgeNetworks()

	c.collectGarbagePeriodically()
	c.startLoop(c.registerAndHeartbeat)
	c.startLoop(c.keepSession)
	c.startLoop(c.watchAllocations)
	c.startLoop(func() { c.updater.run(c.shutdownCh) })
	c.fingerprintDriversPeriodically()
	c.stopWhenCutOff()
	c.rebalanceServersPeriodically()
	c.startLoop(c.publishStats)
	c.logger.Info("client started", "node_id", c.NodeID(), "restored_allocs", c.NumAllocs())
	return c, nil
}

func (c *Client) startLoop(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// setupDrivers builds every driver of the catalog with its plugin config.
// A plugin block for a driver nobody registered is an error: a misspelt
// name must not silently leave a driver unconfigured.
//
// Drivers the options' driver.allowlist leaves out, or its driver.denylist
// names, are not built at all: never fingerprinted, never on the node, so
// the scheduler places nothing that needs them here.
func (c *Client) setupDrivers() error {
	names := c.cfg.Drivers.Names()
	for name := range c.cfg.PluginConfig {
		if !slices.Contains(names, name) {
			return fmt.Errorf("plugin %q: %w (known: %v)", name, drivers.ErrUnknownDriver, names)
		}
	}
	opts, err := ParseOptions(c.cfg.Options, names)
	if err != nil {
		return err
	}
	c.options = opts
	c.drivers = make(map[string]drivers.Driver, len(names))
	for _, name := range names {
		if !opts.offers(name) {
			c.logger.Info("driver disabled by the client's options", "driver", name)
			continue
		}
		d, err := c.cfg.Drivers.New(name, drivers.Options{Logger: c.logger, Config: c.cfg.PluginConfig[name], ChrootEnv: c.cfg.ChrootEnv})
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		c.drivers[name] = d
	}
	return nil
}

// Driver implements allocrunner.DriverManager.
func (c *Client) Driver(name string) (drivers.Driver, error) {
	d, ok := c.drivers[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", drivers.ErrUnknownDriver, name)
	}
	return d, nil
}

// setupNode builds the node from config and fingerprints, with the identity
// persisted by an earlier run, or a new one.
func (c *Client) setupNode() error {
	id, err := c.db.GetNodeIdentity()
	if err != nil {
		return fmt.Errorf("reading node identity: %w", err)
	}
	if id.NodeID == "" {
		id = state.NodeIdentity{NodeID: structs.GenerateUUID(), SecretID: structs.GenerateUUID()}
		if err := c.db.PutNodeIdentity(id); err != nil {
			return fmt.Errorf("persisting node identity: %w", err)
		}
	}
	dyn, err := c.db.GetNodeMeta()
	if err != nil {
		// The config's metadata still describes the node; the operator
		// can apply the rest again.
		c.logger.Error("dynamic node metadata not restored", "error", err)
		dyn = map[string]*string{}
	}
	c.dynamicMeta = dyn
	node := &structs.Node{
		ID:                    id.NodeID,
		SecretID:              id.SecretID,
		Datacenter:            c.cfg.Datacenter,
		Name:                  c.cfg.NodeName,
		HTTPAddr:              c.cfg.HTTPAddr,
		Attributes:            map[string]string{},
		NodeResources:         &structs.NodeResources{},
		Meta:                  mergeMeta(c.cfg.Meta, dyn),
		NodeClass:             c.cfg.NodeClass,
		NodePool:              c.cfg.NodePool,
		SchedulingEligibility: structs.NodeSchedulingEligible,
		Status:                structs.NodeStatusInit,
		Drivers:               map[string]*structs.DriverInfo{},
	}
	if node.Meta == nil {
		node.Meta = map[string]string{}
	}
	if c.cfg.HostFingerprint != nil {
		c.cfg.HostFingerprint(node)
	} else {
		fingerprintHost(node, defaultHostSources, c.cfg.AllocDir)
	}
	if err := fingerprintNetwork(node.Attributes, c.cfg.NetworkInterface, c.cfg.HTTPAddr); err != nil {
		return err
	}
	if node.NodeResources == nil {
		node.NodeResources = &structs.NodeResources{}
	}
	c.cfg.Resources.apply(node)
	node.NodeResources.NodeNetworks = fingerprintHostNetworks(c.cfg.HostNetworks, node.Attributes[structs.NodeAttrNetworkIP], c.cfg.NetworkInterface, c.logger)
	node.NodeResources.NodeNetworks = append(node.NodeResources.NodeNetworks, c.namespaceNetworks()...)
	if c.cfg.HostFingerprint == nil {
		fingerprintCNIPlugins(node.Attributes, c.cfg.Bridge)
	}
	node.Attributes["nomad.version"] = c.cfg.Version
	if c.cfg.HTTPAddr != "" {
		node.Attributes["nomad.advertise.address"] = c.cfg.HTTPAddr
	}
	now := c.clock.Now()
	for _, name := range slices.Sorted(maps.Keys(c.drivers)) {
		applyDriverFingerprint(node, name, c.drivers[name].Fingerprint(), now)
	}
	if node.HostVolumes, err = fingerprintHostVolumes(c.cfg.HostVolumes); err != nil {
		return err
	}
	c.node = node
	return nil
}

// restoreAllocs starts a runner for every allocation in the state database;
// the runners re-attach to their tasks before any server is asked anything.
func (c *Client) restoreAllocs() error {
	recs, errs, err := c.db.GetAllocations()
	if err != nil {
		return fmt.Errorf("restoring allocations: %w", err)
	}
	for id, err := range errs {
		c.logger.Error("skipping allocation that cannot be restored", "alloc_id", id, "error", err)
	}
	if len(recs) > 0 {
		c.logger.Info("restoring allocations; last heartbeat before this start",
			"ago", c.alone.d, "known", c.alone.known, "measured_on", c.alone.on)
	}
	node := c.nodeInfo()
	for _, rec := range recs {
		ar, err := c.newAllocRunner(rec.Alloc, node, c.offlineRestartUntil(rec))
		if err != nil {
			c.logger.Error("skipping allocation that cannot be restored", "alloc_id", rec.Alloc.ID, "error", err)
			continue
		}
		ar.Restore(rec.Tasks)
		c.allocs[ar.ID()] = ar
		go c.runAlloc(ar)
	}
	return nil
}

// nodeInfo is what task environments say about this node.
func (c *Client) nodeInfo() allocrunner.NodeInfo {
	c.nodeMu.RLock()
	defer c.nodeMu.RUnlock()
	return allocrunner.NodeInfo{
		ID:         c.node.ID,
		Name:       c.node.Name,
		Datacenter: c.node.Datacenter,
		Region:     c.cfg.Region,
		Class:      c.node.NodeClass,
		Pool:       c.node.NodePool,
		// Copies: fingerprinting updates the node's maps in place under
		// nodeMu, and a task runner reads these long after this returns.
		Attributes:  maps.Clone(c.node.Attributes),
		Meta:        maps.Clone(c.node.Meta),
		HostVolumes: structs.CopyHostVolumes(c.node.HostVolumes),
	}
}

// newAllocRunner builds the runner of alloc; offlineUntil is
// Config.OfflineRestartUntil, zero for allocations from the servers.
func (c *Client) newAllocRunner(alloc *structs.Allocation, node allocrunner.NodeInfo, offlineUntil time.Time) (*allocrunner.AllocRunner, error) {
	return allocrunner.NewAllocRunner(allocrunner.Config{
		Logger:         c.logger,
		Clock:          c.serverClock,
		Alloc:          alloc,
		AllocDirRoot:   c.cfg.AllocDir,
		Node:           node,
		StateDB:        c.db,
		Drivers:        c,
		StateUpdater:   c.updater,
		MaxKillTimeout: c.cfg.MaxKillTimeout,
		Users:          c.options.Users,
		AdoptOrphans:   c.adoptOrphans || c.takeover.active(),
		AdoptReason:    c.takeover.adoptReason(),
		TaskRunning:    c.takeover.taskRunningHook(),
		NotAdopted:     c.takeover.notAdoptedHook(),
		Artifacts:      c.artifacts,

		ServersContacted:    c.contacted,
		OfflineRestartUntil: offlineUntil,
		Services:            serviceRegistrar{c},
		Identities:          identitySigner{c},
		Templates:           templateSources{c},
		Network:             c.allocNetwork(),
		NetworkUnavailable:  c.bridgeUnavailable,
	})
}

// rpc calls the servers with the client's context on the request, so
// that Shutdown ends a blocking query or a call into a dead link at once
// instead of waiting for its timeout.
func (c *Client) rpc(method string, args, reply any) error {
	return c.call(c.ctx, method, args, reply)
}

// errAbandoned ends a call given up through rpcUnless.
var errAbandoned = errors.New("call abandoned")

// rpcUnless is rpc that also gives up when kick is signalled, as the
// kick asks: a reply that comes with the kick (a blocking query the kick
// cut short answers with what it has) is dropped too.
func (c *Client) rpcUnless(kick <-chan struct{}, method string, args, reply any) error {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	kicked := make(chan bool, 1)
	go func() {
		select {
		case <-kick:
			cancel()
			kicked <- true
		case <-ctx.Done():
			kicked <- false
		}
	}()
	err := c.call(ctx, method, args, reply)
	cancel()
	if <-kicked && !errors.Is(err, errShutdown) {
		return errAbandoned
	}
	return err
}

// call makes one call with ctx on its request; the RPCHandler ends the
// call when ctx does. Once the client is shutting down, whatever the call
// returned, errShutdown is its answer.
func (c *Client) call(ctx context.Context, method string, args, reply any) error {
	structs.WithRequestContext(args, ctx)
	err := c.cfg.RPCHandler.RPC(method, args, reply)
	if c.ctx.Err() != nil {
		return errShutdown
	}
	return err
}

// sleep waits d on the client's clock; false means the client is shutting
// down.
func (c *Client) sleep(d time.Duration) bool { return clock.Sleep(c.clock, d, c.shutdownCh) }

// HostStats returns the host's memory, CPU, disk and uptime now, as
// /v1/client/stats answers. CPU use is since the previous call (since
// boot for the first).
func (c *Client) HostStats() *structs.HostStats {
	c.nodeMu.RLock()
	mhz := c.node.NodeResources.Cpu.CpuShares
	c.nodeMu.RUnlock()
	return c.hostStats.read(c.clock.Now(), mhz)
}

// NodeID returns the node's ID, stable across restarts.
func (c *Client) NodeID() string {
	c.nodeMu.RLock()
	defer c.nodeMu.RUnlock()
	return c.node.ID
}

// secretID is the node's secret, which proves to the servers that a node
// RPC comes from this node. It never changes, so it is read without the
// copy Node makes.
func (c *Client) secretID() string {
	c.nodeMu.RLock()
	defer c.nodeMu.RUnlock()
	return c.node.SecretID
}

// Node returns a copy of the node as the client advertises it.
func (c *Client) Node() *structs.Node {
	c.nodeMu.RLock()
	defer c.nodeMu.RUnlock()
	return c.node.Copy()
}

// Ready is closed once the node is registered and its first heartbeat
// succeeded.
func (c *Client) Ready() <-chan struct{} { return c.readyCh }

// LastHeartbeat returns when the servers last acknowledged the node
// (registration or heartbeat), with a monotonic reading; zero before the
// first.
func (c *Client) LastHeartbeat() time.Time {
	c.hbMu.RLock()
	defer c.hbMu.RUnlock()
	return c.lastHeartbeat
}

// HeartbeatTTL returns the TTL the servers last gave, zero before the first.
func (c *Client) HeartbeatTTL() time.Duration {
	c.hbMu.RLock()
	defer c.hbMu.RUnlock()
	return c.heartbeatTTL
}

// NumAllocs returns the number of allocations the client runs or holds.
func (c *Client) NumAllocs() int {
	c.allocMu.RLock()
	defer c.allocMu.RUnlock()
	return len(c.allocs)
}

// Allocs returns a copy of every allocation the client holds, with its
// client-side status and task states.
func (c *Client) Allocs() []*structs.Allocation {
	c.allocMu.RLock()
	runners := slices.Collect(maps.Values(c.allocs))
	c.allocMu.RUnlock()
	out := make([]*structs.Allocation, 0, len(runners))
	for _, ar := range runners {
		out = append(out, ar.Alloc())
	}
	return out
}

// AllocStatuses returns the client status of every allocation the client
// holds, by ID: what Allocs says, without copying the allocations, for
// callers that poll thousands of clients (the simulator).
func (c *Client) AllocStatuses() map[string]string {
	c.allocMu.RLock()
	defer c.allocMu.RUnlock()
	out := make(map[string]string, len(c.allocs))
	for id, ar := range c.allocs {
		out[id] = ar.ClientStatus()
	}
	return out
}

// Shutdown stops the client and leaves every task running: a client that
// restarts with the same state dir re-attaches to them. Only the servers
// decide that a workload stops.
func (c *Client) Shutdown() error { return c.stop(false) }

// Destroy stops the client and kills every task, for tests.
func (c *Client) Destroy() error { return c.stop(true) }

func (c *Client) stop(destroy bool) error {
	c.shutdownOnce.Do(func() {
		c.logger.Info("client shutting down", "destroy", destroy)
		c.cancel()
		c.wg.Wait()
		c.flushHeartbeat()
		c.destroyWG.Wait()

		c.allocMu.Lock()
		runners := slices.Collect(maps.Values(c.allocs))
		c.allocMu.Unlock()
		var wg sync.WaitGroup
		for _, ar := range runners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if destroy {
					ar.Destroy()
					c.reapStandbys(ar.ID())
				} else {
					ar.Shutdown()
				}
			}()
		}
		wg.Wait()
		c.stopErr = c.db.Close()
	})
	return c.stopErr
}
