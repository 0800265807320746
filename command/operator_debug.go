package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/command/agent"
)

// OperatorDebugCommand is `nomad operator debug`: a bundle of what an
// operator is asked for when a cluster misbehaves, captured over a window
// of time.
type OperatorDebugCommand struct {
	Meta

	// ctx, when set, stands for Ctrl-C (tests); otherwise the interrupt
	// signal ends the capture early.
	ctx context.Context
}

// Synopsis implements cli.Command.
func (c *OperatorDebugCommand) Synopsis() string {
	return "Build a debug archive"
}

// Help implements cli.Command.
func (c *OperatorDebugCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator debug [options]

  Capture, for -duration, the cluster's state every -interval, the
  agent's log and runtime profiles, and write them to a directory named
  nomad-debug-<UTC time>, which is then archived to a .tar.gz in the
  current directory unless -output is given. Ctrl-C ends the capture
  early; what was captured is still written.

  Every server and client captured is asked through the agent at
  -address, which passes the request on by node_id or server_id.

  What could not be captured (an endpoint an agent lacks, a profile an
  agent refuses) is listed with the reason in the
  bundle's index.json and index.html instead of failing the bundle.

  If ACLs are enabled, this command requires a token with agent:write
  (profiles) and read access to the cluster's objects.

` + generalOptions() + `

Debug Options:

  -duration=<duration>
    How long to capture for. Default: 2m.

  -interval=<duration>
    How often to capture the cluster's state within -duration (one
    interval/NNNN directory each time). Default: 30s.

  -pprof-duration=<duration>
    How long each CPU profile and the trace run. Default: 1s, or
    -duration when that is shorter.

  -pprof-interval=<duration>
    The pause between CPU profiles. Default: 250ms.

  -log-level=<level>
    The lowest level of the agent's log to capture: TRACE, DEBUG (the
    default), INFO, WARN or ERROR.

  -log-include-location
    Refused: the agent's monitor endpoint does not add source locations.

  -max-nodes=<count>
    The most client nodes to capture; 0 for no limit. Default: 10.

  -node-id=<id>,<id>
    The client nodes to capture, by ID prefix, or "all" (the default).

  -node-class=<class>
    Only capture client nodes of this class.

  -server-id=<name>,<name>
    The servers to capture, by member name, "leader", or "all" (the
    default).

  -stale
    Let any server answer the cluster queries, not only the leader.

  -output=<dir>
    Write the bundle's directory under <dir> and do not archive it.

  -event-topic=<Topic:Key>,...
    Also capture the event stream for these topics (e.g. "Job:*",
    "Allocation", "*"). Default: none.

  -event-index=<index>
    The raft index to start the event stream at. Default: 0.

  -verbose
    Print each file as it is written.

  The -consul-* and -vault-* flags of upstream are refused: this build
  has no Consul or Vault integration to collect from.
`)
}

// debugOptions are the flags of one capture, validated.
type debugOptions struct {
	duration, interval           time.Duration
	pprofDuration, pprofInterval time.Duration
	logLevel                     string
	logIncludeLocation           bool
	maxNodes                     int
	nodeIDs, serverIDs           string
	nodeClass                    string
	stale                        bool
	output                       string
	eventTopics                  []string
	eventIndex                   uint64
	verbose                      bool
}

// debugRefusedFlags are upstream's flags for collecting from Consul and
// Vault. They are refused by name, not accepted and ignored.
var debugRefusedFlags = map[string]struct {
	product string
	isBool  bool
}{
	"consul-http-addr":       {product: "Consul"},
	"consul-token":           {product: "Consul"},
	"consul-ca-cert":         {product: "Consul"},
	"consul-ca-path":         {product: "Consul"},
	"consul-client-cert":     {product: "Consul"},
	"consul-client-key":      {product: "Consul"},
	"consul-tls-server-name": {product: "Consul"},
	"consul-ssl-verify":      {product: "Consul", isBool: true},
	"vault-address":          {product: "Vault"},
	"vault-token":            {product: "Vault"},
	"vault-ca-cert":          {product: "Vault"},
	"vault-ca-path":          {product: "Vault"},
	"vault-client-cert":      {product: "Vault"},
	"vault-client-key":       {product: "Vault"},
	"vault-tls-server-name":  {product: "Vault"},
	"vault-tls-skip-verify":  {product: "Vault", isBool: true},
}

// refusedFlag is a flag whose every use is an error naming it.
type refusedFlag struct {
	name, product string
	isBool        bool
}

func (f refusedFlag) String() string   { return "" }
func (f refusedFlag) IsBoolFlag() bool { return f.isBool }
func (f refusedFlag) Set(string) error {
	return fmt.Errorf("-%s is not supported: this build has no %s integration", f.name, f.product)
}

// debugEventTopics are the event stream's topics, by lower-case name.
var debugEventTopics = map[string]string{
	"*": "*", "job": "Job", "allocation": "Allocation", "node": "Node",
	"evaluation": "Evaluation", "deployment": "Deployment",
}

// parseEventTopics reads -event-topic: "none", or a comma list of
// Topic[:Key], returned as the endpoint's topic=Topic:Key values.
func parseEventTopics(s string) ([]string, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []string
	for _, t := range strings.Split(s, ",") {
		kind, key, _ := strings.Cut(strings.TrimSpace(t), ":")
		topic, ok := debugEventTopics[strings.ToLower(kind)]
		if !ok {
			return nil, fmt.Errorf("unknown topic %q: use *, Job, Allocation, Node, Evaluation or Deployment", kind)
		}
		if key == "" {
			key = "*"
		}
		out = append(out, topic+":"+key)
	}
	return out, nil
}

// parseDebugFlags parses args into opts. It prints what is wrong and
// returns false when the command must exit 1.
func (c *OperatorDebugCommand) parseDebugFlags(args []string) (*debugOptions, *flag.FlagSet, bool) {
	flags := c.FlagSet("operator debug")
	var duration, interval, pprofDuration, pprofInterval, eventTopic string
	o := &debugOptions{}
	flags.StringVar(&duration, "duration", "2m", "")
	flags.StringVar(&interval, "interval", "30s", "")
	flags.StringVar(&pprofDuration, "pprof-duration", "1s", "")
	flags.StringVar(&pprofInterval, "pprof-interval", "250ms", "")
	flags.StringVar(&o.logLevel, "log-level", "DEBUG", "")
	flags.BoolVar(&o.logIncludeLocation, "log-include-location", false, "")
	flags.IntVar(&o.maxNodes, "max-nodes", 10, "")
	flags.StringVar(&o.nodeIDs, "node-id", "all", "")
	flags.StringVar(&o.serverIDs, "server-id", "all", "")
	flags.StringVar(&o.nodeClass, "node-class", "", "")
	flags.BoolVar(&o.stale, "stale", false, "")
	flags.StringVar(&o.output, "output", "", "")
	flags.StringVar(&eventTopic, "event-topic", "none", "")
	flags.Uint64Var(&o.eventIndex, "event-index", 0, "")
	flags.BoolVar(&o.verbose, "verbose", false, "")
	for name, r := range debugRefusedFlags {
		flags.Var(refusedFlag{name: name, product: r.product, isBool: r.isBool}, name, "")
	}
	if !c.parseFlags(flags, args, c) {
		return nil, nil, false
	}
	if flags.NArg() != 0 {
		c.argsError("This command takes no arguments", "operator debug")
		return nil, nil, false
	}
	fail := func(format string, a ...any) (*debugOptions, *flag.FlagSet, bool) {
		c.Ui.Error(fmt.Sprintf(format, a...))
		return nil, nil, false
	}
	for _, d := range []struct {
		what string
		src  string
		dst  *time.Duration
	}{
		{"duration", duration, &o.duration},
		{"interval", interval, &o.interval},
		{"pprof-duration", pprofDuration, &o.pprofDuration},
		{"pprof-interval", pprofInterval, &o.pprofInterval},
	} {
		v, err := time.ParseDuration(d.src)
		if err != nil {
			return fail("Error parsing %s: %s is not a valid duration: %v", d.what, d.src, err)
		}
		if v <= 0 {
			return fail("Error parsing %s: %s must be greater than zero", d.what, d.src)
		}
		*d.dst = v
	}
	if o.interval > o.duration {
		return fail("Error parsing interval: %s is greater than duration %s", interval, duration)
	}
	// As upstream: a profile never outlasts the capture.
	if o.pprofDuration > o.duration {
		o.pprofDuration = o.duration
	}
	o.logLevel = strings.ToUpper(o.logLevel)
	switch o.logLevel {
	case "TRACE", "DEBUG", "INFO", "WARN", "ERROR":
	default:
		return fail("Error parsing log-level: %q is not one of TRACE, DEBUG, INFO, WARN or ERROR", o.logLevel)
	}
	if o.logIncludeLocation {
		// Not accepted and ignored: the monitor cannot give them.
		return fail("-log-include-location is not supported: the agent's monitor endpoint does not add source locations (set log_include_location on the agent, and its own log has them)")
	}
	if o.maxNodes < 0 {
		return fail("Error parsing max-nodes: %d must not be negative", o.maxNodes)
	}
	topics, err := parseEventTopics(eventTopic)
	if err != nil {
		return fail("Error parsing event-topic: %v", err)
	}
	o.eventTopics = topics
	return o, flags, true
}

// Run implements cli.Command.
func (c *OperatorDebugCommand) Run(args []string) int {
	o, flags, ok := c.parseDebugFlags(args)
	if !ok {
		return exitError
	}
	client, code, ok := c.clientFor("operator debug", 0, 0)
	if !ok {
		return code
	}
	targets, err := c.debugTargets(client, o)
	if err != nil {
		c.Ui.Error("Error: " + err.Error())
		return exitError
	}

	name := "nomad-debug-" + time.Now().UTC().Format("2006-01-02-150405Z")
	parent := o.output
	if parent == "" {
		// The directory only lives until it is archived.
		tmp, err := os.MkdirTemp("", "nomad-debug-")
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error creating the capture directory: %v", err))
			return exitError
		}
		defer os.RemoveAll(tmp)
		parent = tmp
	}
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the output directory: %v", err))
		return exitError
	}
	// Mkdir, not MkdirAll: a bundle of the same second is not overwritten.
	if err := os.Mkdir(dir, 0o755); err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the capture directory: %v", err))
		return exitError
	}
	archive := ""
	if o.output == "" {
		archive = name + ".tar.gz"
	}

	c.printDebugHeader(o, targets, dir, archive)

	interrupt := c.ctx
	if interrupt == nil {
		var stop context.CancelFunc
		interrupt, stop = signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		// After the first Ctrl-C, a second one ends the process as usual.
		context.AfterFunc(interrupt, stop)
	}
	b := newDebugBundle(dir, c.Ui, o.verbose)
	capture := &debugCapture{
		client: client, opts: o, bundle: b, targets: targets, flags: debugFlagValues(flags),
		allNamespaces: c.namespace == "" && os.Getenv(api.EnvNamespace) == "",
	}
	if err := capture.run(interrupt); err != nil {
		if o.output != "" {
			_ = os.RemoveAll(dir)
		}
		c.Ui.Error(fmt.Sprintf("Error writing the debug bundle: %v", err))
		return exitError
	}
	if interrupt.Err() != nil {
		c.Ui.Output("Capture interrupted; writing what was captured")
	}
	if archive == "" {
		c.Ui.Output("Created debug directory: " + dir)
		return exitOK
	}
	if err := writeTarGz(archive, parent, name); err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the debug archive: %v", err))
		return exitError
	}
	c.Ui.Output("Created debug archive: " + archive)
	return exitOK
}

// debugTarget is one agent the bundle holds a directory for: a server by
// member name or a client by node ID.
type debugTarget struct {
	// kind is "server" or "client", the bundle's top-level directory.
	kind string
	// id is the member name or node ID, the directory's name.
	id string
}

// param is the query parameter naming the target on agent endpoints.
func (t debugTarget) param() string {
	if t.kind == "server" {
		return "server_id"
	}
	return "node_id"
}

// debugTargets resolves -server-id and -node-id against the cluster.
func (c *OperatorDebugCommand) debugTargets(client *api.Client, o *debugOptions) ([]debugTarget, error) {
	q := &api.QueryOptions{AllowStale: o.stale}

	var out []debugTarget
	servers, err := c.debugServers(client, q, o.serverIDs)
	if err != nil {
		return nil, err
	}
	for _, s := range servers {
		out = append(out, debugTarget{kind: "server", id: s})
	}
	nodes, err := debugNodes(client, q, o)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		out = append(out, debugTarget{kind: "client", id: n})
	}
	if len(out) == 0 {
		return nil, errors.New("no servers or client nodes matched -server-id and -node-id: nothing to capture")
	}
	return out, nil
}

// debugServers returns the member names -server-id names.
func (c *OperatorDebugCommand) debugServers(client *api.Client, q *api.QueryOptions, spec string) ([]string, error) {
	if spec == "" {
		return nil, nil
	}
	members, err := client.Agent().MembersOpts(q)
	if err != nil {
		return nil, fmt.Errorf("querying the server members: %v", err)
	}
	names := map[string]bool{}
	var out []string
	add := func(n string) {
		if !names[n] {
			names[n] = true
			out = append(out, n)
		}
	}
	for _, want := range strings.Split(spec, ",") {
		want = strings.TrimSpace(want)
		found := false
		switch want {
		case "all":
			for _, m := range members.Members {
				add(m.Name)
			}
			continue
		case "leader":
			leader, err := client.Status().Leader()
			if err != nil {
				return nil, fmt.Errorf("querying the leader: %v", err)
			}
			for _, m := range members.Members {
				if net.JoinHostPort(m.Addr, m.Tags["port"]) == leader {
					add(m.Name)
					found = true
				}
			}
		default:
			for _, m := range members.Members {
				if m.Name == want {
					add(m.Name)
					found = true
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("no server matches -server-id %q", want)
		}
	}
	sort.Strings(out)
	return out, nil
}

// debugNodes returns the node IDs -node-id and -node-class name, at most
// -max-nodes of them.
func debugNodes(client *api.Client, q *api.QueryOptions, o *debugOptions) ([]string, error) {
	if o.nodeIDs == "" {
		return nil, nil
	}
	seen := map[string]bool{}
	var out []string
	for _, want := range strings.Split(o.nodeIDs, ",") {
		want = strings.TrimSpace(want)
		nq := *q
		if want != "all" {
			nq.Prefix = want
		}
		nodes, _, err := client.Nodes().List(&nq)
		if err != nil {
			return nil, fmt.Errorf("querying the nodes: %v", err)
		}
		matched := 0
		for _, n := range nodes {
			if o.nodeClass != "" && n.NodeClass != o.nodeClass {
				continue
			}
			matched++
			if !seen[n.ID] {
				seen[n.ID] = true
				out = append(out, n.ID)
			}
		}
		if matched == 0 && want != "all" {
			return nil, fmt.Errorf("no node matches -node-id %q", want)
		}
	}
	sort.Strings(out)
	if o.maxNodes > 0 && len(out) > o.maxNodes {
		out = out[:o.maxNodes]
	}
	return out, nil
}

// printDebugHeader says what the capture will hold, before it starts.
func (c *OperatorDebugCommand) printDebugHeader(o *debugOptions, targets []debugTarget, dir, archive string) {
	var servers, clients []string
	for _, t := range targets {
		if t.kind == "server" {
			servers = append(servers, t.id)
		} else {
			clients = append(clients, t.id)
		}
	}
	topics := "none"
	if len(o.eventTopics) > 0 {
		topics = strings.Join(o.eventTopics, ",")
	}
	output := dir
	if archive != "" {
		output = archive
	}
	lines := []string{
		"Nomad CLI Version|Nomad v" + agent.Version,
		"Region|" + c.region,
		"Namespace|" + c.namespace,
		fmt.Sprintf("Servers|(%d) %v", len(servers), servers),
		fmt.Sprintf("Clients|(%d) %v", len(clients), clients),
		"Interval|" + o.interval.String(),
		"Duration|" + o.duration.String(),
		"pprof Interval|" + o.pprofInterval.String(),
		"pprof Duration|" + o.pprofDuration.String(),
		"Log Level|" + o.logLevel,
		"Event Topics|" + topics,
		"Output|" + output,
	}
	c.Ui.Output("Starting debugger...\n")
	c.Ui.Output(formatKV(lines))
	c.Ui.Output("\nCapturing cluster data...")
}

// debugFlagValues is the capture's flags as given or defaulted, for
// cluster/cli-flags.json; the token is never written.
func debugFlagValues(flags *flag.FlagSet) map[string]string {
	out := map[string]string{}
	flags.VisitAll(func(f *flag.Flag) {
		if _, refused := debugRefusedFlags[f.Name]; refused || f.Name == "token" {
			return
		}
		out[f.Name] = f.Value.String()
	})
	return out
}

// intervalDir is interval/NNNN.
func intervalDir(i int) string { return filepath.Join("interval", fmt.Sprintf("%04d", i)) }
