package command

import (
	"fmt"
	"strings"
	"time"
)

// JobAllocsCommand is `nomad job allocs`.
type JobAllocsCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobAllocsCommand) Synopsis() string { return "List allocations for a job" }

// Help implements cli.Command.
func (c *JobAllocsCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job allocs [options] <job>

  List the allocations of a job: <job> is its ID or a unique prefix of it.
  Allocations on a disconnected node show the status unknown.

` + generalOptions() + `

Allocs Options:

  -all
    Also list the allocations of the job's earlier versions.

  -verbose
    Show full IDs, the eval and node name columns, and absolute times.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *JobAllocsCommand) Run(args []string) int {
	var all, verbose bool
	var out outputFlags
	flags := c.FlagSet("job allocs")
	flags.BoolVar(&all, "all", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, jobID, code := c.jobArg(flags.Args(), "job allocs")
	if jobID == "" {
		return code
	}
	allocs, _, err := client.Jobs().Allocations(jobID, all, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving allocations: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, allocs)
	}
	rows := make([]allocRow, 0, len(allocs))
	for _, a := range allocs {
		rows = append(rows, rowFromStub(a))
	}
	c.Ui.Output(formatAllocRows(rows, view{verbose: verbose, now: time.Now()}))
	return exitOK
}
