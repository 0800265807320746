package command

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// JobInspectCommand is `nomad job inspect`.
type JobInspectCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobInspectCommand) Synopsis() string { return "Inspect a submitted job" }

// Help implements cli.Command.
func (c *JobInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job inspect [options] <job>

  Print a registered job as JSON, {"Job": {...}}, the body 'PUT /v1/jobs'
  accepts: the output can be edited and submitted again. <job> is a job
  ID or a unique prefix of one.

` + generalOptions() + `

Inspect Options:

  -version <N>
    Print version N of the job instead of the current one.

  -json
    Print JSON (the default; accepted for upstream's scripts).
`)
}

// Run implements cli.Command.
func (c *JobInspectCommand) Run(args []string) int {
	var versionStr string
	var asJSON bool
	var tmpl string
	flags := c.FlagSet("job inspect")
	flags.StringVar(&tmpl, "t", "", "")
	flags.StringVar(&versionStr, "version", "", "")
	flags.BoolVar(&asJSON, "json", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, jobID, code := c.jobArg(flags.Args(), "job inspect")
	if jobID == "" {
		return code
	}
	job, err := c.inspected(client, jobID, versionStr)
	if err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	if tmpl != "" {
		return c.writeFormatted(outputFlags{json: asJSON, tmpl: tmpl}, job)
	}
	out, err := json.MarshalIndent(struct{ Job *api.Job }{job}, "", "    ")
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error encoding job: %v", err))
		return exitError
	}
	c.Ui.Output(string(out))
	return exitOK
}

// inspected returns the current job, or the stored version versionStr.
func (c *JobInspectCommand) inspected(client *api.Client, jobID, versionStr string) (*api.Job, error) {
	if versionStr == "" {
		job, _, err := client.Jobs().Info(jobID, nil)
		if err != nil {
			return nil, userErrorf("Error inspecting job: %w", err)
		}
		return job, nil
	}
	want, err := strconv.ParseUint(versionStr, 10, 64)
	if err != nil {
		return nil, userErrorf("Error parsing -version %q: must be a non-negative integer", versionStr)
	}
	versions, _, _, err := client.Jobs().Versions(jobID, false, nil)
	if err != nil {
		return nil, userErrorf("Error retrieving job versions: %w", err)
	}
	for _, v := range versions {
		if v.Version != nil && *v.Version == want {
			return v, nil
		}
	}
	return nil, userErrorf("Job %q has no version %d", jobID, want)
}
