package command

import (
	"fmt"
	"strings"
)

// JobDeploymentsCommand is `nomad job deployments`.
type JobDeploymentsCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobDeploymentsCommand) Synopsis() string { return "List deployments for a job" }

// Help implements cli.Command.
func (c *JobDeploymentsCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job deployments [options] <job>

  List the deployments of a job, newest first: <job> is its ID or a unique
  prefix of it. With -latest, show only the newest deployment, as
  'nomad deployment status' does.

` + generalOptions() + `

Deployments Options:

  -latest
    Show only the job's newest deployment.

  -verbose
    Show full IDs.
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *JobDeploymentsCommand) Run(args []string) int {
	var latest, verbose bool
	var out outputFlags
	flags := c.FlagSet("job deployments")
	flags.BoolVar(&latest, "latest", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, jobID, code := c.jobArg(flags.Args(), "job deployments")
	if jobID == "" {
		return code
	}
	v := view{verbose: verbose}
	if latest {
		d, _, err := client.Jobs().LatestDeployment(jobID, nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error retrieving deployments: %v", err))
			return exitError
		}
		if out.set() {
			return c.writeFormatted(out, d)
		}
		if d == nil {
			c.Ui.Output(fmt.Sprintf("No deployment found for job %q", jobID))
			return exitOK
		}
		c.Ui.Output(formatDeployment(d, v))
		return exitOK
	}
	deps, _, err := client.Jobs().Deployments(jobID, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving deployments: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, deps)
	}
	if len(deps) == 0 {
		c.Ui.Output(fmt.Sprintf("No deployments found for job %q", jobID))
		return exitOK
	}
	c.Ui.Output(formatDeploymentList(deps, v))
	return exitOK
}
