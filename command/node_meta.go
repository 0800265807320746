package command

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// NodeMetaCommand is `nomad node meta`, the parent of apply and read.
type NodeMetaCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodeMetaCommand) Synopsis() string { return "Interact with node metadata" }

// Help implements cli.Command.
func (c *NodeMetaCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node meta <subcommand> [options]

  Read or change a node's metadata at runtime, without editing the client's
  config or restarting it. The client keeps what is applied in its state
  database across restarts and registers the node with it.

      $ nomad node meta read
      $ nomad node meta apply -unset zone rack=r2

  Both talk to a client: the agent addressed, or the node named with
  -node-id, reached through the servers.
`)
}

// Run implements cli.Command.
func (c *NodeMetaCommand) Run(args []string) int { return c.runParent("node meta", args) }

const nodeIDFlagHelp = `
  -node-id
    The node to act on (a full ID or a unique prefix). Without it, the node
    of the agent the command talks to.
`

// resolveNodeID turns a -node-id prefix into the node's full ID; ""
// stays "" (the agent's own node).
func (m *Meta) resolveNodeID(client *api.Client, prefix string) (string, bool) {
	if prefix == "" {
		return "", true
	}
	if err := checkPrefix("Node", prefix); err != nil {
		m.Ui.Error(err.Error())
		return "", false
	}
	nodes, _, err := client.Nodes().List(&api.QueryOptions{Prefix: prefix})
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error querying nodes: %v", err))
		return "", false
	}
	stub, ok, matches := pickByPrefix(nodes, func(n *api.NodeListStub) string { return n.ID }, prefix)
	if !ok {
		if len(matches) == 0 {
			m.Ui.Error(fmt.Sprintf("No node(s) with prefix %q found", prefix))
		} else {
			m.Ui.Error(fmt.Sprintf("Prefix %q matched %d nodes; give more of the ID", prefix, len(matches)))
		}
		return "", false
	}
	return stub.ID, true
}

// NodeMetaApplyCommand is `nomad node meta apply`.
type NodeMetaApplyCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodeMetaApplyCommand) Synopsis() string { return "Modify node metadata" }

// Help implements cli.Command.
func (c *NodeMetaApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node meta apply [-node-id ...] [-unset ...] key1=value1 ... kN=vN

  Set (key=value) or unset (-unset) keys of a node's metadata. Unsetting a
  key of the client's config meta block removes it too, until it is set
  again. The node is registered again with the change at once; while it
  cannot reach the servers the change waits on the client.

` + generalOptions() + `

Apply Options:
` + nodeIDFlagHelp + `
  -unset
    A comma-separated list of keys to unset.
`)
}

// Run implements cli.Command.
func (c *NodeMetaApplyCommand) Run(args []string) int {
	var nodeID, unset string
	flags := c.FlagSet("node meta apply")
	flags.StringVar(&nodeID, "node-id", "", "")
	flags.StringVar(&unset, "unset", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	changes := map[string]*string{}
	for _, kv := range flags.Args() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return c.argsError(fmt.Sprintf("%q is not of the form key=value", kv), "node meta apply")
		}
		changes[k] = &v
	}
	for _, k := range strings.Split(unset, ",") {
		if k = strings.TrimSpace(k); k != "" {
			if _, set := changes[k]; set {
				return c.argsError(fmt.Sprintf("%q is both set and unset", k), "node meta apply")
			}
			changes[k] = nil
		}
	}
	if len(changes) == 0 {
		return c.argsError("Nothing to apply: give key=value arguments or -unset", "node meta apply")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	id, ok := c.resolveNodeID(client, nodeID)
	if !ok {
		return exitError
	}
	if _, err := client.Nodes().Meta().Apply(&api.NodeMetaApplyRequest{NodeID: id, Meta: changes}, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error applying metadata: %v", err))
		return exitError
	}
	return exitOK
}

// NodeMetaReadCommand is `nomad node meta read`.
type NodeMetaReadCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodeMetaReadCommand) Synopsis() string { return "Read node metadata" }

// Help implements cli.Command.
func (c *NodeMetaReadCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node meta read [-json] [-node-id ...]

  Show a node's metadata as its client holds it: all of it, what was
  applied at runtime (Dynamic; an unset key reads <unset>) and the
  client's config (Static). "nomad node status -verbose" shows what the
  servers hold, which lags an apply while the node is cut off.

` + generalOptions() + `

Read Options:
` + nodeIDFlagHelp + `
  -json
    Print the metadata as JSON.
`)
}

// Run implements cli.Command.
func (c *NodeMetaReadCommand) Run(args []string) int {
	var nodeID string
	var asJSON bool
	flags := c.FlagSet("node meta read")
	flags.StringVar(&nodeID, "node-id", "", "")
	flags.BoolVar(&asJSON, "json", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("node meta read", flags.NArg(), 0)
	if !ok {
		return code
	}
	id, ok := c.resolveNodeID(client, nodeID)
	if !ok {
		return exitError
	}
	meta, err := client.Nodes().Meta().Read(id, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading metadata: %v", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(meta)
	}
	c.Ui.Output(formatNodeMeta(meta))
	return exitOK
}

// formatNodeMeta renders the three views of a node's metadata under
// upstream's headings.
func formatNodeMeta(m *api.NodeMetaResponse) string {
	dyn := make([]string, 0, len(m.Dynamic))
	for _, k := range slices.Sorted(maps.Keys(m.Dynamic)) {
		v := "<unset>"
		if p := m.Dynamic[k]; p != nil {
			v = *p
		}
		dyn = append(dyn, k+"|"+v)
	}
	return "All Meta\n" + formatMapKV(m.Meta) +
		"\n\nDynamic Meta\n" + formatKV(dyn) +
		"\n\nStatic Meta\n" + formatMapKV(m.Static)
}
