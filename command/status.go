package command

import (
	"fmt"
	"strings"

	"github.com/hashicorp/cli"

	"github.com/nomad-edge/nomad/api"
)

// StatusCommand is `nomad status`: with no argument the job list, with an
// ID prefix the status of whatever it names.
type StatusCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *StatusCommand) Synopsis() string { return "Display the status output for a resource" }

// Help implements cli.Command.
func (c *StatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad status [options] [prefix]

  Without an argument, list the jobs (as "nomad job status"). With an ID
  or a prefix of one, find the job, allocation, node, evaluation,
  deployment or namespace it names and show its status as that object's
  own status command does. A prefix that names several objects lists them.

` + generalOptions() + `

Status Options:

  -verbose
    Show full IDs and absolute times.
` + outputFlagsHelp + `
`)
}

// statusMatch is one object a prefix names, and how to show it.
type statusMatch struct {
	context string // "jobs", "allocs", ...
	id      string
	command cli.Command
}

// Run implements cli.Command.
func (c *StatusCommand) Run(args []string) int {
	var verbose bool
	var out outputFlags
	flags := c.FlagSet("status")
	flags.BoolVar(&verbose, "verbose", false, "")
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() > 1 {
		return c.argsError("This command takes either no arguments or one: <prefix>", "status")
	}
	// The object's own command reads the same general flags again.
	if flags.NArg() == 0 {
		return (&JobStatusCommand{Meta: c.Meta}).Run(args)
	}
	prefix := flags.Arg(0)
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	matches, err := c.search(client, prefix)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error searching for %q: %v", prefix, err))
		return exitError
	}
	switch {
	case len(matches) == 0:
		c.Ui.Error(fmt.Sprintf("No matches found for %q", prefix))
		return exitError
	case len(matches) > 1 && !exactOne(matches, prefix):
		c.Ui.Error(formatStatusMatches(prefix, matches))
		return exitError
	}
	m := pickExact(matches, prefix)
	return m.command.Run(append(forwardedFlags(args[:len(args)-1], m.context), m.id))
}

// forwardedFlags are the flags status hands the object's own command:
// all of them, but -verbose for a namespace, whose status has none.
func forwardedFlags(flags []string, context string) []string {
	out := make([]string, 0, len(flags))
	for _, f := range flags {
		if context == "namespaces" && strings.HasPrefix(strings.TrimLeft(f, "-"), "verbose") {
			continue
		}
		out = append(out, f)
	}
	return out
}

// search lists what prefix names, in upstream's order of contexts.
func (c *StatusCommand) search(client *api.Client, prefix string) ([]statusMatch, error) {
	var out []statusMatch
	add := func(ctx, id string, cmd cli.Command) {
		if strings.HasPrefix(id, prefix) {
			out = append(out, statusMatch{context: ctx, id: id, command: cmd})
		}
	}
	q := &api.QueryOptions{Prefix: prefix}
	jobs, _, err := client.Jobs().List(q)
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		add("jobs", j.ID, &JobStatusCommand{Meta: c.Meta})
	}
	// One character matches too many UUIDs to be an answer.
	if len(prefix) >= minPrefixLength {
		allocs, _, err := client.Allocations().List(q)
		if err != nil {
			return nil, err
		}
		for _, a := range allocs {
			add("allocs", a.ID, &AllocStatusCommand{Meta: c.Meta})
		}
		nodes, _, err := client.Nodes().List(q)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			add("nodes", n.ID, &NodeStatusCommand{Meta: c.Meta})
		}
		evals, _, err := client.Evaluations().List(q)
		if err != nil {
			return nil, err
		}
		for _, e := range evals {
			add("evals", e.ID, &EvalStatusCommand{Meta: c.Meta})
		}
		deps, _, err := client.Deployments().List(q)
		if err != nil {
			return nil, err
		}
		for _, d := range deps {
			add("deployment", d.ID, &DeploymentStatusCommand{Meta: c.Meta})
		}
	}
	nss, _, err := client.Namespaces().List(nil)
	if err != nil {
		return nil, err
	}
	for _, ns := range nss {
		add("namespaces", ns.Name, &NamespaceStatusCommand{Meta: c.Meta})
	}
	return out, nil
}

// exactOne reports whether exactly one match is the prefix itself, which
// wins over longer IDs it is a prefix of (a job "web" and a job "web-2").
func exactOne(ms []statusMatch, prefix string) bool {
	n := 0
	for _, m := range ms {
		if m.id == prefix {
			n++
		}
	}
	return n == 1
}

func pickExact(ms []statusMatch, prefix string) statusMatch {
	for _, m := range ms {
		if m.id == prefix {
			return m
		}
	}
	return ms[0]
}

func formatStatusMatches(prefix string, ms []statusMatch) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Prefix %q matched multiple resources:\n", prefix)
	last := ""
	for _, m := range ms {
		if m.context != last {
			fmt.Fprintf(&b, "\n%s%s:\n", strings.ToUpper(m.context[:1]), m.context[1:])
			last = m.context
		}
		fmt.Fprintf(&b, "  %s\n", m.id)
	}
	return strings.TrimRight(b.String(), "\n")
}
