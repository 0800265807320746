package command

import (
	"fmt"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// EvalCommand is `nomad eval`, the parent of the evaluation subcommands.
type EvalCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *EvalCommand) Synopsis() string { return "Interact with evaluations" }

// Help implements cli.Command.
func (c *EvalCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad eval <subcommand> [options] [args]

  Inspect evaluations: the scheduler's runs for a job, created when a job
  is registered or stopped, when a node changes status, when an
  allocation fails, and when a disconnected node's window expires.

      $ nomad eval status <eval id>

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *EvalCommand) Run(args []string) int { return c.runParent("eval", args) }

// EvalStatusCommand is `nomad eval status`.
type EvalStatusCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *EvalStatusCommand) Synopsis() string {
	return "Display evaluation status and placement failure reasons"
}

// Help implements cli.Command.
func (c *EvalStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad eval status [options] <evaluation>

  Show an evaluation: what triggered it, its status, the evaluations it
  follows or created, and, when it could not place every allocation, why
  not, group by group. <evaluation> is an ID or a unique prefix of at least
  two characters.

` + generalOptions() + `

Status Options:

  -monitor
    Follow the evaluation until it finishes, as 'nomad job run' does,
    reporting the allocations it places; the exit code is job run's.

  -verbose
    Show full IDs and absolute times.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *EvalStatusCommand) Run(args []string) int {
	var verbose, monitor bool
	var out outputFlags
	flags := c.FlagSet("eval status")
	out.register(flags)
	flags.BoolVar(&verbose, "verbose", false, "")
	flags.BoolVar(&monitor, "monitor", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if monitor && out.set() {
		c.Ui.Error("The -monitor flag cannot be used with -json or -t")
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <evaluation>", "eval status")
	}
	prefix := flags.Arg(0)
	if err := checkPrefix("Eval", prefix); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	evals, _, err := client.Evaluations().List(&api.QueryOptions{Prefix: prefix})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying evaluations: %v", err))
		return exitError
	}
	eval, ok, matches := pickByPrefix(evals, func(e *api.Evaluation) string { return e.ID }, prefix)
	if !ok {
		if len(matches) == 0 {
			c.Ui.Error(fmt.Sprintf("No evaluation(s) with prefix or id %q found", prefix))
		} else {
			c.Ui.Error(fmt.Sprintf("Prefix matched multiple evaluations\n\n%s", formatEvalList(matches, view{verbose: verbose})))
		}
		return exitError
	}
	if monitor {
		return newEvalMonitor(c.Ui, client, view{verbose: verbose}).monitor(eval.ID)
	}
	// The list answer is complete, but read the evaluation itself so the
	// output reflects its newest state.
	if full, _, err := client.Evaluations().Info(eval.ID, nil); err == nil {
		eval = full
	}
	if out.set() {
		return c.writeFormatted(out, eval)
	}
	c.Ui.Output(formatEval(eval, view{verbose: verbose, now: time.Now()}))
	return exitOK
}

func formatEvalList(evals []*api.Evaluation, v view) string {
	lines := []string{"ID|Priority|Triggered By|Job ID|Status|Placement Failures"}
	for _, e := range evals {
		lines = append(lines, fmt.Sprintf("%s|%d|%s|%s|%s|%v",
			v.id(e.ID), e.Priority, e.TriggeredBy, e.JobID, e.Status, len(e.FailedTGAllocs) > 0))
	}
	return formatList(lines)
}

func formatEval(e *api.Evaluation, v view) string {
	desc := e.StatusDescription
	if desc == "" {
		desc = e.Status
	}
	failures := "false"
	switch {
	case len(e.FailedTGAllocs) > 0:
		failures = "true"
	case e.Status == api.EvalStatusPending:
		failures = "N/A - In Progress"
	}
	lines := []string{
		"ID|" + v.id(e.ID),
		"Create Time|" + v.age(e.CreateTime),
		"Modify Time|" + v.age(e.ModifyTime),
		"Status|" + e.Status,
		"Status Description|" + desc,
		"Type|" + e.Type,
		"TriggeredBy|" + e.TriggeredBy,
	}
	if e.NodeID != "" {
		lines = append(lines, "Node ID|"+v.id(e.NodeID))
	}
	lines = append(lines,
		"Job ID|"+e.JobID,
		"Namespace|"+e.Namespace,
		fmt.Sprintf("Priority|%d", e.Priority),
		"Placement Failures|"+failures,
	)
	if e.Wait > 0 {
		lines = append(lines, "Wait|"+e.Wait.String())
	}
	if !e.WaitUntil.IsZero() {
		lines = append(lines, "Wait Until|"+formatTime(e.WaitUntil))
	}
	for _, l := range []struct{ key, id string }{
		{"Previous Eval", e.PreviousEval},
		{"Next Eval", e.NextEval},
		{"Blocked Eval", e.BlockedEval},
	} {
		if l.id != "" {
			lines = append(lines, l.key+"|"+v.id(l.id))
		}
	}

	var b strings.Builder
	b.WriteString(formatKV(lines))
	if len(e.FailedTGAllocs) > 0 {
		b.WriteString("\n\n==> Failed Placements\n")
		b.WriteString(formatPlacementFailures(e.FailedTGAllocs, "", "  "))
		if e.BlockedEval != "" {
			fmt.Fprintf(&b, "\n\nEvaluation %q waiting for additional capacity to place remainder", v.id(e.BlockedEval))
		}
	}
	return b.String()
}
