package command

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// DeploymentCommand is `nomad deployment`, the parent of the deployment
// subcommands.
type DeploymentCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *DeploymentCommand) Synopsis() string { return "Interact with deployments" }

// Help implements cli.Command.
func (c *DeploymentCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad deployment <subcommand> [options] [args]

  Inspect and steer deployments: the rollouts of new versions of service
  jobs whose groups have an update block.

      $ nomad deployment list
      $ nomad deployment status <deployment id>
      $ nomad deployment promote <deployment id>
      $ nomad deployment fail|pause|resume <deployment id>

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *DeploymentCommand) Run(args []string) int { return c.runParent("deployment", args) }

// DeploymentListCommand is `nomad deployment list`.
type DeploymentListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *DeploymentListCommand) Synopsis() string { return "List all deployments" }

// Help implements cli.Command.
func (c *DeploymentListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad deployment list [options]

  List deployments, newest first.

` + generalOptions() + `

List Options:

  -verbose
    Show full IDs.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *DeploymentListCommand) Run(args []string) int {
	var verbose bool
	var out outputFlags
	flags := c.FlagSet("deployment list")
	flags.BoolVar(&verbose, "verbose", false, "")
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 0 {
		return c.argsError("This command takes no arguments", "deployment list")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	deps, _, err := client.Deployments().List(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving deployments: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, deps)
	}
	if len(deps) == 0 {
		c.Ui.Output("No deployments found")
		return exitOK
	}
	c.Ui.Output(formatDeploymentList(deps, view{verbose: verbose}))
	return exitOK
}

func formatDeploymentList(deps []*api.Deployment, v view) string {
	lines := []string{"ID|Job ID|Job Version|Status|Description"}
	for _, d := range deps {
		lines = append(lines, fmt.Sprintf("%s|%s|%d|%s|%s", v.id(d.ID), d.JobID, d.JobVersion, d.Status, d.StatusDescription))
	}
	return formatList(lines)
}

// DeploymentStatusCommand is `nomad deployment status`.
type DeploymentStatusCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *DeploymentStatusCommand) Synopsis() string { return "Display the status of a deployment" }

// Help implements cli.Command.
func (c *DeploymentStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad deployment status [options] <deployment id>

  Show a deployment: its status and, per group, how many allocations are
  desired, placed, healthy and unhealthy, the canaries and whether they
  were promoted, and the progress deadline. <deployment id> is an ID or a
  unique prefix of at least two characters.

` + generalOptions() + `

Status Options:

  -verbose
    Show full IDs.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *DeploymentStatusCommand) Run(args []string) int {
	var verbose bool
	var out outputFlags
	flags := c.FlagSet("deployment status")
	flags.BoolVar(&verbose, "verbose", false, "")
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <deployment id>", "deployment status")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	d, ok := c.resolveDeployment(client, flags.Arg(0), view{verbose: verbose})
	if !ok {
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, d)
	}
	c.Ui.Output(formatDeployment(d, view{verbose: verbose}))
	return exitOK
}

// resolveDeployment finds the one deployment an ID or prefix names,
// printing why not when it cannot.
func (m *Meta) resolveDeployment(client *api.Client, prefix string, v view) (*api.Deployment, bool) {
	if err := checkPrefix("Deployment", prefix); err != nil {
		m.Ui.Error(err.Error())
		return nil, false
	}
	deps, _, err := client.Deployments().PrefixList(prefix)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error retrieving deployment: %v", err))
		return nil, false
	}
	d, ok, matches := pickByPrefix(deps, func(d *api.Deployment) string { return d.ID }, prefix)
	if !ok {
		if len(matches) == 0 {
			m.Ui.Error(fmt.Sprintf("No deployment(s) with prefix or id %q found", prefix))
		} else {
			m.Ui.Error(fmt.Sprintf("Prefix matched multiple deployments\n\n%s", formatDeploymentList(matches, v)))
		}
		return nil, false
	}
	return d, true
}

// formatDeployment is the deployment's key/value block and its group table.
func formatDeployment(d *api.Deployment, v view) string {
	kv := formatKV([]string{
		"ID|" + v.id(d.ID),
		"Job ID|" + d.JobID,
		fmt.Sprintf("Job Version|%d", d.JobVersion),
		"Status|" + d.Status,
		"Description|" + d.StatusDescription,
	})
	if len(d.TaskGroups) == 0 {
		return kv
	}
	return kv + "\n\nDeployed\n" + formatDeploymentGroups(d)
}

// formatDeploymentGroups is upstream's per-group table: the Auto Revert,
// Promoted and Canaries columns appear only when some group uses them.
func formatDeploymentGroups(d *api.Deployment) string {
	names := make([]string, 0, len(d.TaskGroups))
	revert, canaries := false, false
	for name, s := range d.TaskGroups {
		names = append(names, name)
		revert = revert || s.AutoRevert
		canaries = canaries || s.DesiredCanaries > 0
	}
	sort.Strings(names)
	head := []string{"Task Group"}
	if revert {
		head = append(head, "Auto Revert")
	}
	if canaries {
		head = append(head, "Promoted")
	}
	head = append(head, "Desired")
	if canaries {
		head = append(head, "Canaries")
	}
	head = append(head, "Placed", "Healthy", "Unhealthy", "Progress Deadline")
	lines := []string{strings.Join(head, "|")}
	for _, name := range names {
		s := d.TaskGroups[name]
		row := []string{name}
		if revert {
			row = append(row, fmt.Sprint(s.AutoRevert))
		}
		if canaries {
			promoted := "N/A"
			if s.DesiredCanaries > 0 {
				promoted = fmt.Sprint(s.Promoted)
			}
			row = append(row, promoted)
		}
		row = append(row, fmt.Sprint(s.DesiredTotal))
		if canaries {
			row = append(row, fmt.Sprint(s.DesiredCanaries))
		}
		row = append(row, fmt.Sprint(s.PlacedAllocs), fmt.Sprint(s.HealthyAllocs), fmt.Sprint(s.UnhealthyAllocs), progressDeadline(s))
		lines = append(lines, strings.Join(row, "|"))
	}
	return formatList(lines)
}

func progressDeadline(s *api.DeploymentState) string {
	if s.RequireProgressBy.IsZero() {
		return "N/A"
	}
	return s.RequireProgressBy.Format(time.RFC3339)
}

// formatLatestDeployment is the block `job status` shows for the job's
// newest deployment, as upstream's.
func formatLatestDeployment(d *api.Deployment, v view) string {
	kv := formatKV([]string{
		"ID|" + v.id(d.ID),
		"Status|" + d.Status,
		"Description|" + d.StatusDescription,
	})
	if len(d.TaskGroups) == 0 {
		return kv
	}
	return kv + "\n\nDeployed\n" + formatDeploymentGroups(d)
}

// deploymentLines are upstream's `alloc status` lines for an allocation
// placed by a deployment: its ID, its health (unset until the client
// judged it; kept while the allocation is unknown) and, for a canary, that.
func deploymentLines(a *api.Allocation, v view) []string {
	if a.DeploymentID == "" {
		return nil
	}
	health := "unset"
	if s := a.DeploymentStatus; s != nil && s.Healthy != nil {
		health = map[bool]string{true: "healthy", false: "unhealthy"}[*s.Healthy]
	}
	lines := []string{"Deployment ID|" + v.id(a.DeploymentID), "Deployment Health|" + health}
	if a.DeploymentStatus != nil && a.DeploymentStatus.Canary {
		lines = append(lines, "Canary|true")
	}
	return lines
}
