package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/client/state"
	nomaddrivers "github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/pool"
	"github.com/nomad-edge/nomad/nomad/structs"
	"github.com/nomad-edge/nomad/nomad/upstreamrpc"
)

// Config is the input of Start.
type Config struct {
	// Count is the number of simulated nodes.
	Count int
	// Datacenters are assigned to the nodes in turn; default dc1.
	Datacenters []string
	// NodePool of every node; default "default".
	NodePool string
	// CPU (MHz), MemoryMB and DiskMB are each node's resources.
	CPU      int64
	MemoryMB int64
	DiskMB   int64
	// Servers are the servers' RPC addresses (host:port).
	Servers []string
	// Dialer opens connections; nil is the real network.
	Dialer pool.Dialer
	// NodesPerConn is how many nodes share one connection pool (one
	// session per server); default 256. Servers limit connections per
	// client IP (limits.rpc_max_conns_per_client, 100 by default).
	NodesPerConn int
	// Name prefixes node names: <Name>-<i>; default "sim".
	Name string
	// DataDir holds the allocations' directories; required.
	DataDir string
	// Region of the servers; default global.
	Region string
	// Version is advertised as nomad.version.
	Version string
	// Logger for every node; nil discards.
	Logger hclog.Logger
	// StartRate paces the start: nodes per second; zero starts them all
	// at once. Ten thousand registrations in the same instant are a storm
	// of their own, which a fleet powering up over minutes never makes.
	StartRate float64
	// NoSessions leaves the nodes without liveness sessions
	// (client.SessionOpener), so that only their heartbeat TTL tells the
	// servers they went silent: the comparison a benchmark makes.
	NoSessions bool
	// Upstream drives upstream Nomad 1.6.5 servers instead of ours: the
	// nodes speak upstream's client protocol (upstreamrpc.Client), with
	// no liveness sessions (upstream has none) and a version of
	// upstream's numbering, so fleet figures can be measured side by
	// side on one machine.
	Upstream bool
}

const (
	defaultNodesPerConn = 256
	defaultCPU          = 2000
	defaultMemoryMB     = 2048
	defaultDiskMB       = 20 * 1024
)

func (c Config) withDefaults() (Config, error) {
	if c.Count <= 0 {
		return c, fmt.Errorf("sim: count must be positive, got %d", c.Count)
	}
	if c.StartRate < 0 {
		return c, fmt.Errorf("sim: start rate must not be negative, got %v", c.StartRate)
	}
	if len(c.Servers) == 0 {
		return c, errNoServers
	}
	if c.DataDir == "" {
		return c, errors.New("sim: a data dir is required")
	}
	if len(c.Datacenters) == 0 {
		c.Datacenters = []string{client.DefaultDatacenter}
	}
	if c.NodePool == "" {
		c.NodePool = structs.DefaultNodePool
	}
	if c.CPU <= 0 {
		c.CPU = defaultCPU
	}
	if c.MemoryMB <= 0 {
		c.MemoryMB = defaultMemoryMB
	}
	if c.DiskMB <= 0 {
		c.DiskMB = defaultDiskMB
	}
	if c.NodesPerConn <= 0 {
		c.NodesPerConn = defaultNodesPerConn
	}
	if c.Name == "" {
		c.Name = "sim"
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Upstream {
		c.NoSessions = true
		c.Version = upstreamVersion
	}
	return c, nil
}

// upstreamInterface is the network interface the nodes of an upstream
// fleet fingerprint, "" (none) for ours.
func upstreamInterface(upstream bool) string {
	if upstream {
		return "lo"
	}
	return ""
}

// upstreamVersion is what simulated nodes of an upstream fleet advertise:
// the servers' own release, which their version gates judge.
const upstreamVersion = "1.6.5"

// Fleet is the running simulated nodes.
type Fleet struct {
	cfg   Config
	nodes []*simNode
	pools []*pool.ConnPool
	// upstream are the shared upstreamrpc clients (Config.Upstream), one
	// per NodesPerConn nodes, as pools are otherwise.
	upstream []*upstreamrpc.Client
	tasks    *taskCounter
	lat      *latencies

	mu     sync.Mutex
	timers []*time.Timer // scheduled returns
	done   chan struct{} // closed by Shutdown
	once   sync.Once
}

type simNode struct {
	client *client.Client
	link   *link
	dc     string
}

// Start starts the nodes; they register and heartbeat in the background
// (Ready tells when all have).
func Start(cfg Config) (*Fleet, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, tasks: newTaskCounter(), lat: &latencies{}, done: make(chan struct{})}
	drivers := catalog(f.tasks)
	begin := time.Now()
	for i := range cfg.Count {
		if cfg.StartRate > 0 {
			at := begin.Add(time.Duration(float64(i) / cfg.StartRate * float64(time.Second)))
			time.Sleep(time.Until(at))
		}
		if i%cfg.NodesPerConn == 0 && cfg.Upstream {
			uc, err := upstreamrpc.NewClient(rotate(cfg.Servers, len(f.upstream)), dialFunc(cfg.Dialer))
			if err != nil {
				f.Shutdown()
				return nil, err
			}
			f.upstream = append(f.upstream, uc)
		} else if i%cfg.NodesPerConn == 0 {
			f.pools = append(f.pools, client.NewClientPool(pool.Config{Dialer: cfg.Dialer, KeepSessionOnTimeout: true}))
		}
		n, err := f.startNode(i, drivers)
		if err != nil {
			f.Shutdown()
			return nil, err
		}
		f.nodes = append(f.nodes, n)
	}
	return f, nil
}

func (f *Fleet) startNode(i int, drivers *nomaddrivers.Catalog) (*simNode, error) {
	cfg := f.cfg
	var rpc serverCaller
	if cfg.Upstream {
		rpc = upstreamCaller{f.upstream[len(f.upstream)-1]}
	} else {
		// Each node tries the servers from a different one, as a fleet
		// spread by its configuration or by DNS does: a client keeps the
		// first server of its list until it fails or rebalances (5 to 7.5
		// minutes), so the same list everywhere would put every node's
		// calls and blocking queries on one server.
		r, err := client.NewServerRPCOnPool(rotate(cfg.Servers, i), f.pools[len(f.pools)-1])
		if err != nil {
			return nil, err
		}
		rpc = r
	}
	name := fmt.Sprintf("%s-%d", cfg.Name, i)
	dc := cfg.Datacenters[i%len(cfg.Datacenters)]
	l := newLink(rpc, f.lat)
	var handler client.RPCHandler = l
	if cfg.NoSessions {
		handler = callsOnly{l}
	}
	c, err := client.NewClient(&client.Config{
		Logger:          cfg.Logger.Named(name),
		RPCHandler:      handler,
		StateDB:         state.NewMemDB(),
		AllocDir:        filepath.Join(cfg.DataDir, name),
		NodeName:        name,
		Datacenter:      dc,
		NodePool:        cfg.NodePool,
		Region:          cfg.Region,
		Version:         cfg.Version,
		Drivers:         drivers,
		HostFingerprint: f.fingerprint(name),
		// Upstream's scheduler places a group in host network mode only on
		// a node with a host network: loopback's, as a real client
		// fingerprints its interface's.
		NetworkInterface: upstreamInterface(cfg.Upstream),
	})
	if err != nil {
		return nil, fmt.Errorf("sim: node %s: %w", name, err)
	}
	return &simNode{client: c, link: l, dc: dc}, nil
}

// fingerprint stands in for the host probe: the node has the configured
// size and says it is simulated (attr sim = true, for constraints).
func (f *Fleet) fingerprint(name string) func(*structs.Node) {
	cfg := f.cfg
	return func(n *structs.Node) {
		n.NodeResources.Cpu = structs.NodeCpuResources{CpuShares: cfg.CPU, TotalCpuCores: 2}
		n.NodeResources.Memory.MemoryMB = cfg.MemoryMB
		n.NodeResources.Disk.DiskMB = cfg.DiskMB
		n.ReservedResources = &structs.NodeReservedResources{}
		a := n.Attributes
		a["kernel.name"] = "linux"
		a["cpu.arch"] = "amd64"
		a["cpu.numcores"] = "2"
		a["cpu.totalcompute"] = strconv.FormatInt(cfg.CPU, 10)
		a["memory.totalbytes"] = strconv.FormatInt(cfg.MemoryMB<<20, 10)
		a["unique.hostname"] = name
		a["sim"] = "true"
	}
}

// Ready is closed once every node has registered and heartbeated once.
func (f *Fleet) Ready() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		for _, n := range f.nodes {
			<-n.client.Ready()
		}
		close(ch)
	}()
	return ch
}

// Selection picks nodes to silence.
type Selection struct {
	// Datacenter limits the pick to one datacenter; empty is all.
	Datacenter string
	// Fraction of the (matching) nodes, 0 < Fraction <= 1; 0 means all.
	Fraction float64
	// Seed makes the random pick reproducible.
	Seed uint64
}

// Silence cuts the links of the selected nodes that are not silent yet and
// returns how many it cut.
func (f *Fleet) Silence(sel Selection) (int, error) {
	pick, err := f.pick(sel)
	if err != nil {
		return 0, err
	}
	cut := 0
	for _, n := range pick {
		if n.link.silence() {
			cut++
		}
	}
	return cut, nil
}

// pick returns the nodes sel selects.
func (f *Fleet) pick(sel Selection) ([]*simNode, error) {
	if sel.Fraction < 0 || sel.Fraction > 1 {
		return nil, fmt.Errorf("sim: fraction must be within (0, 1], got %v", sel.Fraction)
	}
	var pick []*simNode
	for _, n := range f.nodes {
		if sel.Datacenter == "" || n.dc == sel.Datacenter {
			pick = append(pick, n)
		}
	}
	if len(pick) == 0 && sel.Datacenter != "" {
		return nil, fmt.Errorf("sim: no node in datacenter %q", sel.Datacenter)
	}
	if sel.Fraction > 0 && sel.Fraction < 1 {
		r := rand.New(rand.NewPCG(sel.Seed, 0x5eed))
		r.Shuffle(len(pick), func(i, j int) { pick[i], pick[j] = pick[j], pick[i] })
		pick = pick[:int(sel.Fraction*float64(len(pick))+0.5)]
	}
	return pick, nil
}

// Flapping is a set of nodes dropping off and coming back repeatedly.
type Flapping struct {
	Selection
	// Period is one flap: silent for the first half, back for the second.
	Period time.Duration
	// For is how long the nodes flap.
	For time.Duration
}

// Flap starts the selected nodes flapping in the background and returns
// how many flap.
func (f *Fleet) Flap(fl Flapping) (int, error) {
	if fl.Period <= 0 || fl.For <= 0 {
		return 0, fmt.Errorf("sim: flapping needs a positive period and duration, got %v and %v", fl.Period, fl.For)
	}
	pick, err := f.pick(fl.Selection)
	if err != nil {
		return 0, err
	}
	go func() {
		for end := time.Now().Add(fl.For); time.Now().Before(end); {
			for _, n := range pick {
				n.link.silence()
			}
			if !f.sleep(fl.Period / 2) {
				return
			}
			for _, n := range pick {
				n.link.restore()
			}
			if !f.sleep(fl.Period - fl.Period/2) {
				return
			}
		}
	}()
	return len(pick), nil
}

// sleep waits d; false if the fleet shut down meanwhile.
func (f *Fleet) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-f.done:
		return false
	}
}

// Return heals every silenced node: all at once when spread is zero, else
// at uniformly random moments within spread. It returns how many.
func (f *Fleet) Return(spread time.Duration) int {
	var back []*simNode
	for _, n := range f.nodes {
		if n.link.isSilenced() {
			back = append(back, n)
		}
	}
	if spread <= 0 {
		for _, n := range back {
			n.link.restore()
		}
		return len(back)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range back {
		f.timers = append(f.timers, time.AfterFunc(rand.N(spread), func() { n.link.restore() }))
	}
	return len(back)
}

// Shutdown stops every node, killing its tasks, and closes the pools.
func (f *Fleet) Shutdown() {
	f.once.Do(func() { close(f.done) })
	f.mu.Lock()
	for _, t := range f.timers {
		t.Stop()
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range f.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = n.client.Destroy()
		}()
	}
	wg.Wait()
	for _, p := range f.pools {
		p.Shutdown()
	}
	for _, u := range f.upstream {
		u.Close()
	}
}

// Stats is what the fleet looks like from the nodes' side.
type Stats struct {
	Nodes    int
	Ready    int // registered and heartbeated at least once
	Silenced int
	// Allocs the nodes hold, and how many of those run.
	Allocs  int
	Running int
	// Tasks started (distinct task IDs), starts beyond a task's first
	// (restarts) and stop requests the driver received.
	Tasks    int
	Restarts int
	Stops    int
	// Heartbeat is the round trip of successful Node.UpdateStatus calls.
	Heartbeat Latency
}

// Stats counts what the nodes see now.
func (f *Fleet) Stats() Stats {
	s := Stats{Nodes: len(f.nodes)}
	for _, n := range f.nodes {
		select {
		case <-n.client.Ready():
			s.Ready++
		default:
		}
		if n.link.isSilenced() {
			s.Silenced++
		}
		for _, status := range n.client.AllocStatuses() {
			s.Allocs++
			if status == structs.AllocClientStatusRunning {
				s.Running++
			}
		}
	}
	s.Tasks, s.Restarts, s.Stops = f.tasks.counts()
	s.Heartbeat = f.lat.summary()
	return s
}

// ResetLatency forgets the heartbeat samples taken so far.
func (f *Fleet) ResetLatency() { f.lat.reset() }

// SilencedIDs returns the IDs of the nodes silenced now.
func (f *Fleet) SilencedIDs() []string {
	var ids []string
	for _, n := range f.nodes {
		if n.link.isSilenced() {
			ids = append(ids, n.client.NodeID())
		}
	}
	return ids
}

// NodeIDs returns the nodes' IDs in order.
func (f *Fleet) NodeIDs() []string {
	ids := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		ids[i] = n.client.NodeID()
	}
	return ids
}

// Datacenters lists the datacenters the nodes are in.
func (f *Fleet) Datacenters() []string { return slices.Clone(f.cfg.Datacenters) }

// MkdirData makes a fresh data dir under the system temp dir, for callers
// that have none.
func MkdirData() (string, error) { return os.MkdirTemp("", "nomad-sim-") }
