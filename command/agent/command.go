package agent

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/cli"
	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/helper/logfile"
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

General options:

  -dev
    Start a server and a client in one process with in-memory state, bound
    to 127.0.0.1 (HTTP on 4646, RPC on 4647), with the raw_exec driver
    enabled. Unless -data-dir is given, the data directory is temporary and
    removed on exit; a dev agent also stops its tasks on exit.

  -config=<path>
    An HCL or JSON config file, or a directory whose *.hcl and *.json files
    are loaded in lexical order. May be repeated; later files win.

  -bind=<addr>
    The IP address the agent's listeners bind to (bind_addr).

  -data-dir=<path>
    Where the agent keeps its state (data_dir). Required outside -dev; a
    relative path is taken from the current directory.

  -log-level=<level>
    One of TRACE, DEBUG, INFO, WARN, ERROR.

  -log-json
    Write log lines as JSON objects (log_json).

  -log-include-location
    Add the source file and line to each log line (log_include_location).

  -node=<name>
    The name of this agent's node. Defaults to the host name.

  -dc=<datacenter>
    The datacenter of this agent. Defaults to "dc1".

  -region=<region>
    The region of this agent. Defaults to "global".

Server options:

  -server
    Enable the server.

  -bootstrap-expect=<num>
    How many servers to wait for before the cluster elects its first
    leader (server.bootstrap_expect).

  -retry-join=<address>
    The serf address of another server to join, retried until it answers
    (server.server_join.retry_join). May be repeated; replaces the list
    of the config files.

  -join=<address>
    The serf address of another server to join once at start
    (server.server_join.start_join). May be repeated.

  -retry-max=<num>
    How many join attempts to make before giving up; 0, the default,
    retries forever (server.server_join.retry_max).

  -retry-interval=<duration>
    The time between join attempts; defaults to 30s
    (server.server_join.retry_interval).

  -raft-protocol=<num>
    The raft protocol version; only 3 is supported.

  -encrypt=<key>
    The base64 key that encrypts gossip between servers (server.encrypt);
    make one with 'nomad operator gossip keyring generate'.

  -acl-enabled
    Check ACL tokens on every API and RPC call (acl.enabled); make the
    first management token with 'nomad acl bootstrap'.

Client options:

  -client
    Enable the client.

  -servers=<host:port,...>
    The servers' RPC addresses (client.servers), added to those of the
    config files; the port defaults to 4647.

  -node-class=<class>
    The node's class (client.node_class).

  -client-intro-token=<jwt>
    The client introduction token (nomad node intro create) a new node
    presents at its first registration. NOMAD_CLIENT_INTRO_TOKEN
    overrides it; without either, the client reads
    <data_dir>/client/intro_token.jwt if it exists. There is no config
    file key for it, as upstream.

  -meta=<key=value>
    A client.meta entry. May be repeated.

  -network-interface=<name>
    The interface whose address is the node's network address, given to
    the tasks' ports (client.network_interface).
`)
}

// Run implements cli.Command.
func (c *Command) Run(args []string) int {
	cfg, code := c.readConfig(args)
	if cfg == nil {
		return code
	}

	logOut := newGatedWriter(&cli.UiWriter{Ui: c.Ui})
	var out io.Writer = logOut
	if cfg.LogFile != "" {
		file, err := logfile.Open(logfile.Config{
			Path: cfg.LogFile, RotateBytes: int64(cfg.LogRotateBytes),
			RotateDuration: cfg.LogRotateDuration, MaxFiles: cfg.LogRotateMaxFiles,
		})
		if err != nil {
			c.Ui.Error(fmt.Sprintf("==> Error opening the log file: %v", err))
			return 1
		}
		defer file.Close()
		// The terminal gets its lines after the banner, the file at once
		// (a gated writer never fails, so the file is always reached).
		out = io.MultiWriter(logOut, file)
	}
	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{
		Name:            "agent",
		Level:           hclog.LevelFromString(cfg.LogLevel),
		Output:          out,
		JSONFormat:      cfg.LogJSON,
		IncludeLocation: cfg.LogIncludeLocation,
	})

	c.Ui.Output("==> Starting Nomad agent...")
	if cfg.Server.Enabled {
		if gogc, set := setServerGC(os.Getenv); set {
			logger.Debug("server garbage collector target set", "gogc", gogc)
		}
	}
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
	fl, err := parseAgentFlags(args)
	if err != nil {
		c.Ui.Error(err.Error())
		c.Ui.Error(c.Help())
		return nil, 1
	}

	cfg := DefaultConfig()
	if fl.dev {
		cfg = DevConfig()
	}
	for _, path := range fl.configPaths {
		fileCfg, err := LoadConfigPath(path)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error loading configuration from %s:\n%v", path, err))
			return nil, 1
		}
		cfg = cfg.Merge(fileCfg)
		c.Ui.Output(fmt.Sprintf("==> Loaded configuration from %s", path))
	}
	cfg = cfg.Merge(fl.cfg)
	if err := cfg.Validate(); err != nil {
		c.Ui.Error(fmt.Sprintf("Invalid agent configuration:\n%v", err))
		return nil, 1
	}
	return cfg, 0
}

// agentFlags are `nomad agent`'s flags: cfg is the layer they put over the
// config files.
type agentFlags struct {
	dev         bool
	configPaths []string
	cfg         *Config
}

// unsupportedFlags are upstream's agent flags this version does not
// implement; a trailing "-" names a family. Refusing them by name tells
// the operator the flag exists upstream, where Go's flag package would only
// say it is not defined.
var unsupportedFlags = []string{
	"rejoin", "state-dir", "alloc-dir", "plugin-dir", "network-speed",
	"log-json", "log-include-location", "acl-replication-token", "consul-", "vault-",
}

func parseAgentFlags(args []string) (*agentFlags, error) {
	if err := refuseUnsupportedFlags(args); err != nil {
		return nil, err
	}
	fl := &agentFlags{cfg: &Config{
		Server: &ServerConfig{ServerJoin: &ServerJoin{}},
		Client: &ClientConfig{},
		ACL:    &ACLConfig{},
	}}
	cfg := fl.cfg
	var configPaths, retryJoin, startJoin, meta stringSlice
	var servers string

	flags := flag.NewFlagSet("agent", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	flags.BoolVar(&fl.dev, "dev", false, "")
	flags.Var(&configPaths, "config", "")
	flags.StringVar(&cfg.BindAddr, "bind", "", "")
	flags.StringVar(&cfg.DataDir, "data-dir", "", "")
	flags.StringVar(&cfg.LogLevel, "log-level", "", "")
	flags.BoolVar(&cfg.LogJSON, "log-json", false, "")
	flags.BoolVar(&cfg.LogIncludeLocation, "log-include-location", false, "")
	flags.StringVar(&cfg.NodeName, "node", "", "")
	flags.StringVar(&cfg.Datacenter, "dc", "", "")
	flags.StringVar(&cfg.Region, "region", "", "")

	flags.BoolVar(&cfg.Server.Enabled, "server", false, "")
	flags.IntVar(&cfg.Server.BootstrapExpect, "bootstrap-expect", 0, "")
	flags.IntVar(&cfg.Server.RaftProtocol, "raft-protocol", 0, "")
	flags.Var(&retryJoin, "retry-join", "")
	flags.Var(&startJoin, "join", "")
	flags.IntVar(&cfg.Server.ServerJoin.RetryMax, "retry-max", 0, "")
	flags.DurationVar(&cfg.Server.ServerJoin.RetryInterval, "retry-interval", 0, "")
	flags.StringVar(&cfg.Server.EncryptKey, "encrypt", "", "")
	flags.BoolVar(&cfg.ACL.Enabled, "acl-enabled", false, "")

	flags.BoolVar(&cfg.Client.Enabled, "client", false, "")
	flags.StringVar(&servers, "servers", "", "")
	flags.StringVar(&cfg.Client.NodeClass, "node-class", "", "")
	flags.StringVar(&cfg.Client.IntroToken, "client-intro-token", "", "")
	flags.StringVar(&cfg.Client.NetworkInterface, "network-interface", "", "")
	flags.Var(&meta, "meta", "")

	if err := flags.Parse(args); err != nil {
		return nil, fmt.Errorf("Error parsing flags: %v", err)
	}
	if flags.NArg() > 0 {
		return nil, fmt.Errorf("this command takes no arguments; got %q", flags.Args())
	}
	fl.configPaths = configPaths
	cfg.Server.ServerJoin.RetryJoin = retryJoin
	cfg.Server.ServerJoin.StartJoin = startJoin
	for _, s := range strings.Split(servers, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Client.Servers = append(cfg.Client.Servers, withDefaultPort(s, DefaultClientRPCPort))
		}
	}
	for _, kv := range meta {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("Error parsing flags: -meta %q must be KEY=VALUE", kv)
		}
		if cfg.Client.Meta == nil {
			cfg.Client.Meta = map[string]string{}
		}
		cfg.Client.Meta[k] = v
	}
	if cfg.DataDir != "" {
		abs, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return nil, fmt.Errorf("Error parsing flags: -data-dir: %v", err)
		}
		cfg.DataDir = abs
	}
	return fl, nil
}

// refuseUnsupportedFlags names the first upstream-only flag in args.
func refuseUnsupportedFlags(args []string) error {
	for _, arg := range args {
		if arg == "--" {
			return nil
		}
		if !strings.HasPrefix(arg, "-") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		for _, u := range unsupportedFlags {
			if name == u || (strings.HasSuffix(u, "-") && strings.HasPrefix(name, u)) {
				return fmt.Errorf("Error parsing flags: -%s is not supported by this version", name)
			}
		}
	}
	return nil
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
			cfg := a.Config()
			if (sig == os.Interrupt && cfg.LeaveOnInterrupt) || (sig == syscall.SIGTERM && cfg.LeaveOnTerminate) {
				c.Ui.Output("==> Gracefully leaving the cluster...")
				if err := a.Leave(); err != nil {
					c.Ui.Error(fmt.Sprintf("==> Error leaving the cluster: %v", err))
				}
			}
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
