package command

import (
	"fmt"
	"strings"
)

// JobValidateCommand is `nomad job validate`.
type JobValidateCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *JobValidateCommand) Synopsis() string { return "Check a job file for errors" }

// Help implements cli.Command.
func (c *JobValidateCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job validate [options] <path>

  Check the job file at <path> ("-" reads standard input) without running
  it. The file is parsed here, so syntax errors and unsupported blocks are
  reported with file:line:column; the job is then checked by the agent,
  which reports every problem with its values at once.

` + generalOptions() + `

` + jobFileOptions() + `
`)
}

// Run implements cli.Command.
func (c *JobValidateCommand) Run(args []string) int {
	flags := c.FlagSet("job validate")
	var files jobFileFlags
	files.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <path>", "job validate")
	}
	job, err := files.read(flags.Arg(0))
	if err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	resp, _, err := client.Jobs().Validate(job, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error validating job: %v", err))
		return exitError
	}
	if resp.Warnings != "" {
		c.Ui.Warn(fmt.Sprintf("Job Warnings:\n%s\n", resp.Warnings))
	}
	if len(resp.ValidationErrors) > 0 || resp.Error != "" {
		problems := resp.ValidationErrors
		if len(problems) == 0 {
			problems = []string{resp.Error}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "Job validation errors:")
		for _, p := range problems {
			fmt.Fprintf(&b, "\n  * %s", p)
		}
		c.Ui.Error(b.String())
		return exitError
	}
	c.Ui.Output("Job validation successful")
	return exitOK
}
