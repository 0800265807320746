package command

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// NodeCommand is `nomad node`, the parent of the node subcommands.
type NodeCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodeCommand) Synopsis() string { return "Interact with nodes" }

// Help implements cli.Command.
func (c *NodeCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node <subcommand> [options] [args]

  Inspect and operate the client nodes of the cluster.

      $ nomad node status
      $ nomad node status <node id>
      $ nomad node drain -enable <node id>
      $ nomad node eligibility -disable <node id>
      $ nomad node purge <node id>
      $ nomad node pool list

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *NodeCommand) Run(args []string) int { return c.runParent("node", args) }

// NodeStatusCommand is `nomad node status`.
type NodeStatusCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NodeStatusCommand) Synopsis() string { return "Display status information about nodes" }

// Help implements cli.Command.
func (c *NodeStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad node status [options] [node]

  Without an argument, list the client nodes. With a node ID (or a unique
  prefix of at least two characters), show the node: its status, drivers,
  recent events, the resources its allocations hold, and its allocations.

  A "disconnected" node missed its heartbeats; its allocations are
  "unknown" and may come back when it reconnects. A "down" node's
  allocations are replaced elsewhere.

` + generalOptions() + `

Status Options:

  -allocs
    In the node list, count each node's running allocations (of every
    namespace) in a Running Allocs column.

  -self
    Show the node of the agent the command talks to, when that agent runs
    a client.

  -short
    Show only the node's basic information, without its events,
    resources and allocations.

  -stats
    Add the host's detailed stats, read from its client: each CPU's use,
    the memory and the allocation directory's disk. The node's Host
    Resource Utilization is shown without it, when the client answers.

  -verbose
    Show full IDs, addresses, versions, the drivers' health and the
    node's attributes and meta.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *NodeStatusCommand) Run(args []string) int {
	var self, short, verbose, listAllocs, stats bool
	var out outputFlags
	flags := c.FlagSet("node status")
	out.register(flags)
	flags.BoolVar(&self, "self", false, "")
	flags.BoolVar(&short, "short", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	flags.BoolVar(&listAllocs, "allocs", false, "")
	flags.BoolVar(&stats, "stats", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	switch {
	case self && flags.NArg() > 0:
		return c.argsError("With -self this command takes no argument", "node status")
	case flags.NArg() > 1:
		return c.argsError("This command takes either no arguments or one: <node>", "node status")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	if flags.NArg() == 0 && !self {
		nodes, _, err := client.Nodes().List(nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error querying node status: %v", err))
			return exitError
		}
		if out.set() {
			return c.writeFormatted(out, nodes)
		}
		if len(nodes) == 0 {
			c.Ui.Output("No nodes registered")
			return exitOK
		}
		var running map[string]int
		if listAllocs {
			if running, err = runningAllocsByNode(client); err != nil {
				c.Ui.Error(fmt.Sprintf("Error querying allocations: %v", err))
				return exitError
			}
		}
		c.Ui.Output(formatNodeTable(nodes, view{verbose: verbose, now: time.Now()}, running))
		return exitOK
	}

	prefix := flags.Arg(0)
	if self {
		if prefix = c.localNodeID(client); prefix == "" {
			return exitError
		}
	}
	if err := checkPrefix("Node", prefix); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	nodes, _, err := client.Nodes().List(&api.QueryOptions{Prefix: prefix})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying node info: %v", err))
		return exitError
	}
	stub, ok, matches := pickByPrefix(nodes, func(n *api.NodeListStub) string { return n.ID }, prefix)
	if !ok {
		if len(matches) == 0 {
			c.Ui.Error(fmt.Sprintf("No node(s) with prefix %q found", prefix))
		} else {
			c.Ui.Error(fmt.Sprintf("Prefix matched multiple nodes\n\n%s", formatNodeList(matches, view{verbose: verbose, now: time.Now()})))
		}
		return exitError
	}
	node, _, err := client.Nodes().Info(stub.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying node info: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, node)
	}
	v := view{verbose: verbose, now: time.Now()}
	if short {
		c.Ui.Output(formatKV(append(nodeBasics(node, v), nodeDriverStatus(node))))
		return exitOK
	}
	allocs, _, err := client.Nodes().Allocations(node.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying node allocations: %v", err))
		return exitError
	}
	c.Ui.Output(formatNode(node, allocs, v, nodeStats{
		host:   nodeHostStats(client, node),
		detail: stats,
		allocs: nodeAllocUsage(client, node, allocs),
	}))
	return exitOK
}

// formatNodeList renders the node table with upstream's columns. When a
// listed node is disconnected, a last column says for how long: whether it
// may still come back within its allocations' windows is what an operator
// looks at first.
func formatNodeList(nodes []*api.NodeListStub, v view) string {
	return formatNodeTable(nodes, v, nil)
}

// formatNodeTable is formatNodeList with, when running is not nil (-allocs),
// a Running Allocs column after Status counting each node's running
// allocations.
func formatNodeTable(nodes []*api.NodeListStub, v view, running map[string]int) string {
	header := "ID|Node Pool|DC|Name|Class|Drain|Eligibility|Status"
	if v.verbose {
		header = "ID|Node Pool|DC|Name|Class|Address|Version|Drain|Eligibility|Status"
	}
	if running != nil {
		header += "|Running Allocs"
	}
	since := slices.ContainsFunc(nodes, func(n *api.NodeListStub) bool { return n.Status == api.NodeStatusDisconnected })
	if since {
		header += "|Disconnected For"
	}
	lines := []string{header}
	for _, node := range nodes {
		var line string
		if v.verbose {
			line = fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%v|%s|%s",
				v.id(node.ID), node.NodePool, node.Datacenter, node.Name, node.NodeClass,
				node.Address, node.Version, node.Drain, node.SchedulingEligibility, node.Status)
		} else {
			line = fmt.Sprintf("%s|%s|%s|%s|%s|%v|%s|%s",
				v.id(node.ID), node.NodePool, node.Datacenter, node.Name, node.NodeClass,
				node.Drain, node.SchedulingEligibility, node.Status)
		}
		if running != nil {
			line += fmt.Sprintf("|%d", running[node.ID])
		}
		if since {
			line += "|" + disconnectedFor(node.Status, node.StatusUpdatedAt, v.now)
		}
		lines = append(lines, line)
	}
	return formatList(lines)
}

// runningAllocsByNode counts the running allocations of every namespace
// on each node, in one list call rather than one call a node.
func runningAllocsByNode(client *api.Client) (map[string]int, error) {
	allocs, _, err := client.Allocations().List(&api.QueryOptions{Namespace: "*"})
	if err != nil {
		return nil, err
	}
	running := map[string]int{}
	for _, a := range allocs {
		if a.ClientStatus == api.AllocClientStatusRunning {
			running[a.NodeID]++
		}
	}
	return running, nil
}

// disconnectedFor is how long a disconnected node has been so ("2m10s"),
// from its status change time (Unix seconds); "" for any other status.
func disconnectedFor(status string, updatedAt int64, now time.Time) string {
	if status != api.NodeStatusDisconnected || updatedAt == 0 {
		return ""
	}
	return prettyDuration(max(now.Sub(time.Unix(updatedAt, 0)), 0))
}

// nodeStatusLine is the node detail's status: for a disconnected node, with
// since when.
func nodeStatusLine(node *api.Node, v view) string {
	if node.Status != api.NodeStatusDisconnected || node.StatusUpdatedAt == 0 {
		return node.Status
	}
	t := time.Unix(node.StatusUpdatedAt, 0)
	if v.verbose {
		return fmt.Sprintf("%s (since %s)", node.Status, formatTime(t))
	}
	return fmt.Sprintf("%s (since %s ago)", node.Status, disconnectedFor(node.Status, node.StatusUpdatedAt, v.now))
}

// nodeBasics are the node detail's first lines, all that -short shows.
// The ID is whole, as upstream's.
func nodeBasics(node *api.Node, v view) []string {
	return []string{
		"ID|" + node.ID,
		"Name|" + node.Name,
		"Node Pool|" + node.NodePool,
		"Class|" + node.NodeClass,
		"DC|" + node.Datacenter,
		"Drain|" + formatDrain(node),
		"Eligibility|" + node.SchedulingEligibility,
		"Status|" + nodeStatusLine(node, v),
	}
}

// nodeDriverStatus is the "Driver Status" line: the healthy drivers, which
// the verbose detail shows as a table instead.
func nodeDriverStatus(node *api.Node) string {
	var healthy []string
	for _, name := range slices.Sorted(maps.Keys(node.Drivers)) {
		if d := node.Drivers[name]; d != nil && d.Detected && d.Healthy {
			healthy = append(healthy, name)
		}
	}
	return "Driver Status|" + strings.Join(healthy, ",")
}

func formatNode(node *api.Node, allocs []*api.Allocation, v view, stats nodeStats) string {
	var b strings.Builder
	basics := nodeBasics(node, v)
	if st := stats.host; st != nil {
		basics = append(basics, "Uptime|"+(time.Duration(st.Uptime)*time.Second).String())
	}
	if !v.verbose && len(node.HostVolumes) > 0 {
		basics = append(basics, "Host Volumes|"+nodeHostVolumeNames(node))
	}
	if !v.verbose {
		basics = append(basics, nodeDriverStatus(node))
	}
	b.WriteString(formatKV(basics))
	if v.verbose {
		b.WriteString(formatNodeHostVolumes(node))
	}

	if v.verbose && len(node.Drivers) > 0 {
		lines := []string{"Driver|Detected|Healthy|Message|Time"}
		for _, name := range slices.Sorted(maps.Keys(node.Drivers)) {
			d := node.Drivers[name]
			lines = append(lines, fmt.Sprintf("%s|%v|%v|%s|%s", name, d.Detected, d.Healthy, d.HealthDescription, formatTime(d.UpdateTime)))
		}
		b.WriteString("\n\nDrivers\n")
		b.WriteString(formatList(lines))
	}

	if v.verbose && node.LastDrain != nil {
		b.WriteString("\n\nLast Drain\n")
		b.WriteString(formatLastDrain(node.LastDrain))
	}

	if len(node.Events) > 0 {
		lines := []string{"Time|Subsystem|Message"}
		if v.verbose {
			lines[0] += "|Details"
		}
		for i := len(node.Events) - 1; i >= 0; i-- {
			e := node.Events[i]
			line := fmt.Sprintf("%s|%s|%s", formatTime(e.Timestamp), e.Subsystem, e.Message)
			if v.verbose {
				line += "|" + formatKVMap(e.Details)
			}
			lines = append(lines, line)
		}
		b.WriteString("\n\nNode Events\n")
		b.WriteString(formatList(lines))
	}

	b.WriteString("\n\nAllocated Resources\n")
	b.WriteString(formatNodeResources(node, allocs))
	if stats.allocs != nil {
		b.WriteString("\n\nAllocation Resource Utilization\n")
		b.WriteString(formatAllocUtilization(node, stats.allocs))
	}
	if st := stats.host; st != nil {
		b.WriteString("\n\nHost Resource Utilization\n")
		b.WriteString(formatHostUtilization(node, st))
		if stats.detail {
			b.WriteString("\n\n" + formatHostStatsDetail(st))
		}
	}

	rows := make([]allocRow, 0, len(allocs))
	for _, a := range allocs {
		rows = append(rows, rowFromAlloc(a))
	}
	b.WriteString("\n\nAllocations\n")
	b.WriteString(formatAllocRows(rows, v))

	// Last, as upstream: the long lists an operator greps.
	if v.verbose {
		for _, sec := range []struct {
			title string
			kv    map[string]string
		}{{"Attributes", node.Attributes}, {"Meta", node.Meta}} {
			if len(sec.kv) == 0 {
				continue
			}
			b.WriteString("\n\n" + sec.title + "\n")
			b.WriteString(formatMapKV(sec.kv))
		}
	}
	return b.String()
}

// formatNodeResources renders what the node's live allocations hold
// against what the node offers for scheduling (its capacity minus what is
// reserved). Allocations on the node whose status is unknown still hold
// their resources: they may be running.
func formatNodeResources(node *api.Node, allocs []*api.Allocation) string {
	var cpu, mem, disk int64
	for _, a := range allocs {
		if a.ClientTerminalStatus() || a.ServerTerminalStatus() || a.AllocatedResources == nil {
			continue
		}
		for _, t := range a.AllocatedResources.Tasks {
			cpu += t.Cpu.CpuShares
			mem += t.Memory.MemoryMB
		}
		disk += a.AllocatedResources.Shared.DiskMB
	}
	totalCPU, totalMem, totalDisk := nodeAllocatable(node)
	return formatList([]string{
		"CPU|Memory|Disk",
		fmt.Sprintf("%d/%d MHz|%s/%s|%s/%s", cpu, totalCPU, formatMB(mem), formatMB(totalMem), formatMB(disk), formatMB(totalDisk)),
	})
}

// nodeAllocatable is what the node offers allocations: its capacity minus
// what is reserved; CPU in MHz, memory and disk in MiB.
func nodeAllocatable(node *api.Node) (cpu, memMB, diskMB int64) {
	if r := node.NodeResources; r != nil {
		cpu, memMB, diskMB = r.Cpu.CpuShares, r.Memory.MemoryMB, r.Disk.DiskMB
	}
	if r := node.ReservedResources; r != nil {
		cpu -= int64(r.Cpu.CpuShares)
		memMB -= int64(r.Memory.MemoryMB)
		diskMB -= int64(r.Disk.DiskMB)
	}
	return cpu, memMB, diskMB
}

// formatDrain is the node detail's Drain line: false, or true with the
// drain's deadline and options.
func formatDrain(node *api.Node) string {
	d := node.DrainStrategy
	if d == nil {
		return strconv.FormatBool(node.Drain)
	}
	parts := []string{"true"}
	switch {
	case d.Deadline < 0:
		parts = append(parts, "force drain")
	case d.ForceDeadline.IsZero():
		parts = append(parts, "no deadline")
	default:
		parts = append(parts, formatTime(d.ForceDeadline)+" deadline")
	}
	if d.IgnoreSystemJobs {
		parts = append(parts, "ignoring system jobs")
	}
	return strings.Join(parts, "; ")
}

// formatLastDrain renders a node's last drain: its status, when it
// started and last changed, and its metadata.
func formatLastDrain(m *api.DrainMetadata) string {
	return formatKV([]string{
		"Status|" + m.Status,
		"Started|" + formatTime(m.StartedAt),
		"Updated|" + formatTime(m.UpdatedAt),
		"Meta|" + formatKVMap(m.Meta),
	})
}

// formatKVMap renders a string map as k=v pairs sorted by key, or
// "<none>".
func formatKVMap(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ", ")
}
