package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// NodeDrainCommand is `nomad node drain`.
type NodeDrainCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodeDrainCommand) Synopsis() string { return "Toggle drain mode on a given node" }

// Help implements cli.Command.
func (c *NodeDrainCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node drain [options] <node>

  Start or end a node's drain. A draining node is ineligible for new
  placements, and its allocations are moved to other nodes: each task
  group moves one allocation at a time, batch allocations are left to
  finish until the deadline, and system allocations go last. At the
  deadline whatever is left is stopped. Once nothing is left the drain
  ends and the node stays ineligible ('nomad node eligibility -enable'
  makes it schedulable again).

  A disconnected node can be drained: its "unknown" allocations are
  stopped and replaced at once, and the drain completes when the node
  comes back (its client then stops them) or goes down.

  <node> is a node ID or a unique prefix of one.

` + generalOptions() + `

Drain Options:

  -enable
    Start the drain, or update the one in progress.

  -disable
    End the drain. The node becomes eligible again unless
    -keep-ineligible is given.

  -deadline <duration>
    How long allocations may take to move before the rest are stopped.
    Default: 1h.

  -force
    Stop every allocation now, without waiting for migrations.

  -no-deadline
    Never stop allocations: wait until they have all moved or finished.

  -ignore-system
    Leave system allocations running on the node.

  -keep-ineligible
    With -disable, leave the node ineligible.

  -meta <key>=<value>
    Record metadata on the drain (shown in the node's LastDrain). May be
    repeated.

  -detach
    Return once the drain is set instead of following it.

  -monitor
    Follow the node's drain in progress without changing it.

  -self
    Drain the node of the agent the command talks to; no <node> argument.

  -yes
    Do not ask for confirmation.
`)
}

// nodeDrainFlags are the parsed flags of `nomad node drain`.
type nodeDrainFlags struct {
	enable, disable, force, noDeadline, ignoreSystem bool
	keepIneligible, detach, monitor, yes, self       bool
	deadline                                         time.Duration
	meta                                             map[string]string
}

// Run implements cli.Command.
func (c *NodeDrainCommand) Run(args []string) int {
	f := nodeDrainFlags{meta: map[string]string{}}
	flags := c.FlagSet("node drain")
	flags.BoolVar(&f.enable, "enable", false, "")
	flags.BoolVar(&f.disable, "disable", false, "")
	flags.BoolVar(&f.force, "force", false, "")
	flags.BoolVar(&f.noDeadline, "no-deadline", false, "")
	flags.BoolVar(&f.ignoreSystem, "ignore-system", false, "")
	flags.BoolVar(&f.keepIneligible, "keep-ineligible", false, "")
	flags.BoolVar(&f.detach, "detach", false, "")
	flags.BoolVar(&f.monitor, "monitor", false, "")
	flags.BoolVar(&f.yes, "yes", false, "")
	flags.BoolVar(&f.self, "self", false, "")
	flags.DurationVar(&f.deadline, "deadline", time.Hour, "")
	flags.Func("meta", "", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("-meta %q: want key=value", s)
		}
		f.meta[k] = v
		return nil
	})
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if err := f.check(); err != nil {
		c.Ui.Error(err.Error())
		c.Ui.Error("For additional help try 'nomad node drain -help'")
		return exitError
	}
	client, node, code := c.nodeArg(flags.Args(), f.self, "node drain")
	if node == nil {
		return code
	}
	if f.monitor {
		return newDrainMonitor(c.Ui, client).monitor(node.ID, 0)
	}
	if f.enable && !f.yes && !c.confirm(fmt.Sprintf("Are you sure you want to enable drain mode for node %q? [y/N]", node.ID)) {
		c.Ui.Output("Canceling drain toggle")
		return exitOK
	}
	opts := &api.DrainOptions{MarkEligible: f.disable && !f.keepIneligible}
	if len(f.meta) > 0 {
		opts.Meta = f.meta
	}
	if f.enable {
		opts.DrainSpec = &api.DrainSpec{Deadline: f.specDeadline(), IgnoreSystemJobs: f.ignoreSystem}
	}
	resp, err := client.Nodes().UpdateDrainOpts(node.ID, opts, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error updating drain specification: %v", err))
		return exitError
	}
	if !f.enable {
		c.Ui.Output(fmt.Sprintf("Node %q drain strategy unset", node.ID))
		return exitOK
	}
	c.Ui.Output(fmt.Sprintf("Node %q drain strategy set", node.ID))
	if f.detach {
		return exitOK
	}
	return newDrainMonitor(c.Ui, client).monitor(node.ID, resp.LastIndex)
}

// check refuses contradictory flags, naming them.
func (f nodeDrainFlags) check() error {
	switch {
	case f.monitor && (f.enable || f.disable):
		return fmt.Errorf("-monitor cannot be combined with -enable or -disable")
	case f.monitor:
		return nil
	case f.enable == f.disable:
		return fmt.Errorf("exactly one of -enable or -disable must be given")
	case f.disable && (f.force || f.noDeadline || f.ignoreSystem):
		return fmt.Errorf("-force, -no-deadline and -ignore-system only apply with -enable")
	case f.force && f.noDeadline:
		return fmt.Errorf("-force and -no-deadline are mutually exclusive")
	case f.deadline <= 0 && !f.force && !f.noDeadline:
		return fmt.Errorf("-deadline %v: must be positive (use -force or -no-deadline)", f.deadline)
	}
	return nil
}

// specDeadline is the DrainSpec deadline the flags ask for: negative
// forces the drain now, zero waits forever.
func (f nodeDrainFlags) specDeadline() time.Duration {
	switch {
	case f.force:
		return -1
	case f.noDeadline:
		return 0
	}
	return f.deadline
}

func (c *NodeDrainCommand) confirm(q string) bool {
	answer, err := c.Ui.Ask(q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to read confirmation: %v", err))
		return false
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}

// NodeEligibilityCommand is `nomad node eligibility`.
type NodeEligibilityCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodeEligibilityCommand) Synopsis() string {
	return "Toggle scheduling eligibility for a given node"
}

// Help implements cli.Command.
func (c *NodeEligibilityCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node eligibility [options] <node>

  Mark a node eligible or ineligible for new placements. Its allocations
  stay where they are. A draining node cannot be made eligible: end the
  drain with 'nomad node drain -disable'.

` + generalOptions() + `

Eligibility Options:

  -enable
    Make the node eligible for scheduling.

  -disable
    Make the node ineligible for scheduling.

  -self
    Act on the node of the agent the command talks to; no <node> argument.
`)
}

// Run implements cli.Command.
func (c *NodeEligibilityCommand) Run(args []string) int {
	var enable, disable, self bool
	flags := c.FlagSet("node eligibility")
	flags.BoolVar(&enable, "enable", false, "")
	flags.BoolVar(&disable, "disable", false, "")
	flags.BoolVar(&self, "self", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if enable == disable {
		return c.argsError("Exactly one of -enable or -disable must be given", "node eligibility")
	}
	client, node, code := c.nodeArg(flags.Args(), self, "node eligibility")
	if node == nil {
		return code
	}
	if _, err := client.Nodes().ToggleEligibility(node.ID, enable, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error updating scheduling eligibility: %v", err))
		return exitError
	}
	state := "eligible"
	if disable {
		state = "ineligible"
	}
	c.Ui.Output(fmt.Sprintf("Node %q scheduling eligibility set: %s for scheduling", node.ID, state))
	return exitOK
}

// NodePurgeCommand is `nomad node purge`.
type NodePurgeCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodePurgeCommand) Synopsis() string { return "Remove a node from the cluster state" }

// Help implements cli.Command.
func (c *NodePurgeCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node purge [options] <node>

  Remove a node from the servers' state, whatever its status, and
  re-evaluate the jobs that had allocations on it. A client that is still
  running registers again on its next heartbeat.

` + generalOptions())
}

// Run implements cli.Command.
func (c *NodePurgeCommand) Run(args []string) int {
	flags := c.FlagSet("node purge")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <node>", "node purge")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	node, ok := c.resolveNode(client, flags.Arg(0))
	if !ok {
		return exitError
	}
	resp, err := client.Nodes().Purge(node.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error purging node: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Node %q purged", node.ID))
	if len(resp.EvalIDs) > 0 {
		c.Ui.Output(fmt.Sprintf("Evaluations created: %s", strings.Join(resp.EvalIDs, ", ")))
	}
	return exitOK
}

// localNodeID is the ID of the client node of the agent the command talks
// to, for -self; "" after saying why when there is none.
func (m *Meta) localNodeID(client *api.Client) string {
	agent, err := client.Agent().Self()
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error querying agent info: %v", err))
		return ""
	}
	id := agent.Stats["client"]["node_id"]
	if id == "" {
		m.Ui.Error("-self: the agent is not running a client")
	}
	return id
}

// nodeArg resolves the node a command acts on: its one argument, or with
// self the node of the agent it talks to. node is nil, with the exit code,
// when there is none.
func (m *Meta) nodeArg(args []string, self bool, command string) (*api.Client, *api.NodeListStub, int) {
	switch {
	case self && len(args) != 0:
		return nil, nil, m.argsError("With -self this command takes no argument", command)
	case !self && len(args) != 1:
		return nil, nil, m.argsError("This command takes one argument: <node>", command)
	}
	client, err := m.Client()
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return nil, nil, exitError
	}
	var prefix string
	if self {
		if prefix = m.localNodeID(client); prefix == "" {
			return nil, nil, exitError
		}
	} else {
		prefix = args[0]
	}
	node, ok := m.resolveNode(client, prefix)
	if !ok {
		return nil, nil, exitError
	}
	return client, node, exitOK
}
