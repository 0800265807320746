package command

import (
	"fmt"
	"strconv"
	"strings"
)

// JobScaleCommand is `nomad job scale`.
type JobScaleCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobScaleCommand) Synopsis() string { return "Change the count of a Nomad job group" }

// Help implements cli.Command.
func (c *JobScaleCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job scale [options] <job> [<group>] <count>

  Set the count of a task group, which registers a new version of the job,
  and follow the evaluation that schedules it. <group> may be left out
  when the job has only one group. Allocations on disconnected nodes count
  towards the group: scaling does not replace them.

` + generalOptions() + `

Scale Options:

  -detach
    Print the evaluation ID and exit without following it.

  -verbose
    Show full IDs.
`)
}

// Run implements cli.Command.
func (c *JobScaleCommand) Run(args []string) int {
	var detach, verbose bool
	flags := c.FlagSet("job scale")
	flags.BoolVar(&detach, "detach", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if n := flags.NArg(); n != 2 && n != 3 {
		return c.argsError("This command takes two or three arguments: <job> [<group>] <count>", "job scale")
	}
	rest := flags.Args()
	countStr := rest[len(rest)-1]
	count, err := strconv.Atoi(countStr)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to convert count %q to int", countStr))
		return exitError
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	client, job, ok := c.resolveJob(client, rest[0])
	if !ok {
		return exitError
	}
	jobID := job.ID
	group := ""
	if len(rest) == 3 {
		group = rest[1]
	} else {
		job, _, err := client.Jobs().Info(jobID, nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error retrieving job: %v", err))
			return exitError
		}
		if len(job.TaskGroups) != 1 {
			c.Ui.Error("Group name required")
			return exitError
		}
		group = *job.TaskGroups[0].Name
	}
	msg := "submitted using the Nomad CLI"
	resp, _, err := client.Jobs().Scale(jobID, group, &count, msg, false, nil, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error submitting scaling request: %v", err))
		return exitError
	}
	if resp.Warnings != "" {
		c.Ui.Warn(fmt.Sprintf("Job Warnings:\n%s\n", resp.Warnings))
	}
	if resp.EvalID == "" || detach {
		c.Ui.Output("Job scale successful")
		if resp.EvalID != "" {
			c.Ui.Output("Evaluation ID: " + resp.EvalID)
		}
		return exitOK
	}
	return newEvalMonitor(c.Ui, client, view{verbose: verbose}).monitor(resp.EvalID)
}
