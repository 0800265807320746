package command

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// JobHistoryCommand is `nomad job history`.
type JobHistoryCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobHistoryCommand) Synopsis() string { return "Display all tracked versions of a job" }

// Help implements cli.Command.
func (c *JobHistoryCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job history [options] <job>

  List the versions of a job the servers keep (the newest six, and the
  newest stable one), newest first. <job> is a job ID or a unique prefix
  of one.

` + generalOptions() + `

History Options:

  -p
    Show the change each version made to the one before it.

  -full
    Show each version in full, as JSON.

  -json
    Print the versions as one JSON list.

  -version <N>
    Show only version N.
`)
}

// Run implements cli.Command.
func (c *JobHistoryCommand) Run(args []string) int {
	var diff, full, asJSON bool
	var versionStr, tmpl string
	flags := c.FlagSet("job history")
	flags.StringVar(&tmpl, "t", "", "")
	flags.BoolVar(&diff, "p", false, "")
	flags.BoolVar(&full, "full", false, "")
	flags.BoolVar(&asJSON, "json", false, "")
	flags.StringVar(&versionStr, "version", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, jobID, code := c.jobArg(flags.Args(), "job history")
	if jobID == "" {
		return code
	}
	versions, diffs, _, err := client.Jobs().Versions(jobID, diff, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving job versions: %v", err))
		return exitError
	}
	diffOf := func(i int) *api.JobDiff {
		if diff && i < len(diffs) {
			return diffs[i]
		}
		return nil
	}
	if asJSON || tmpl != "" {
		return c.writeFormatted(outputFlags{json: asJSON, tmpl: tmpl}, versions)
	}
	if versionStr != "" {
		want, err := strconv.ParseUint(versionStr, 10, 64)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error parsing -version %q: must be a non-negative integer", versionStr))
			return exitError
		}
		for i, v := range versions {
			if v.Version != nil && *v.Version == want {
				return c.show(v, diffOf(i), full)
			}
		}
		c.Ui.Error(fmt.Sprintf("Job %q has no version %d", jobID, want))
		return exitError
	}
	for i, v := range versions {
		if i > 0 {
			c.Ui.Output("")
		}
		if code := c.show(v, diffOf(i), full); code != exitOK {
			return code
		}
	}
	return exitOK
}

func (c *JobHistoryCommand) show(v *api.Job, d *api.JobDiff, full bool) int {
	if full {
		return c.printJSON(v)
	}
	c.Ui.Output(formatJobVersion(v, d))
	return exitOK
}

func (c *JobHistoryCommand) printJSON(v any) int {
	out, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error encoding versions: %v", err))
		return exitError
	}
	c.Ui.Output(string(out))
	return exitOK
}

// formatJobVersion is one version as upstream's key = value block.
func formatJobVersion(v *api.Job, d *api.JobDiff) string {
	var version uint64
	var stable bool
	var submit int64
	if v.Version != nil {
		version = *v.Version
	}
	if v.Stable != nil {
		stable = *v.Stable
	}
	if v.SubmitTime != nil {
		submit = *v.SubmitTime
	}
	lines := []string{
		fmt.Sprintf("Version|%d", version),
		fmt.Sprintf("Stable|%t", stable),
		fmt.Sprintf("Submit Date|%s", formatTime(time.Unix(0, submit))),
	}
	out := formatKV(lines)
	if d != nil {
		// The diff spans lines, so it follows its key rather than sit in
		// the key = value column.
		out += fmt.Sprintf("\n%-11s =\n%s", "Diff", formatJobDiff(d, false))
	}
	return out
}
