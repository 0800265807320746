package command

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// AllocRestartCommand is `nomad alloc restart`.
type AllocRestartCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *AllocRestartCommand) Synopsis() string { return "Restart a running allocation" }

// Help implements cli.Command.
func (c *AllocRestartCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad alloc restart [options] <allocation> [task]

  Restart the tasks of a running allocation in place, on the node that runs
  it: each is stopped with its kill signal and started again at once. The
  restart does not count against the task's restart policy. Without [task]
  every running task restarts.

` + generalOptions() + `

Restart Options:

  -task <name>
    Restart only this task, as the [task] argument does.

  -all-tasks
    Restart every running task (the default without a task name); tasks
    that are dead stay dead.
`)
}

// Run implements cli.Command.
func (c *AllocRestartCommand) Run(args []string) int {
	var task string
	var all bool
	flags := c.FlagSet("alloc restart")
	flags.StringVar(&task, "task", "", "")
	flags.BoolVar(&all, "all-tasks", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if n := flags.NArg(); n < 1 || n > 2 {
		return c.argsError("This command takes one or two arguments: <allocation> [task]", "alloc restart")
	}
	if flags.NArg() == 2 {
		task = flags.Arg(1)
	}
	if all && task != "" {
		return c.argsError("-all-tasks and a task name exclude each other", "alloc restart")
	}
	target, ok := c.targetAlloc(flags.Arg(0))
	if !ok {
		return exitError
	}
	if task != "" {
		if _, err := target.pickTask(task); err != nil {
			c.Ui.Error(err.Error())
			return exitError
		}
	}
	body := map[string]any{"TaskName": task, "AllTasks": task == ""}
	resp, err := target.do(context.Background(), http.MethodPut, target.path("/v1/client/allocation/%s/restart", nil), body)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to restart allocation: %v", err))
		return exitError
	}
	resp.Body.Close()
	return exitOK
}
