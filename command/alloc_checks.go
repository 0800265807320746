package command

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// AllocChecksCommand is `nomad alloc checks`.
type AllocChecksCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *AllocChecksCommand) Synopsis() string {
	return "Outputs service health check status information"
}

// Help implements cli.Command.
func (c *AllocChecksCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad alloc checks [options] <allocation>

  Show the latest result of each health check of the allocation's services
  (provider "nomad"), as the client running the allocation last saw it.
  The allocation is an ID or a unique prefix of one.

  Status is "success", "failure", "warning" (an HTTP 429, or a script's
  exit code 1) or "pending" (no result yet). Mode "readiness" is a check
  with on_update = "ignore": it does not judge deployments.

` + generalOptions() + `

Checks Options:

  -verbose
    Show full-length allocation IDs when a prefix matches several
    allocations (check IDs are always shown in full).
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *AllocChecksCommand) Run(args []string) int {
	var verbose bool
	var out outputFlags
	flags := c.FlagSet("alloc checks")
	out.register(flags)
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, stub, code := c.allocArg(flags.Args(), "alloc checks", view{verbose: verbose, now: time.Now()})
	if stub == nil {
		return code
	}
	results, err := client.Allocations().Checks(stub.ID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying allocation checks: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, results)
	}
	c.Ui.Output(formatAllocChecks(results))
	return exitOK
}

// formatAllocChecks is upstream's layout: a count, then one block of
// key = value lines per check (by service, then name).
func formatAllocChecks(results api.AllocCheckStatuses) string {
	list := slices.SortedFunc(maps.Values(results), func(a, b api.AllocCheckStatus) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Check, b.Check), cmp.Compare(a.ID, b.ID))
	})
	var b strings.Builder
	fmt.Fprintf(&b, "Status of %d Nomad Service Checks", len(list))
	for _, r := range list {
		task := r.Task
		if task == "" {
			task = "(group)"
		}
		lines := []string{
			"ID|" + r.ID, "Name|" + r.Check, "Group|" + r.Group, "Task|" + task,
			"Service|" + r.Service, "Status|" + r.Status,
		}
		if r.StatusCode > 0 {
			lines = append(lines, "StatusCode|"+strconv.Itoa(r.StatusCode))
		}
		ts := ""
		if r.Timestamp > 0 {
			ts = time.Unix(r.Timestamp, 0).Format(time.RFC3339)
		}
		lines = append(lines, "Mode|"+r.Mode, "Timestamp|"+ts, "Output|"+strings.TrimSpace(r.Output))
		b.WriteString("\n\n" + formatKV(lines))
	}
	return b.String()
}
