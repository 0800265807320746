package command

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// OperatorCommand is `nomad operator`, the parent of the cluster repair
// commands.
type OperatorCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorCommand) Synopsis() string {
	return "Provides cluster-level tools for Nomad operators"
}

// Help implements cli.Command.
func (c *OperatorCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator <subcommand> [options] [args]

  Low-level tools for operators: inspect and repair the servers' raft
  membership. A mistake here can cost the cluster its quorum; read a
  subcommand's help before running it.

      $ nomad operator raft list-peers

  Show or change the scheduler configuration (pause the eval broker,
  reject job registrations):

      $ nomad operator scheduler get-config

  List and rotate the root keys that encrypt variables:

      $ nomad operator root keyring list

  Run simulated client nodes against a cluster:

      $ nomad operator sim -servers 127.0.0.1:4647 -count 1000

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *OperatorCommand) Run(args []string) int { return c.runParent("operator", args) }

// OperatorRaftCommand is `nomad operator raft`.
type OperatorRaftCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorRaftCommand) Synopsis() string {
	return "Provides access to the Raft subsystem"
}

// Help implements cli.Command.
func (c *OperatorRaftCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator raft <subcommand> [options]

  Inspect and change the servers' raft membership.

  List the raft peers:

      $ nomad operator raft list-peers

  Remove a peer that is gone for good:

      $ nomad operator raft remove-peer -peer-id=<id>

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *OperatorRaftCommand) Run(args []string) int { return c.runParent("operator raft", args) }

// OperatorRaftListCommand is `nomad operator raft list-peers`.
type OperatorRaftListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorRaftListCommand) Synopsis() string {
	return "Display the current Raft peer configuration"
}

// Help implements cli.Command.
func (c *OperatorRaftListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator raft list-peers [options]

  List the servers of the raft configuration: their gossip name, raft ID
  and address, whether each leads or follows, whether it votes, and the
  raft protocol it speaks. A server listed that no longer exists is a
  candidate for "nomad operator raft remove-peer".

` + generalOptions() + `

List Peers Options:

  -stale
    Let the agent's server answer from its own state instead of asking
    the leader; works without a leader, so it helps diagnose an outage.
`)
}

// Run implements cli.Command.
func (c *OperatorRaftListCommand) Run(args []string) int {
	var stale bool
	flags := c.FlagSet("operator raft list-peers")
	flags.BoolVar(&stale, "stale", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 0 {
		return c.argsError("This command takes no arguments", "operator raft list-peers")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	cfg, err := client.Operator().RaftGetConfiguration(&api.QueryOptions{AllowStale: stale})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to retrieve raft configuration: %v", err))
		return exitError
	}
	c.Ui.Output(formatRaftPeers(cfg.Servers))
	return exitOK
}

// formatRaftPeers lays out the raft servers sorted by node name.
func formatRaftPeers(servers []*api.RaftServer) string {
	sorted := slices.Clone(servers)
	slices.SortStableFunc(sorted, func(a, b *api.RaftServer) int { return strings.Compare(a.Node, b.Node) })
	lines := []string{"Node|ID|Address|State|Voter|RaftProtocol"}
	for _, s := range sorted {
		state := "follower"
		if s.Leader {
			state = "leader"
		}
		lines = append(lines, fmt.Sprintf("%s|%s|%s|%s|%t|%s", s.Node, s.ID, s.Address, state, s.Voter, s.RaftProtocol))
	}
	return formatList(lines)
}

// OperatorRaftRemoveCommand is `nomad operator raft remove-peer`.
type OperatorRaftRemoveCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorRaftRemoveCommand) Synopsis() string {
	return "Remove a Nomad server from the Raft configuration"
}

// Help implements cli.Command.
func (c *OperatorRaftRemoveCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator raft remove-peer [options] (-peer-id=<id> | -peer-address=<addr>)

  Remove a server from the raft configuration, for a server that is gone
  for good and still counts toward the quorum. The leader does it. A
  server that is alive in the gossip pool is added back by the leader
  within seconds: stop it, or use "nomad server force-leave", first.

  Removing servers can cost the cluster its quorum. Check
  "nomad operator raft list-peers" before and after.

` + generalOptions() + `

Remove Peer Options:

  -peer-id=<id>
    The raft ID of the server to remove, as list-peers shows it.

  -peer-address=<host:port>
    The raft address of the server to remove, as list-peers shows it.
`)
}

// Run implements cli.Command.
func (c *OperatorRaftRemoveCommand) Run(args []string) int {
	var id, addr string
	flags := c.FlagSet("operator raft remove-peer")
	flags.StringVar(&id, "peer-id", "", "")
	flags.StringVar(&addr, "peer-address", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 0 {
		return c.argsError("This command takes no arguments: name the peer with -peer-id or -peer-address", "operator raft remove-peer")
	}
	switch {
	case id == "" && addr == "":
		return c.argsError("Missing peer: give -peer-id or -peer-address", "operator raft remove-peer")
	case id != "" && addr != "":
		return c.argsError("Give only one of -peer-id and -peer-address", "operator raft remove-peer")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	if id != "" {
		if err := client.Operator().RaftRemovePeerByID(id, nil); err != nil {
			c.Ui.Error(fmt.Sprintf("Error removing peer: %v", err))
			return exitError
		}
		c.Ui.Output(fmt.Sprintf("Removed peer with id %q", id))
		return exitOK
	}
	if err := client.Operator().RaftRemovePeerByAddress(addr, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error removing peer: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Removed peer with address %q", addr))
	return exitOK
}
