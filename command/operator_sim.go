package command

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/internal/sim"
)

// OperatorSimCommand is `nomad operator sim`: many simulated client nodes
// in this process against real servers.
type OperatorSimCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorSimCommand) Synopsis() string {
	return "Run simulated client nodes against a cluster"
}

// Help implements cli.Command.
func (c *OperatorSimCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator sim [options]

  Runs many simulated client nodes in this process against real servers,
  to measure and test a cluster at fleet scale. Each node is a real client
  (registration, heartbeats, allocation watch and updates, the reconnect
  path) with its own node ID and secret, whose tasks are mock_driver
  timers. Jobs placed on the simulated nodes must use driver "mock_driver".

  Nodes can be silenced (their link fails, as a dead LTE cell does) and
  brought back, by a scenario given as flags or through the control
  endpoint.

      $ nomad operator sim -servers 127.0.0.1:4647 -count 1000

Options:

  -servers=<addr,...>     Servers' RPC addresses. Default 127.0.0.1:4647.
  -count=<n>              Number of simulated nodes. Default 100.
  -datacenter=<dc,...>    Datacenters, assigned to the nodes in turn. Default dc1.
  -node-pool=<name>       Node pool of every node. Default default.
  -cpu=<MHz>              CPU of each node. Default 2000.
  -memory=<MB>            Memory of each node. Default 2048.
  -disk=<MB>              Disk of each node. Default 20480.
  -name=<prefix>          Node names are <prefix>-<i>. Default sim.
  -data-dir=<path>        Where allocation directories go. Default: a new
                          temporary directory, removed on exit.
  -nodes-per-conn=<n>     Nodes sharing one connection to each server. Default 256.
  -start-rate=<n>         Nodes started per second; 0 starts all at once. Default 200.
  -control-addr=<addr>    Serve the control endpoint here (loopback only),
                          e.g. 127.0.0.1:4700. Default: none.
  -silence-fraction=<f>   Scenario: silence this fraction of the nodes
                          (0 < f <= 1; with -silence-datacenter, of that one).
  -silence-datacenter=<dc> Scenario: silence the nodes of this datacenter.
  -silence-after=<d>      Scenario: silence once all nodes are ready plus d.
  -silence-for=<d>        Scenario: how long the nodes stay silent.
  -return=<all|spread:d>  Scenario: return all in the same instant, or each
                          at a random moment within d. Default all.
  -stats-interval=<d>     Print a status line this often. Default 10s.
  -duration=<d>           Exit after this long, printing the final status as
                          JSON. Default: run until interrupted.
  -log-level=<level>      Log level of the nodes' clients. Default warn.
  -sessions=<bool>        Whether the nodes hold liveness sessions, as real
                          clients do; false leaves the heartbeat TTL alone to
                          tell a silent node, as before they existed. Default true.
  -upstream               Drive upstream Nomad 1.6.5 servers instead of ours:
                          the nodes speak upstream's client protocol, hold no
                          liveness sessions (upstream has none) and advertise
                          version 1.6.5, so a fleet figure can be measured
                          against upstream's servers on the same machine.

Control endpoint (when -control-addr is set):

  GET  /v1/sim/status
  GET  /v1/sim/silenced
  POST /v1/sim/silence?fraction=0.2&datacenter=dc2&for=60s&return=spread:5s
  POST /v1/sim/return?spread=5s
  POST /v1/sim/latency/reset
`)
}

type simFlags struct {
	servers, datacenters, nodePool, name, dataDir string
	controlAddr, logLevel, ret, silenceDC         string
	count, nodesPerConn                           int
	cpu, memory, disk                             int64
	fraction, startRate                           float64
	after, silenceFor, statsEvery, duration       time.Duration
	sessions, upstream                            bool
}

// Run implements cli.Command.
func (c *OperatorSimCommand) Run(args []string) int {
	var f simFlags
	flags := c.FlagSet("operator sim")
	flags.StringVar(&f.servers, "servers", "127.0.0.1:4647", "")
	flags.IntVar(&f.count, "count", 100, "")
	flags.StringVar(&f.datacenters, "datacenter", "dc1", "")
	flags.StringVar(&f.nodePool, "node-pool", "", "")
	flags.Int64Var(&f.cpu, "cpu", 2000, "")
	flags.Int64Var(&f.memory, "memory", 2048, "")
	flags.Int64Var(&f.disk, "disk", 20480, "")
	flags.StringVar(&f.name, "name", "sim", "")
	flags.StringVar(&f.dataDir, "data-dir", "", "")
	flags.IntVar(&f.nodesPerConn, "nodes-per-conn", 256, "")
	flags.Float64Var(&f.startRate, "start-rate", 200, "")
	flags.StringVar(&f.controlAddr, "control-addr", "", "")
	flags.Float64Var(&f.fraction, "silence-fraction", 0, "")
	flags.StringVar(&f.silenceDC, "silence-datacenter", "", "")
	flags.DurationVar(&f.after, "silence-after", 0, "")
	flags.DurationVar(&f.silenceFor, "silence-for", 0, "")
	flags.StringVar(&f.ret, "return", "all", "")
	flags.DurationVar(&f.statsEvery, "stats-interval", 10*time.Second, "")
	flags.DurationVar(&f.duration, "duration", 0, "")
	flags.StringVar(&f.logLevel, "log-level", "warn", "")
	flags.BoolVar(&f.sessions, "sessions", true, "")
	flags.BoolVar(&f.upstream, "upstream", false, "")
	if !c.parseFlags(flags, args, c) {
		return 1
	}
	if len(flags.Args()) > 0 {
		return c.argsError("This command takes no arguments", "operator sim")
	}
	spread, err := sim.ParseReturn(f.ret)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error: -%v", err))
		return 1
	}
	scenario := f.fraction > 0 || f.silenceDC != ""
	if f.fraction < 0 || f.fraction > 1 {
		c.Ui.Error(fmt.Sprintf("Error: -silence-fraction must be within (0, 1], got %v", f.fraction))
		return 1
	}
	if scenario && f.silenceFor <= 0 {
		c.Ui.Error("Error: -silence-for is required with -silence-fraction or -silence-datacenter")
		return 1
	}
	if err := c.runSim(f, scenario, spread); err != nil {
		c.Ui.Error(fmt.Sprintf("Error: %v", err))
		return 1
	}
	return 0
}

func (c *OperatorSimCommand) runSim(f simFlags, scenario bool, spread time.Duration) error {
	if f.dataDir == "" {
		dir, err := sim.MkdirData()
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		f.dataDir = dir
	}
	// Both readings follow a collection, so that what is compared is the
	// live heap, not how far the collector let garbage pile up.
	runtime.GC()
	base := sim.ReadMemory()
	start := time.Now()
	fleet, err := sim.Start(sim.Config{
		Count: f.count, Datacenters: splitList(f.datacenters), NodePool: f.nodePool,
		CPU: f.cpu, MemoryMB: f.memory, DiskMB: f.disk, Servers: splitList(f.servers),
		NodesPerConn: f.nodesPerConn, StartRate: f.startRate, Name: f.name, DataDir: f.dataDir, Version: agent.Version,
		NoSessions: !f.sessions, Upstream: f.upstream,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "sim", Level: hclog.LevelFromString(f.logLevel)}),
	})
	if err != nil {
		return err
	}
	defer fleet.Shutdown()
	if f.controlAddr != "" {
		stop, err := serveControl(f.controlAddr, fleet)
		if err != nil {
			return err
		}
		defer stop()
		c.Ui.Output(fmt.Sprintf("==> Control endpoint on http://%s/v1/sim/status", f.controlAddr))
	}
	sigCh := make(chan os.Signal, 1)
	signal.Notify(sigCh, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigCh)

	select {
	case <-fleet.Ready():
	case <-sigCh:
		return nil
	}
	runtime.GC()
	mem := sim.ReadMemory()
	var perNode uint64
	if used, before := mem.HeapInuse+mem.StackInuse, base.HeapInuse+base.StackInuse; used > before {
		perNode = (used - before) / uint64(f.count)
	}
	c.Ui.Output(fmt.Sprintf("==> %d nodes ready after %v; %d bytes of live heap and stack per node, %d goroutines",
		f.count, time.Since(start).Round(time.Millisecond), perNode, mem.Goroutines))

	var silenceAt <-chan time.Time
	if scenario {
		silenceAt = time.After(f.after)
	}
	var end <-chan time.Time
	if f.duration > 0 {
		end = time.After(f.duration)
	}
	tick := time.NewTicker(f.statsEvery)
	defer tick.Stop()
	for {
		select {
		case <-silenceAt:
			n, err := fleet.SilenceFor(sim.Outage{
				Selection: sim.Selection{Fraction: f.fraction, Datacenter: f.silenceDC, Seed: uint64(time.Now().UnixNano())},
				For:       f.silenceFor, Spread: spread,
			})
			if err != nil {
				return err
			}
			c.Ui.Output(fmt.Sprintf("==> Silenced %d nodes for %v", n, f.silenceFor))
		case <-tick.C:
			c.Ui.Output(statusLine(fleet.Stats()))
		case <-end:
			b, _ := json.MarshalIndent(sim.Status{Stats: fleet.Stats(), Memory: sim.ReadMemory()}, "", "  ")
			c.Ui.Output(string(b))
			return nil
		case <-sigCh:
			return nil
		}
	}
}

func statusLine(s sim.Stats) string {
	return fmt.Sprintf("    nodes %d (ready %d, silenced %d); allocs %d (running %d); restarts %d, stops %d; heartbeat p50 %v p99 %v (%d)",
		s.Nodes, s.Ready, s.Silenced, s.Allocs, s.Running, s.Restarts, s.Stops,
		s.Heartbeat.P50.Round(time.Microsecond), s.Heartbeat.P99.Round(time.Microsecond), s.Heartbeat.Count)
}

// serveControl serves the fleet's control endpoint on a loopback address:
// it can silence the whole fleet, so it is never exposed beyond the host.
func serveControl(addr string, fleet *sim.Fleet) (func(), error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-control-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("-control-addr %q: must be a loopback address", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-control-addr: %w", err)
	}
	srv := &http.Server{Handler: fleet.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "control endpoint:", err)
		}
	}()
	return func() { _ = srv.Close() }, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
