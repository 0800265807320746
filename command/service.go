package command

import (
	"fmt"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// ServiceCommand is `nomad service`, the parent of the catalog commands.
type ServiceCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ServiceCommand) Synopsis() string { return "Interact with registered services" }

// Help implements cli.Command.
func (c *ServiceCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad service <subcommand> [options]

  Read and change the catalog of services (provider "nomad") that the
  clients register for their allocations.

      $ nomad service list
      $ nomad service info <service_name>
      $ nomad service delete <service_name> <service_id>

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *ServiceCommand) Run(args []string) int { return c.runParent("service", args) }

// ServiceListCommand is `nomad service list`.
type ServiceListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ServiceListCommand) Synopsis() string { return "Display all registered Nomad services" }

// Help implements cli.Command.
func (c *ServiceListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad service list [options]

  List the services of the namespace, each with the tags of its
  instances; with -namespace=* those of every namespace the token may read.

  When ACLs are enabled, this needs read-job in the namespace; a list
  across namespaces leaves out those the token may not read.

` + generalOptions() + `

List Options:
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *ServiceListCommand) Run(args []string) int {
	var out outputFlags
	client, code, ok := c.setupRead("service list", args, 0, c, &out)
	if !ok {
		return code
	}
	list, _, err := client.Services().List(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing service registrations: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, list)
	}
	if len(list) == 0 {
		c.Ui.Output("No service registrations found")
		return exitOK
	}
	c.Ui.Output(formatServiceList(list, c.allNamespaces()))
	return exitOK
}

// formatServiceList is upstream's table: name and tags, with the
// namespace across namespaces.
func formatServiceList(list []*api.ServiceRegistrationListStub, allNamespaces bool) string {
	head := "Service Name|Tags"
	if allNamespaces {
		head = "Service Name|Namespace|Tags"
	}
	lines := []string{head}
	for _, ns := range list {
		for _, s := range ns.Services {
			tags := formatServiceTags(s.Tags)
			if allNamespaces {
				lines = append(lines, fmt.Sprintf("%s|%s|%s", s.ServiceName, ns.Namespace, tags))
			} else {
				lines = append(lines, fmt.Sprintf("%s|%s", s.ServiceName, tags))
			}
		}
	}
	return formatList(lines)
}

// formatServiceTags renders tags as upstream's CLI does: [a,b].
func formatServiceTags(tags []string) string { return "[" + strings.Join(tags, ",") + "]" }

// ServiceInfoCommand is `nomad service info`.
type ServiceInfoCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ServiceInfoCommand) Synopsis() string {
	return "Display an individual Nomad service registration"
}

// Help implements cli.Command.
func (c *ServiceInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad service info [options] <service_name>

  Show the instances registered under a service name. Instances whose
  allocation is unknown (its node cut off) are left out unless
  -include-unknown is given; they show Status = unknown.

  When ACLs are enabled, this needs read-job in the service's namespace.

` + generalOptions() + `

Info Options:

  -verbose
    Show every field of each instance.

  -per-page=<n>
    How many instances to show per page.

  -page-token=<token>
    Where to start the page: the token the previous page printed.

  -filter=<expression>
    Only show the instances the expression selects, e.g.
    'AllocID == "<id>"'.

  -include-unknown
    Also show the instances whose allocation is unknown.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *ServiceInfoCommand) Run(args []string) int {
	var verbose, includeUnknown bool
	var perPage int
	var out outputFlags
	q := &api.QueryOptions{Params: map[string]string{}}
	flags := c.FlagSet("service info")
	flags.BoolVar(&verbose, "verbose", false, "")
	flags.BoolVar(&includeUnknown, "include-unknown", false, "")
	flags.IntVar(&perPage, "per-page", 0, "")
	flags.StringVar(&q.NextToken, "page-token", "", "")
	flags.StringVar(&q.Filter, "filter", "", "")
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <service_name>", "service info")
	}
	q.PerPage = int32(perPage)
	if includeUnknown {
		q.Params["include_unknown"] = "true"
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	regs, meta, err := client.Services().Get(flags.Arg(0), q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing service registrations: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, regs)
	}
	if len(regs) == 0 {
		c.Ui.Output("No service registrations found")
		return exitOK
	}
	if verbose {
		c.Ui.Output(formatServiceVerbose(regs))
	} else {
		c.Ui.Output(formatServiceInstances(regs, includeUnknown))
	}
	if meta.NextToken != "" {
		c.Ui.Output(fmt.Sprintf("\nResults have been paginated. To get the next page run:\n\nnomad service info -page-token %s %s", meta.NextToken, flags.Arg(0)))
	}
	return exitOK
}

// formatServiceInstances is upstream's table of instances, short IDs;
// with -include-unknown a Status column says which are unknown.
func formatServiceInstances(regs []*api.ServiceRegistration, withStatus bool) string {
	head := "Job ID|Address|Tags|Node ID|Alloc ID"
	if withStatus {
		head += "|Status"
	}
	lines := []string{head}
	short := view{}
	for _, r := range regs {
		line := fmt.Sprintf("%s|%s|%s|%s|%s", r.JobID, hostPort(r), formatServiceTags(r.Tags), short.id(r.NodeID), short.id(r.AllocID))
		if withStatus {
			line += "|" + r.Status
		}
		lines = append(lines, line)
	}
	return formatList(lines)
}

// formatServiceVerbose is one key = value block per instance.
func formatServiceVerbose(regs []*api.ServiceRegistration) string {
	blocks := make([]string, 0, len(regs))
	for _, r := range regs {
		blocks = append(blocks, formatKV([]string{
			"ID|" + r.ID,
			"Service Name|" + r.ServiceName,
			"Namespace|" + r.Namespace,
			"Job ID|" + r.JobID,
			"Alloc ID|" + r.AllocID,
			"Node ID|" + r.NodeID,
			"Datacenter|" + r.Datacenter,
			"Address|" + hostPort(r),
			"Tags|" + formatServiceTags(r.Tags),
			"Status|" + r.Status,
		}))
	}
	return strings.Join(blocks, "\n\n")
}

func hostPort(r *api.ServiceRegistration) string { return fmt.Sprintf("%s:%d", r.Address, r.Port) }

// ServiceDeleteCommand is `nomad service delete`.
type ServiceDeleteCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ServiceDeleteCommand) Synopsis() string { return "Deregister a registered service" }

// Help implements cli.Command.
func (c *ServiceDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad service delete [options] <service_name> <service_id>

  Remove one instance from the catalog, by its service name and ID (see
  nomad service info -verbose). The client that registered it does not
  register it again unless the instance changes (a new address, port or
  tags).

  When ACLs are enabled, this needs submit-job in the instance's namespace.

` + generalOptions())
}

// Run implements cli.Command.
func (c *ServiceDeleteCommand) Run(args []string) int {
	flags := c.FlagSet("service delete")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 2 {
		return c.argsError("This command takes two arguments: <service_name> and <service_id>", "service delete")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	if _, err := client.Services().Delete(flags.Arg(0), flags.Arg(1), nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting service registration: %v", err))
		return exitError
	}
	c.Ui.Output("Successfully deleted service registration")
	return exitOK
}
