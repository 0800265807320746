package command

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// ServerCommand is `nomad server`, the parent of the server subcommands.
type ServerCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ServerCommand) Synopsis() string { return "Interact with servers" }

// Help implements cli.Command.
func (c *ServerCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad server <subcommand> [options] [args]

  Inspect and manage the cluster's servers: who is in the gossip pool,
  joining a server to the others, and forcing a failed server out.

  List the servers:

      $ nomad server members

  Join a new server to a running one (its serf port, 4648 by default):

      $ nomad server join 10.0.0.11

  Force a failed server out of the cluster:

      $ nomad server force-leave server-3.global

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *ServerCommand) Run(args []string) int { return c.runParent("server", args) }

// ServerMembersCommand is `nomad server members`.
type ServerMembersCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ServerMembersCommand) Synopsis() string {
	return "Display a list of the known servers and their status"
}

// Help implements cli.Command.
func (c *ServerMembersCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad server members [options]

  List the servers of the gossip pool as the agent's server sees them,
  with their status, which one leads the region, and the version each
  runs. A client-only agent asks one of its servers. Gossip is eventually
  consistent: a server that just failed may still read "alive" for a few
  seconds.

` + generalOptions() + `

Server Members Options:

  -verbose
    Also show each server's gossip protocol version and all its tags.
    -detailed is accepted as an older spelling.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *ServerMembersCommand) Run(args []string) int {
	var verbose, detailed bool
	var out outputFlags
	flags := c.FlagSet("server members")
	out.register(flags)
	flags.BoolVar(&verbose, "verbose", false, "")
	flags.BoolVar(&detailed, "detailed", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 0 {
		return c.argsError("This command takes no arguments", "server members")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	resp, err := client.Agent().Members()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying servers: %v", err))
		return exitError
	}
	api.SortAgentMembers(resp.Members)
	if out.set() {
		return c.writeFormatted(out, resp.Members)
	}
	// Without a leader the members still show, as upstream's do, with the
	// leader query's error after them (it is held while an election runs).
	leaders, leaderErrs := regionLeaders(client, resp)
	c.Ui.Output(formatMembers(resp, leaders, verbose || detailed))
	if len(leaderErrs) > 0 {
		c.Ui.Output("")
		for _, err := range leaderErrs {
			c.Ui.Warn(err)
		}
		return exitError
	}
	return exitOK
}

// regionLeaders asks each region of the members for its leader, as upstream
// marks one leader per region; a region that cannot answer is named in an
// error line (its members still show, none marked).
func regionLeaders(client *api.Client, resp *api.ServerMembers) (map[string]string, []string) {
	leaders := map[string]string{}
	var errs []string
	for _, m := range resp.Members {
		region := m.Tags["region"]
		if _, asked := leaders[region]; asked || region == "" {
			continue
		}
		leader, err := client.Status().RegionLeader(region)
		leaders[region] = leader
		if err != nil {
			errs = append(errs, fmt.Sprintf("Error determining the leader of region %q: %v", region, err))
		}
	}
	return leaders, errs
}

// memberRPCAddr is the RPC address a server member advertises, which is
// what the leader is named by.
func memberRPCAddr(m *api.AgentMember) string {
	ip := m.Tags["rpc_addr"]
	if ip == "" {
		ip = m.Addr
	}
	return net.JoinHostPort(ip, m.Tags["port"])
}

// formatMembers lays out the members table; leaders holds the RPC address
// of each region's leader ("" when it has none or did not answer).
func formatMembers(resp *api.ServerMembers, leaders map[string]string, verbose bool) string {
	head := "Name|Address|Port|Status|Leader|Raft Version|Build|Datacenter|Region"
	if verbose {
		head = "Name|Address|Port|Status|Leader|Protocol|Raft Version|Build|Datacenter|Region|Tags"
	}
	lines := []string{head}
	for _, m := range resp.Members {
		leader := leaders[m.Tags["region"]]
		isLeader := leader != "" && memberRPCAddr(m) == leader
		if verbose {
			lines = append(lines, fmt.Sprintf("%s|%s|%d|%s|%t|%d|%s|%s|%s|%s|%s",
				m.Name, m.Addr, m.Port, m.Status, isLeader, m.ProtocolCur, m.Tags["raft_vsn"],
				m.Tags["build"], m.Tags["dc"], m.Tags["region"], formatTags(m.Tags)))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s|%s|%d|%s|%t|%s|%s|%s|%s",
			m.Name, m.Addr, m.Port, m.Status, isLeader, m.Tags["raft_vsn"],
			m.Tags["build"], m.Tags["dc"], m.Tags["region"]))
	}
	return formatList(lines)
}

// formatTags renders tags as sorted k=v pairs, so the output is stable.
func formatTags(tags map[string]string) string {
	pairs := make([]string, 0, len(tags))
	for k, v := range tags {
		pairs = append(pairs, k+"="+v)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

// ServerJoinCommand is `nomad server join`.
type ServerJoinCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ServerJoinCommand) Synopsis() string { return "Join server nodes together" }

// Help implements cli.Command.
func (c *ServerJoinCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad server join [options] <addr> [<addr>...]

  Ask the agent's server to join the gossip pool of the servers at the
  given addresses: host or host:port of their serf port (4648 when no
  port is given). Joining one server of a cluster is enough; gossip
  finds the rest, and the leader adds the new server to raft. The agent
  must be a server.

` + generalOptions())
}

// Run implements cli.Command.
func (c *ServerJoinCommand) Run(args []string) int {
	flags := c.FlagSet("server join")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() == 0 {
		return c.argsError("This command takes at least one argument: <addr>", "server join")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	n, err := client.Agent().Join(flags.Args()...)
	if err != nil {
		if n > 0 {
			c.Ui.Output(fmt.Sprintf("Joined %d servers successfully", n))
		}
		c.Ui.Error(fmt.Sprintf("Error: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Joined %d servers successfully", n))
	return exitOK
}

// ServerForceLeaveCommand is `nomad server force-leave`.
type ServerForceLeaveCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ServerForceLeaveCommand) Synopsis() string {
	return "Force a server into the 'left' state"
}

// Help implements cli.Command.
func (c *ServerForceLeaveCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad server force-leave [options] <node>

  Mark a failed server as having left the cluster, so the leader removes
  it from raft now instead of waiting for it to come back (or for the
  dead-server cleanup). <node> is the member name "nomad server members"
  shows, such as "server-3.global". A server that is still running
  rejoins by itself; to remove one for good, stop it first. The agent must
  be a server.

` + generalOptions() + `

Force-Leave Options:

  -prune
    Also forget the server at once: it leaves the member list instead of
    being listed as left until the gossip pool reaps it.
`)
}

// Run implements cli.Command.
func (c *ServerForceLeaveCommand) Run(args []string) int {
	var prune bool
	flags := c.FlagSet("server force-leave")
	flags.BoolVar(&prune, "prune", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <node>", "server force-leave")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	node := flags.Arg(0)
	if err := client.Agent().ForceLeaveWithOptions(node, api.ForceLeaveOpts{Prune: prune}); err != nil {
		c.Ui.Error(fmt.Sprintf("Error force-leaving server %s: %v", node, err))
		return exitError
	}
	return exitOK
}
