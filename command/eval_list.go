package command

import (
	"fmt"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// EvalListCommand is `nomad eval list`.
type EvalListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *EvalListCommand) Synopsis() string { return "List the evaluations" }

// Help implements cli.Command.
func (c *EvalListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad eval list [options]

  List the evaluations of the namespace, a page at a time when -per-page
  is given.

` + generalOptions() + `

List Options:

  -verbose
    Show full IDs.

  -per-page=<n>
    How many evaluations to show per page.

  -page-token=<token>
    Where to start the page: the token the previous page printed.

  -filter=<expression>
    Only show the evaluations the expression selects, e.g.
    'TriggeredBy == "node-update"'.

  -job=<job id>
    Only show the evaluations of this job.

  -status=<status>
    Only show the evaluations with this status (blocked, pending,
    complete, failed, canceled).
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *EvalListCommand) Run(args []string) int {
	var verbose bool
	var perPage int
	var out outputFlags
	q := &api.QueryOptions{Params: map[string]string{}}
	var job, status string
	flags := c.FlagSet("eval list")
	flags.BoolVar(&verbose, "verbose", false, "")
	flags.IntVar(&perPage, "per-page", 0, "")
	flags.StringVar(&q.NextToken, "page-token", "", "")
	flags.StringVar(&q.Filter, "filter", "", "")
	flags.StringVar(&job, "job", "", "")
	flags.StringVar(&status, "status", "", "")
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 0 {
		return c.argsError("This command takes no arguments", "eval list")
	}
	q.PerPage = int32(perPage)
	if job != "" {
		q.Params["filter_job_id"] = job
	}
	if status != "" {
		q.Params["filter_eval_status"] = status
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	evals, meta, err := client.Evaluations().List(q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying evaluations: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, evals)
	}
	if len(evals) == 0 {
		c.Ui.Output("No evals found")
		return exitOK
	}
	c.Ui.Output(formatEvalListFull(evals, view{verbose: verbose}))
	if meta.NextToken != "" {
		c.Ui.Output(fmt.Sprintf("\nResults have been paginated. To get the next page run:\n\nnomad eval list -page-token %s", meta.NextToken))
	}
	return exitOK
}

// formatEvalListFull is upstream's `eval list` table.
func formatEvalListFull(evals []*api.Evaluation, v view) string {
	lines := []string{"ID|Priority|Triggered By|Job ID|Namespace|Node ID|Status|Placement Failures"}
	for _, e := range evals {
		node := "<none>"
		if e.NodeID != "" {
			node = v.id(e.NodeID)
		}
		lines = append(lines, fmt.Sprintf("%s|%d|%s|%s|%s|%s|%s|%v",
			v.id(e.ID), e.Priority, e.TriggeredBy, e.JobID, e.Namespace, node, e.Status, len(e.FailedTGAllocs) > 0))
	}
	return formatList(lines)
}
