package command

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// NodePoolCommand is `nomad node pool`, the parent of the pool commands.
type NodePoolCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodePoolCommand) Synopsis() string { return "Interact with node pools" }

// Help implements cli.Command.
func (c *NodePoolCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node pool <subcommand> [options] [args]

  Node pools group client nodes. A job runs only on the nodes of its pool
  (node_pool in the job file, "default" if unset; "all" is every node). A
  client joins a pool with node_pool in its client block.

  A pool may also carry a disconnect policy (an extension of this
  project): every group placed in the pool that sets no disconnect
  settings of its own takes it.

    $ nomad node pool apply edge.nomad.hcl
    $ nomad node pool list
    $ nomad node pool info edge
    $ nomad node pool nodes edge
    $ nomad node pool jobs edge
    $ nomad node pool delete edge
`)
}

// Run implements cli.Command.
func (c *NodePoolCommand) Run(args []string) int { return c.runParent("node pool", args) }

// NodePoolApplyCommand is `nomad node pool apply`.
type NodePoolApplyCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodePoolApplyCommand) Synopsis() string { return "Create or update a node pool" }

// Help implements cli.Command.
func (c *NodePoolApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node pool apply [options] <file>

  Create or update the node pool a specification file ("-" for standard
  input) describes:

    node_pool "edge" {
      description = "LTE-linked sites"
      meta {
        link = "lte"
      }
      # Ours, not upstream's: the disconnect policy of every group placed
      # in the pool that sets none of its own.
      disconnect {
        lost_after = "1h"
        replace    = true
        reconcile  = "keep_original"
        # When half a datacenter's nodes of the pool disconnect within a
        # minute, hold their replacements: the site is cut off, not dead.
        site_outage {
          threshold = 0.5          # share of the site's live nodes, (0, 1]
          window    = "1m"
          scope     = "datacenter" # or "pool"
          min_nodes = 2
        }
      }
    }

Apply Options:

  -json
    Parse the specification file as JSON.

` + generalOptions())
}

// Run implements cli.Command.
func (c *NodePoolApplyCommand) Run(args []string) int {
	flags := c.FlagSet("node pool apply")
	var isJSON bool
	flags.BoolVar(&isJSON, "json", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("node pool apply", flags.NArg(), 1)
	if !ok {
		return code
	}
	input, name := flags.Arg(0), flags.Arg(0)
	var src []byte
	var err error
	if input == "-" {
		name = "<stdin>"
		src, err = io.ReadAll(os.Stdin)
	} else {
		src, err = os.ReadFile(input)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading node pool specification: %v", err))
		return exitError
	}
	pool, err := parseNodePoolSpec(src, name, isJSON)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error parsing node pool specification:\n%v", err))
		return exitError
	}
	if _, err := client.NodePools().Register(pool, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error applying node pool: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully applied node pool %q!", pool.Name))
	return exitOK
}

// NodePoolListCommand is `nomad node pool list`.
type NodePoolListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodePoolListCommand) Synopsis() string { return "List node pools" }

// Help implements cli.Command.
func (c *NodePoolListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node pool list [options]

  List the node pools the token may read, built-in ones included.

List Options:

  -json
    Print the node pools as JSON.

` + generalOptions())
}

// Run implements cli.Command.
func (c *NodePoolListCommand) Run(args []string) int {
	flags := c.FlagSet("node pool list")
	var asJSON bool
	flags.BoolVar(&asJSON, "json", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("node pool list", flags.NArg(), 0)
	if !ok {
		return code
	}
	pools, _, err := client.NodePools().List(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving node pools: %v", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(pools)
	}
	if len(pools) == 0 {
		c.Ui.Output("No node pools found")
		return exitOK
	}
	lines := []string{"Name|Description"}
	for _, p := range pools {
		lines = append(lines, p.Name+"|"+p.Description)
	}
	c.Ui.Output(formatList(lines))
	return exitOK
}

// NodePoolInfoCommand is `nomad node pool info`.
type NodePoolInfoCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodePoolInfoCommand) Synopsis() string { return "Show a node pool" }

// Help implements cli.Command.
func (c *NodePoolInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node pool info [options] <pool>

  Show a node pool: its name, description, metadata, disconnect policy and
  site outage detection.

Info Options:

  -json
    Print the node pool as JSON.

` + generalOptions())
}

// Run implements cli.Command.
func (c *NodePoolInfoCommand) Run(args []string) int {
	flags := c.FlagSet("node pool info")
	var asJSON bool
	flags.BoolVar(&asJSON, "json", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("node pool info", flags.NArg(), 1)
	if !ok {
		return code
	}
	pool, _, err := client.NodePools().Info(flags.Arg(0), nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving node pool: %v", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(pool)
	}
	out := formatNodePool(pool)
	if pool.Disconnect != nil && pool.Disconnect.SiteOutage != nil {
		outages, _, err := client.NodePools().SiteOutages(pool.Name, nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error retrieving site outages: %v", err))
			return exitError
		}
		out += "\n\nDeclared Site Outages\n" + formatSiteOutages(outages)
	}
	c.Ui.Output(out)
	return exitOK
}

// formatSiteOutages lists the declared outages of a pool's sites with
// what declared them.
func formatSiteOutages(outages []*api.SiteOutage) string {
	if len(outages) == 0 {
		return "None"
	}
	rows := []string{"Site|Declared At|Nodes Disconnected"}
	for _, o := range outages {
		site := o.Datacenter
		if site == "" {
			site = "(whole pool)"
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%d/%d within %s", site,
			time.Unix(0, o.DeclaredAt).UTC().Format(time.RFC3339), o.Disconnected, o.Nodes, o.Window))
	}
	return formatList(rows)
}

func formatNodePool(pool *api.NodePool) string {
	out := formatKV([]string{"Name|" + pool.Name, "Description|" + pool.Description})
	out += "\n\nMetadata\n"
	if len(pool.Meta) == 0 {
		out += "No metadata"
	} else {
		var lines []string
		for _, k := range slices.Sorted(maps.Keys(pool.Meta)) {
			lines = append(lines, k+"|"+pool.Meta[k])
		}
		out += formatKV(lines)
	}
	out += "\n\nDisconnect Policy\n"
	d := pool.Disconnect
	if d == nil {
		return out + "No disconnect policy"
	}
	replace, reconcile := true, d.Reconcile
	if d.Replace != nil {
		replace = *d.Replace
	}
	if reconcile == "" {
		reconcile = "best_score"
	}
	out += formatKV([]string{
		"Lost After|" + d.LostAfter.String(),
		fmt.Sprintf("Replace|%t", replace),
		"Reconcile|" + reconcile,
	})
	return out + "\n\nSite Outage Detection\n" + formatSiteOutage(d.SiteOutage)
}

// formatSiteOutage shows a pool's site outage setting with the servers'
// defaults filled in.
func formatSiteOutage(so *api.NodePoolSiteOutage) string {
	if so == nil {
		return "No site outage detection"
	}
	v := *so
	if v.Threshold == 0 {
		v.Threshold = 0.5
	}
	if v.Window == 0 {
		v.Window = time.Minute
	}
	if v.Scope == "" {
		v.Scope = "datacenter"
	}
	if v.MinNodes == 0 {
		v.MinNodes = 2
	}
	return formatKV([]string{
		fmt.Sprintf("Threshold|%g", v.Threshold),
		"Window|" + v.Window.String(),
		"Scope|" + v.Scope,
		fmt.Sprintf("Min Nodes|%d", v.MinNodes),
	})
}

// NodePoolDeleteCommand is `nomad node pool delete`.
type NodePoolDeleteCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodePoolDeleteCommand) Synopsis() string { return "Delete a node pool" }

// Help implements cli.Command.
func (c *NodePoolDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node pool delete [options] <pool>

  Delete a node pool. A pool that still has nodes, or jobs that are not
  dead, is refused, naming them; the built-in pools cannot be deleted.

` + generalOptions())
}

// Run implements cli.Command.
func (c *NodePoolDeleteCommand) Run(args []string) int {
	flags := c.FlagSet("node pool delete")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("node pool delete", flags.NArg(), 1)
	if !ok {
		return code
	}
	if _, err := client.NodePools().Delete(flags.Arg(0), nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting node pool: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted node pool %q!", flags.Arg(0)))
	return exitOK
}

// NodePoolJobsCommand is `nomad node pool jobs`.
type NodePoolJobsCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodePoolJobsCommand) Synopsis() string { return "List the jobs in a node pool" }

// Help implements cli.Command.
func (c *NodePoolJobsCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node pool jobs [options] <pool>

  List the jobs that run in a node pool, in the namespace of -namespace
  ("*" for all namespaces).

Jobs Options:

  -json
    Print the jobs as JSON.

` + generalOptions())
}

// Run implements cli.Command.
func (c *NodePoolJobsCommand) Run(args []string) int {
	flags := c.FlagSet("node pool jobs")
	var asJSON bool
	flags.BoolVar(&asJSON, "json", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("node pool jobs", flags.NArg(), 1)
	if !ok {
		return code
	}
	jobs, _, err := client.NodePools().ListJobs(flags.Arg(0), nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving node pool jobs: %v", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(jobs)
	}
	if len(jobs) == 0 {
		c.Ui.Output("No jobs")
		return exitOK
	}
	lines := []string{"ID|Namespace|Type|Priority|Status|Submit Date"}
	for _, j := range jobs {
		lines = append(lines, fmt.Sprintf("%s|%s|%s|%d|%s|%s", j.ID, j.Namespace, j.Type, j.Priority,
			jobStatus(j.Status, stopState(j.Stop)), formatUnixNanoTime(j.SubmitTime)))
	}
	c.Ui.Output(formatList(lines))
	return exitOK
}

// NodePoolNodesCommand is `nomad node pool nodes`.
type NodePoolNodesCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodePoolNodesCommand) Synopsis() string { return "List the nodes in a node pool" }

// Help implements cli.Command.
func (c *NodePoolNodesCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node pool nodes [options] <pool>

  List the nodes of a node pool ("all" lists every node).

Nodes Options:

  -json
    Print the nodes as JSON.

  -verbose
    Show full IDs, addresses and versions.

` + generalOptions())
}

// Run implements cli.Command.
func (c *NodePoolNodesCommand) Run(args []string) int {
	flags := c.FlagSet("node pool nodes")
	var asJSON, verbose bool
	flags.BoolVar(&asJSON, "json", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("node pool nodes", flags.NArg(), 1)
	if !ok {
		return code
	}
	nodes, _, err := client.NodePools().ListNodes(flags.Arg(0), nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving node pool nodes: %v", err))
		return exitError
	}
	if asJSON {
		return c.outputJSON(nodes)
	}
	if len(nodes) == 0 {
		c.Ui.Output("No nodes")
		return exitOK
	}
	c.Ui.Output(formatNodeList(nodes, view{verbose: verbose, now: time.Now()}))
	return exitOK
}
