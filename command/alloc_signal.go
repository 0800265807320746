package command

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// AllocSignalCommand is `nomad alloc signal`.
type AllocSignalCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *AllocSignalCommand) Synopsis() string { return "Signal a running allocation" }

// Help implements cli.Command.
func (c *AllocSignalCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad alloc signal [options] <allocation> [task]

  Send a signal to the tasks of a running allocation, on the node that
  runs it. Without [task] every running task gets it. Drivers that cannot
  signal a task (mock_driver) refuse.

` + generalOptions() + `

Signal Options:

  -s <signal>
    The signal to send, such as SIGHUP or HUP. Defaults to SIGKILL.

  -task <name>
    Signal only this task, as the [task] argument does.
`)
}

// Run implements cli.Command.
func (c *AllocSignalCommand) Run(args []string) int {
	var sig, task string
	flags := c.FlagSet("alloc signal")
	flags.StringVar(&sig, "s", "", "")
	flags.StringVar(&task, "task", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if n := flags.NArg(); n < 1 || n > 2 {
		return c.argsError("This command takes one or two arguments: <allocation> [task]", "alloc signal")
	}
	if flags.NArg() == 2 {
		task = flags.Arg(1)
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
	body := map[string]string{"Task": task, "Signal": strings.ToUpper(sig)}
	resp, err := target.do(context.Background(), http.MethodPut, target.path("/v1/client/allocation/%s/signal", nil), body)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error signalling allocation: %v", err))
		return exitError
	}
	resp.Body.Close()
	return exitOK
}
