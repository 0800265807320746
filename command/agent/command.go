package agent

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/cli"
	"github.com/hashicorp/go-hclog"
)

// Command is `nomad agent`: it loads the configuration, starts the agent,
// prints the banner and runs until SIGINT or SIGTERM.
type Command struct {
	Ui cli.Ui

	// ShutdownCh, when set, stops the agent like a signal would; tests use
	// it instead of signalling their own process.
	ShutdownCh <-chan struct{}

	// started, when set, receives the agent once it runs (tests).
	started func(*Agent)
}

// Synopsis implements cli.Command.
func (c *Command) Synopsis() string { return "Runs a Nomad agent" }

// Help implements cli.Command.
func (c *Command) Help() string {
	return strings.TrimSpace(`
Usage: nomad agent [options]

  Start an agent: a server that schedules work, a client that runs it, or
  both. The agent runs in the foreground until it receives SIGINT or
  SIGTERM, then shuts down gracefully.

  Settings come from, in increasing order of precedence: the defaults (or
  the -dev defaults), each -config file or directory in the order given,
  and the flags below.

Options:

  -dev
    Start a server and a client in one process with in-memory state, bound
    to 127.0.0.1 (HTTP on 4646, RPC on 4647), with the raw_exec driver
    enabled. Unless -data-dir is given, the data directory is temporary and
    removed on exit; a dev agent also stops its tasks on exit.

  -config=<path>
    An HCL or JSON config file, or a directory whose *.hcl and *.json files
    are loaded in lexical order. May be repeated; later files win.

  -bind=<addr>
    The IP address the HTTP API and RPC listeners bind to.

  -data-dir=<path>
    Where the agent keeps its state.

  -log-level=<level>
    One of TRACE, DEBUG, INFO, WARN, ERROR.

  -node=<name>
    The name of this agent's node. Defaults to the host name.

  -dc=<datacenter>
    The datacenter of this agent. Defaults to "dc1".

  -region=<region>
    The region of this agent. Defaults to "global".

  -server
    Enable the server.

  -client
    Enable the client.

  -servers=<host:port,...>
    The servers' RPC addresses for a client-only agent (client.servers in
    a config file). The client reaches them over msgpack RPC and moves to
    the next one when a link fails.
`)
}

// Run implements cli.Command.
func (c *Command) Run(args []string) int {
	cfg, code := c.readConfig(args)
	if cfg == nil {
		return code
	}

	logOut := newGatedWriter(&cli.UiWriter{Ui: c.Ui})
	logger := hclog.New(&hclog.LoggerOptions{
		Name:   "agent",
		Level:  hclog.LevelFromString(cfg.LogLevel),
		Output: logOut,
	})

	c.Ui.Output("==> Starting Nomad agent...")
	a, err := NewAgent(cfg, logger)
	if err != nil {
		logOut.Flush()
		c.Ui.Error(fmt.Sprintf("==> Error starting agent: %v", err))
		return 1
	}
	c.banner(a)
	logOut.Flush()
	if c.started != nil {
		c.started(a)
	}
	return c.waitForShutdown(a)
}

// readConfig parses the flags and loads and merges the config files. It
// returns nil and the exit code on error.
func (c *Command) readConfig(args []string) (*Config, int) {
	var dev, server, clientEnabled bool
	var configPaths stringSlice
	flagCfg := &Config{Server: &ServerConfig{}, Client: &ClientConfig{}}

	flags := flag.NewFlagSet("agent", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	flags.BoolVar(&dev, "dev", false, "")
	flags.Var(&configPaths, "config", "")
	flags.StringVar(&flagCfg.BindAddr, "bind", "", "")
	flags.StringVar(&flagCfg.DataDir, "data-dir", "", "")
	flags.StringVar(&flagCfg.LogLevel, "log-level", "", "")
	flags.StringVar(&flagCfg.NodeName, "node", "", "")
	flags.StringVar(&flagCfg.Datacenter, "dc", "", "")
	flags.StringVar(&flagCfg.Region, "region", "", "")
	flags.BoolVar(&server, "server", false, "")
	flags.BoolVar(&clientEnabled, "client", false, "")
	var servers string
	flags.StringVar(&servers, "servers", "", "")
	if err := flags.Parse(args); err != nil {
		c.Ui.Error(fmt.Sprintf("Error parsing flags: %v", err))
		c.Ui.Error(c.Help())
		return nil, 1
	}
	if flags.NArg() > 0 {
		c.Ui.Error(fmt.Sprintf("This command takes no arguments; got %q", flags.Args()))
		c.Ui.Error(c.Help())
		return nil, 1
	}
	flagCfg.Server.Enabled = server
	flagCfg.Client.Enabled = clientEnabled
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			flagCfg.Client.Servers = append(flagCfg.Client.Servers, s)
		}
	}

	cfg := DefaultConfig()
	if dev {
		cfg = DevConfig()
	}
	for _, path := range configPaths {
		fileCfg, err := LoadConfigPath(path)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error loading configuration from %s:\n%v", path, err))
			return nil, 1
		}
		cfg = cfg.Merge(fileCfg)
		c.Ui.Output(fmt.Sprintf("==> Loaded configuration from %s", path))
	}
	cfg = cfg.Merge(flagCfg)
	if err := cfg.Validate(); err != nil {
		c.Ui.Error(fmt.Sprintf("Invalid agent configuration:\n%v", err))
		return nil, 1
	}
	return cfg, 0
}

// banner prints the running agent's essentials, in upstream's layout:
// right-aligned keys under a heading, then the line after which logs
// stream.
func (c *Command) banner(a *Agent) {
	cfg := a.config
	info := map[string]string{
		"Version":   Version,
		"Region":    fmt.Sprintf("%s (DC: %s)", cfg.Region, cfg.Datacenter),
		"Log Level": strings.ToUpper(cfg.LogLevel),
		"Server":    fmt.Sprint(a.server != nil),
		"Client":    fmt.Sprint(a.client != nil),
		"Data Dir":  a.dataDir,
	}
	httpAddr := a.HTTPAddr().String()
	rpcAddr := ""
	if a.server != nil {
		rpcAddr = a.server.RPCAddr().String()
	}
	info["Bind Addrs"] = fmt.Sprintf("HTTP: %s; RPC: %s", httpAddr, rpcAddr)
	if a.client != nil {
		info["Node Id"] = a.client.NodeID()
	}
	if cfg.DevMode {
		info["Dev Mode"] = "true (in-memory state; tasks are stopped on exit)"
	}
	keys := make([]string, 0, len(info))
	width := 0
	for k := range info {
		keys = append(keys, k)
		width = max(width, len(k))
	}
	sort.Strings(keys)

	c.Ui.Output("==> Nomad agent configuration:\n")
	for _, k := range keys {
		c.Ui.Info(fmt.Sprintf("%*s: %s", width+4, k, info[k]))
	}
	c.Ui.Output("")
	c.Ui.Output("==> Nomad agent started! Log data will stream in below:\n")
}

// waitForShutdown blocks until a signal (or ShutdownCh) and shuts the
// agent down. A second signal during a slow shutdown exits at once.
func (c *Command) waitForShutdown(a *Agent) int {
	sigCh := make(chan os.Signal, 4)
	signal.Notify(sigCh, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigCh)

wait:
	for {
		select {
		case sig := <-sigCh:
			if sig == syscall.SIGHUP {
				c.Ui.Output("==> Caught signal: hangup; configuration reload is not supported, ignoring it")
				continue
			}
			c.Ui.Output(fmt.Sprintf("==> Caught signal: %v", sig))
			break wait
		case <-c.ShutdownCh:
			break wait
		}
	}

	c.Ui.Output("==> Gracefully shutting down agent...")
	done := make(chan error, 1)
	go func() { done <- a.Shutdown() }()
	select {
	case err := <-done:
		if err != nil {
			c.Ui.Error(fmt.Sprintf("==> Error during shutdown: %v", err))
			return 1
		}
		c.Ui.Output("==> Agent stopped")
		return 0
	case sig := <-sigCh:
		c.Ui.Error(fmt.Sprintf("==> Caught second signal %v, exiting without finishing shutdown", sig))
		return 1
	}
}

// stringSlice is a repeatable string flag.
type stringSlice []string

func (s *stringSlice) String() string     { return strings.Join(*s, ",") }
func (s *stringSlice) Set(v string) error { *s = append(*s, v); return nil }

// gatedWriter holds log output until Flush, so that startup logs come
// after the banner rather than interleaved with it; after Flush it writes
// through.
type gatedWriter struct {
	mu   sync.Mutex
	w    io.Writer
	buf  [][]byte
	open bool
}

func newGatedWriter(w io.Writer) *gatedWriter { return &gatedWriter{w: w} }

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		return g.w.Write(p)
	}
	g.buf = append(g.buf, bytes.Clone(p))
	return len(p), nil
}

// Flush writes what was held and opens the gate.
func (g *gatedWriter) Flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.buf {
		_, _ = g.w.Write(p)
	}
	g.buf, g.open = nil, true
}
