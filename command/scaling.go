package command

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// ScalingCommand is `nomad scaling`, the parent of the scaling commands.
type ScalingCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ScalingCommand) Synopsis() string { return "Interact with the Nomad scaling endpoint" }

// Help implements cli.Command.
func (c *ScalingCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad scaling <subcommand> [options]

  Read the scaling policies of job groups (their scaling blocks), which an
  autoscaler such as the Nomad Autoscaler discovers and acts on.

    $ nomad scaling policy list
    $ nomad scaling policy info <policy_id>
`)
}

// Run implements cli.Command.
func (c *ScalingCommand) Run(args []string) int { return c.runParent("scaling", args) }

// ScalingPolicyCommand is `nomad scaling policy`.
type ScalingPolicyCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ScalingPolicyCommand) Synopsis() string { return "Interact with Nomad scaling policies" }

// Help implements cli.Command.
func (c *ScalingPolicyCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad scaling policy <subcommand> [options]

  List and show scaling policies. A policy comes from a group's scaling
  block and changes with its job.

    $ nomad scaling policy list -job web
    $ nomad scaling policy info <policy_id>
`)
}

// Run implements cli.Command.
func (c *ScalingPolicyCommand) Run(args []string) int { return c.runParent("scaling policy", args) }

// ScalingPolicyListCommand is `nomad scaling policy list`.
type ScalingPolicyListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ScalingPolicyListCommand) Synopsis() string { return "Display all Nomad scaling policies" }

// Help implements cli.Command.
func (c *ScalingPolicyListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad scaling policy list [options]

  List the scaling policies. With -namespace=* the policies of every
  namespace the token may read are listed.

  If ACLs are enabled, this command requires list-scaling-policies or
  read-job in the namespaces listed.

` + generalOptions() + `

Policy List Options:

  -job
    Only the policies of this job (its ID).

  -type
    Only the policies of this type ("horizontal").

  -verbose
    Show full IDs.
` + outputFlagsHelp)
}

// Run implements cli.Command.
func (c *ScalingPolicyListCommand) Run(args []string) int {
	var out outputFlags
	var job, typ string
	var verbose bool
	flags := c.FlagSet("scaling policy list")
	out.register(flags)
	flags.StringVar(&job, "job", "", "")
	flags.StringVar(&typ, "type", "", "")
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("scaling policy list", flags.NArg(), 0)
	if !ok {
		return code
	}
	q := &api.QueryOptions{Params: map[string]string{}}
	if job != "" {
		q.Params["job"] = job
	}
	if typ != "" {
		q.Params["type"] = typ
	}
	policies, _, err := client.Scaling().ListPolicies(q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing scaling policies: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, policies)
	}
	if len(policies) == 0 {
		c.Ui.Output("No policies found")
		return exitOK
	}
	v := view{verbose: verbose}
	lines := []string{"ID|Enabled|Type|Target"}
	for _, p := range policies {
		lines = append(lines, fmt.Sprintf("%s|%t|%s|%s", v.id(p.ID), p.Enabled, p.Type, formatScalingTarget(p.Target)))
	}
	c.Ui.Output(formatList(lines))
	return exitOK
}

// formatScalingTarget renders a policy's target as upstream's CLI does:
// namespace, job, group, then any other key.
func formatScalingTarget(t map[string]string) string {
	var parts []string
	for _, k := range []string{api.ScalingTargetNamespace, api.ScalingTargetJob, api.ScalingTargetGroup} {
		if v, ok := t[k]; ok {
			parts = append(parts, k+":"+v)
		}
	}
	for k, v := range t {
		switch k {
		case api.ScalingTargetNamespace, api.ScalingTargetJob, api.ScalingTargetGroup:
		default:
			parts = append(parts, k+":"+v)
		}
	}
	return strings.Join(parts, ",")
}

// ScalingPolicyInfoCommand is `nomad scaling policy info`.
type ScalingPolicyInfoCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ScalingPolicyInfoCommand) Synopsis() string {
	return "Display an individual Nomad scaling policy"
}

// Help implements cli.Command.
func (c *ScalingPolicyInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad scaling policy info [options] <policy_id>

  Show one scaling policy: its target, bounds and the policy body the
  autoscaler reads. <policy_id> may be a unique prefix.

  If ACLs are enabled, this command requires read-scaling-policy or
  read-job in the policy's namespace.

` + generalOptions() + `

Policy Info Options:

  -verbose
    Show full IDs.
` + outputFlagsHelp)
}

// Run implements cli.Command.
func (c *ScalingPolicyInfoCommand) Run(args []string) int {
	var out outputFlags
	var verbose bool
	flags := c.FlagSet("scaling policy info")
	out.register(flags)
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("scaling policy info", flags.NArg(), 1)
	if !ok {
		return code
	}
	id, ok := c.resolveScalingPolicy(client, flags.Arg(0), verbose)
	if !ok {
		return exitError
	}
	p, _, err := client.Scaling().GetPolicy(id, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving scaling policy: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, p)
	}
	v := view{verbose: verbose}
	lines := []string{
		"ID|" + v.id(p.ID),
		"Enabled|" + strconv.FormatBool(p.Enabled != nil && *p.Enabled),
		"Target|" + formatScalingTarget(p.Target),
		"Min|" + int64String(p.Min),
		"Max|" + int64String(p.Max),
	}
	c.Ui.Output(formatKV(lines))
	body, err := json.MarshalIndent(p.Policy, "", "    ")
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error formatting the policy: %v", err))
		return exitError
	}
	c.Ui.Output("\nPolicy:\n" + string(body))
	return exitOK
}

// resolveScalingPolicy finds the one policy whose ID is or starts with
// prefix, listing the candidates when there are several.
func (c *ScalingPolicyInfoCommand) resolveScalingPolicy(client *api.Client, prefix string, verbose bool) (string, bool) {
	policies, _, err := client.Scaling().ListPolicies(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing scaling policies: %v", err))
		return "", false
	}
	var matches []*api.ScalingPolicyListStub
	for _, p := range policies {
		if p.ID == prefix {
			return p.ID, true
		}
		if strings.HasPrefix(p.ID, prefix) {
			matches = append(matches, p)
		}
	}
	switch len(matches) {
	case 0:
		c.Ui.Error(fmt.Sprintf("No scaling policies with prefix or id %q found", prefix))
		return "", false
	case 1:
		return matches[0].ID, true
	}
	v := view{verbose: verbose}
	lines := []string{"ID|Enabled|Type|Target"}
	for _, p := range matches {
		lines = append(lines, fmt.Sprintf("%s|%t|%s|%s", v.id(p.ID), p.Enabled, p.Type, formatScalingTarget(p.Target)))
	}
	c.Ui.Error(fmt.Sprintf("Prefix matched multiple scaling policies\n\n%s", formatList(lines)))
	return "", false
}

func int64String(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

// JobScalingEventsCommand is `nomad job scaling-events`.
type JobScalingEventsCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobScalingEventsCommand) Synopsis() string {
	return "Display the most recent scaling events for a job"
}

// Help implements cli.Command.
func (c *JobScalingEventsCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job scaling-events [options] <job>

  List the recent scaling events of each group of a job, newest first: the
  count changes made through the scale endpoint and the events an
  autoscaler reported (errors, refusals), with the evaluation each change
  created.

` + generalOptions() + `

Scaling-Events Options:

  -verbose
    Show the error flag, message and evaluation ID of each event.
`)
}

// Run implements cli.Command.
func (c *JobScalingEventsCommand) Run(args []string) int {
	var verbose bool
	flags := c.FlagSet("job scaling-events")
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, jobID, code := c.jobArg(flags.Args(), "job scaling-events")
	if jobID == "" {
		return code
	}
	st, _, err := client.Jobs().ScaleStatus(jobID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving job scaling status: %v", err))
		return exitError
	}
	lines := []string{"Task Group|Count|PrevCount|Date"}
	if verbose {
		lines[0] = "Task Group|Count|PrevCount|Error|Message|Eval ID|Date"
	}
	for _, group := range slices.Sorted(maps.Keys(st.TaskGroups)) {
		for _, ev := range st.TaskGroups[group].Events {
			count := ""
			if ev.Count != nil {
				count = strconv.FormatInt(*ev.Count, 10)
			}
			date := formatUnixNanoTime(int64(ev.Time))
			if !verbose {
				lines = append(lines, fmt.Sprintf("%s|%s|%d|%s", group, count, ev.PreviousCount, date))
				continue
			}
			eval := ""
			if ev.EvalID != nil {
				eval = *ev.EvalID
			}
			lines = append(lines, fmt.Sprintf("%s|%s|%d|%t|%s|%s|%s", group, count, ev.PreviousCount, ev.Error, ev.Message, eval, date))
		}
	}
	if len(lines) == 1 {
		c.Ui.Output("No events found")
		return exitOK
	}
	c.Ui.Output(formatList(lines))
	return exitOK
}
